package cmdutil

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

func TestScopeFromFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		required bool
		kinds    []artifacts.Kind
		want     artifacts.Scope
		wantErr  string
	}{
		{"none optional", nil, false, nil, artifacts.Scope{}, ""},
		{"none required", nil, true, nil, artifacts.Scope{}, "a scope is required"},
		{"none required session", nil, true, []artifacts.Kind{artifacts.KindSession}, artifacts.Scope{}, "a session scope (--app --user --session)"},
		{"app", []string{"--app", "a"}, false, nil, artifacts.AppScope("a"), ""},
		{"user", []string{"--app", "a", "--user", "u"}, true, nil, artifacts.UserScope("a", "u"), ""},
		{"session", []string{"--app", "a", "--user", "u", "--session", "s"}, true, nil, artifacts.SessionScope("a", "u", "s"), ""},
		{"odd ids", []string{"--app", "a/b c", "--user", "ü ser", "--session", "../s"}, true, nil, artifacts.SessionScope("a/b c", "ü ser", "../s"), ""},
		{"user without app", []string{"--user", "u"}, false, nil, artifacts.Scope{}, "--user needs --app"},
		{"session without user", []string{"--app", "a", "--session", "s"}, false, nil, artifacts.Scope{}, "--session needs --user"},
		{"session alone", []string{"--session", "s"}, false, nil, artifacts.Scope{}, "--session needs --user"},
		{"user and session without app", []string{"--user", "u", "--session", "s"}, false, nil, artifacts.Scope{}, "--user needs --app"},
		{"empty app given", []string{"--app", ""}, false, nil, artifacts.Scope{}, "app id is empty"},
		{"empty user given", []string{"--app", "a", "--user", ""}, false, nil, artifacts.Scope{}, "user id is empty"},
		{"too long", []string{"--app", strings.Repeat("x", 257)}, false, nil, artifacts.Scope{}, "app id"},
		{"kind not accepted", []string{"--app", "a"}, true, []artifacts.Kind{artifacts.KindSession}, artifacts.Scope{}, "takes a session scope (--app --user --session), not an app scope"},
		{"kind accepted", []string{"--app", "a", "--user", "u"}, true, []artifacts.Kind{artifacts.KindApp, artifacts.KindUser}, artifacts.UserScope("a", "u"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts ScopeFlags
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
			AddScopeFlags(cmd, &opts)
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := opts.Scope(tt.required, tt.kinds...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if ExitCode(err) != ExitUsage {
					t.Errorf("exit %d, want 2", ExitCode(err))
				}
				if ErrorCode(err) != string(artifacts.CodeInvalidScope) {
					t.Errorf("code %q, want invalid_scope", ErrorCode(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("scope = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestScopeFromFlagsWithoutCommand(t *testing.T) {
	s, err := ScopeFromFlags(&ScopeFlags{App: "a", User: "u"}, true)
	if err != nil || s != artifacts.UserScope("a", "u") {
		t.Errorf("got %+v, %v", s, err)
	}
	s, err = ScopeFromFlags(&ScopeFlags{}, false)
	if err != nil || s.Kind != "" {
		t.Errorf("got %+v, %v", s, err)
	}
}
