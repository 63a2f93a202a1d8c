package artifactscmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/retention"
)

func TestPruneFlags(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		name   string
		args   []string
		policy retention.Policy
		filter artifacts.Scope
		err    string // a usage error saying this, "" for none
	}{
		{"older-than", []string{"--older-than", "30d"}, retention.Policy{OlderThan: 30 * day}, artifacts.Scope{}, ""},
		{"everything", []string{"--keep-last", "3", "--keep-within", "1w", "--no-keep-latest", "--older-than", "1d12h", "--mime", "image/*", "--name", "logs/*", "--app", "a", "--user", "u"},
			retention.Policy{KeepLast: 3, KeepWithin: 7 * day, NoKeepLatest: true, OlderThan: 36 * time.Hour, MIME: "image/*", Name: "logs/*"}, artifacts.UserScope("a", "u"), ""},
		{"keep-latest=false", []string{"--keep-last", "1", "--keep-latest=false"}, retention.Policy{KeepLast: 1, NoKeepLatest: true}, artifacts.Scope{}, ""},
		{"confirm-policy bounded", []string{"--keep-last", "1", "--confirm-policy", strings.Repeat("a", 64), "--max-delete", "5", "--max-delete-bytes", "1MiB"}, retention.Policy{KeepLast: 1}, artifacts.Scope{}, ""},
		{"no policy", nil, retention.Policy{}, artifacts.Scope{}, "says nothing about which versions to prune"},
		{"only mime", []string{"--mime", "a/*"}, retention.Policy{}, artifacts.Scope{}, "says nothing"},
		{"keep-last 0", []string{"--keep-last", "0"}, retention.Policy{}, artifacts.Scope{}, "keep at least 1"},
		{"bad duration", []string{"--older-than", "3x"}, retention.Policy{}, artifacts.Scope{}, "is not a duration"},
		{"contradiction", []string{"--keep-last", "1", "--keep-latest", "--no-keep-latest"}, retention.Policy{}, artifacts.Scope{}, "contradict"},
		{"bad glob", []string{"--keep-last", "1", "--name", "a["}, retention.Policy{}, artifacts.Scope{}, "malformed"},
		{"two confirmations", []string{"--keep-last", "1", "--confirm", "x", "--confirm-file", "f"}, retention.Policy{}, artifacts.Scope{}, "give one of"},
		{"unbounded policy", []string{"--keep-last", "1", "--confirm-policy", strings.Repeat("a", 64), "--max-delete", "5"}, retention.Policy{}, artifacts.Scope{}, "must be bounded"},
		{"zero bound", []string{"--keep-last", "1", "--confirm-policy", strings.Repeat("a", 64), "--max-delete", "0", "--max-delete-bytes", "1"}, retention.Policy{}, artifacts.Scope{}, "must be bounded"},
		{"bad policy id", []string{"--keep-last", "1", "--confirm-policy", "abc", "--max-delete", "5", "--max-delete-bytes", "1"}, retention.Policy{}, artifacts.Scope{}, "not a policy_id"},
		{"bad size", []string{"--keep-last", "1", "--max-delete-bytes", "lots"}, retention.Policy{}, artifacts.Scope{}, "--max-delete-bytes"},
		{"negative bound", []string{"--keep-last", "1", "--max-delete", "-1"}, retention.Policy{}, artifacts.Scope{}, "negative"},
		{"session without user", []string{"--keep-last", "1", "--app", "a", "--session", "s"}, retention.Policy{}, artifacts.Scope{}, "--session needs --user"},
		{"missing metrics dir", []string{"--keep-last", "1", "--metrics-file", "/nonexistent/dir/m.prom"}, retention.Policy{}, artifacts.Scope{}, "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *PruneOptions
			f := flagFactory()
			f.Config = func() (*cmdutil.Config, error) { return &cmdutil.Config{}, nil }
			err := execCmd(NewCmdPrune(f, func(_ context.Context, o *PruneOptions) error { got = o; return nil }), tc.args...)
			if tc.err != "" {
				if !cmdutil.IsUsage(err) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want a usage error saying %q", err, tc.err)
				}
				if got != nil {
					t.Fatal("the run function ran")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Policy != tc.policy || got.Filter != tc.filter {
				t.Fatalf("policy %+v filter %+v, want %+v %+v", got.Policy, got.Filter, tc.policy, tc.filter)
			}
		})
	}
}
