package artifactscmd

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
)

// execCmd runs cmd with args the way the root command would (errors
// silenced, usage mistakes made *UsageError) and returns the error.
func execCmd(cmd *cobra.Command, args ...string) error {
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	c, err := cmd.ExecuteContextC(context.Background())
	return cmdutil.AsUsageError(err, c)
}

func flagFactory() *cmdutil.Factory {
	ios, _, _, _ := iostreams.Test()
	return cmdutil.NewFactory(ios)
}

func TestListFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want *ListOptions // nil: a usage error
	}{
		{"every scope", nil, &ListOptions{Limit: 100}},
		{"app", []string{"--app", "a"}, &ListOptions{Scope: artifacts.AppScope("a"), Limit: 100}},
		{"session paged", []string{"--app", "a", "--user", "用户", "--session", "s/ü 1", "--limit", "7", "--cursor", "n/0001", "--all"},
			&ListOptions{Scope: artifacts.SessionScope("a", "用户", "s/ü 1"), Limit: 7, LimitSet: true, Cursor: "n/0001", All: true}},
		{"every scope --all", []string{"--all"}, &ListOptions{Limit: 100, All: true}},
		{"user without app", []string{"--user", "u"}, nil},
		{"session without user", []string{"--app", "a", "--session", "s"}, nil},
		{"empty app", []string{"--app", ""}, nil},
		{"NUL in id", []string{"--app", "a\x00b"}, nil},
		{"positional", []string{"extra"}, nil},
		{"limit 0", []string{"--app", "a", "--limit", "0"}, nil},
		{"limit not a number", []string{"--app", "a", "--limit", "x"}, nil},
		{"bad cursor", []string{"--app", "a", "--cursor", "a//b"}, nil},
		{"cursor without scope", []string{"--cursor", "n"}, nil},
		{"limit without scope", []string{"--limit", "5"}, nil},
		{"unknown flag", []string{"--verbose-ish"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *ListOptions
			err := execCmd(NewCmdList(flagFactory(), func(_ context.Context, o *ListOptions) error { got = o; return nil }), tc.args...)
			if tc.want == nil {
				if cmdutil.ExitCode(err) != cmdutil.ExitUsage || got != nil {
					t.Fatalf("err %v (exit %d), ran %v; want a usage error", err, cmdutil.ExitCode(err), got != nil)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Scope != tc.want.Scope || got.Limit != tc.want.Limit || got.LimitSet != tc.want.LimitSet || got.Cursor != tc.want.Cursor || got.All != tc.want.All {
				t.Errorf("got scope %v limit %d (set %v) cursor %q all %v", got.Scope, got.Limit, got.LimitSet, got.Cursor, got.All)
			}
			if got.IO == nil || got.OpenStore == nil || got.Config == nil {
				t.Error("dependencies not wired")
			}
		})
	}
}

// TestPageLimit: --all without --limit reads the store's largest pages;
// a --limit given is the page size, with --all too.
func TestPageLimit(t *testing.T) {
	ms, err := memstore.New(memstore.Options{MaxPageLimit: 5})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(ms)
	for _, tc := range []struct {
		name     string
		limit    int
		set, all bool
		want     int
	}{
		{"one page", 100, false, false, 100},
		{"one page, --limit", 3, true, false, 3},
		{"--all", 100, false, true, 5},
		{"--all --limit", 3, true, true, 3},
	} {
		if got := pageLimit(st, tc.limit, tc.set, tc.all); got != tc.want {
			t.Errorf("%s: page limit %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestVersionsFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want *VersionsOptions
		code string
	}{
		{"minimal", []string{"--app", "a", "--name", "x"}, &VersionsOptions{Scope: artifacts.AppScope("a"), Name: "x", Limit: 100}, ""},
		{"paged", []string{"--app", "a", "--user", "u", "--name", "d/é f", "--limit", "7", "--cursor", "14", "--all"},
			&VersionsOptions{Scope: artifacts.UserScope("a", "u"), Name: "d/é f", Limit: 7, LimitSet: true, Cursor: 14, All: true}, ""},
		{"all", []string{"--app", "a", "--name", "x", "--all"}, &VersionsOptions{Scope: artifacts.AppScope("a"), Name: "x", Limit: 100, All: true}, ""},
		{"no scope", []string{"--name", "x"}, nil, "invalid_scope"},
		{"no name", []string{"--app", "a"}, nil, "usage_error"},
		{"empty name", []string{"--app", "a", "--name", ""}, nil, "invalid_name"},
		{"dot segment", []string{"--app", "a", "--name", "a/../b"}, nil, "invalid_name"},
		{"negative cursor", []string{"--app", "a", "--name", "x", "--cursor", "-1"}, nil, "invalid_argument"},
		{"cursor not a number", []string{"--app", "a", "--name", "x", "--cursor", "n/1"}, nil, "usage_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *VersionsOptions
			err := execCmd(NewCmdVersions(flagFactory(), func(_ context.Context, o *VersionsOptions) error { got = o; return nil }), tc.args...)
			if tc.want == nil {
				if cmdutil.ExitCode(err) != cmdutil.ExitUsage || cmdutil.ErrorCode(err) != tc.code || got != nil {
					t.Fatalf("err %v (code %s), want exit 2 with %s", err, cmdutil.ErrorCode(err), tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Scope != tc.want.Scope || got.Name != tc.want.Name || got.Limit != tc.want.Limit || got.LimitSet != tc.want.LimitSet || got.Cursor != tc.want.Cursor || got.All != tc.want.All {
				t.Errorf("got %+v", got)
			}
		})
	}
}

func TestDeleteFlags(t *testing.T) {
	base := []string{"--app", "a", "--user", "u", "--session", "s", "--name", "n"}
	scope := artifacts.SessionScope("a", "u", "s")
	for _, tc := range []struct {
		name string
		args []string
		want *DeleteOptions
	}{
		{"version", []string{"--version", "3"}, &DeleteOptions{Selector: artifacts.Selector{Kind: artifacts.SelectVersion, Version: 3}}},
		{"latest", []string{"--latest"}, &DeleteOptions{Selector: artifacts.Selector{Kind: artifacts.SelectLatest}}},
		{"all", []string{"--all-versions"}, &DeleteOptions{Selector: artifacts.Selector{Kind: artifacts.SelectAll}}},
		{"confirm id", []string{"--latest", "--confirm", "abc"}, &DeleteOptions{Selector: artifacts.Selector{Kind: artifacts.SelectLatest}, Confirm: "abc", ConfirmSet: true}},
		{"confirm empty", []string{"--latest", "--confirm", ""}, &DeleteOptions{Selector: artifacts.Selector{Kind: artifacts.SelectLatest}, ConfirmSet: true}},
		{"confirm stdin", []string{"--all-versions", "--confirm-file", "-"}, &DeleteOptions{Selector: artifacts.Selector{Kind: artifacts.SelectAll}, ConfirmFile: "-"}},
		{"no selector", nil, nil},
		{"two selectors", []string{"--latest", "--all-versions"}, nil},
		{"version and latest", []string{"--version", "1", "--latest"}, nil},
		{"version -1", []string{"--version", "-1"}, nil},
		{"version -2", []string{"--version", "-2"}, nil},
		{"version not a number", []string{"--version", "v2"}, nil},
		{"latest=false", []string{"--latest=false"}, nil},
		{"both confirmations", []string{"--latest", "--confirm", "x", "--confirm-file", "f"}, nil},
		{"empty confirm file", []string{"--latest", "--confirm-file", ""}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *DeleteOptions
			err := execCmd(NewCmdDelete(flagFactory(), func(_ context.Context, o *DeleteOptions) error { got = o; return nil }), append(base, tc.args...)...)
			if tc.want == nil {
				if cmdutil.ExitCode(err) != cmdutil.ExitUsage || got != nil {
					t.Fatalf("err %v (exit %d); want a usage error", err, cmdutil.ExitCode(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Scope != scope || got.Name != "n" || got.Selector != tc.want.Selector || got.Confirm != tc.want.Confirm ||
				got.ConfirmSet != tc.want.ConfirmSet || got.ConfirmFile != tc.want.ConfirmFile {
				t.Errorf("got %+v", got)
			}
			if got.StoreURI == nil {
				t.Error("StoreURI not wired")
			}
		})
	}
	// Scope and name are checked before anything else.
	for _, args := range [][]string{{"--name", "n", "--latest"}, {"--app", "a", "--latest"}, {"--app", "a", "--name", "/x", "--latest"}} {
		err := execCmd(NewCmdDelete(flagFactory(), func(context.Context, *DeleteOptions) error { t.Fatal("ran"); return nil }), args...)
		if cmdutil.ExitCode(err) != cmdutil.ExitUsage {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// shellWords splits a command line the way a POSIX shell would for the
// simple quoting the examples use; $(...) becomes a plan_id.
func shellWords(t *testing.T, line string) []string {
	line = regexp.MustCompile(`"\$\([^)]*\)"`).ReplaceAllString(line, strings.Repeat("e", 64))
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// TestHelpAndExamples renders every command's help (EXIT STATUS
// included) and parses every example line with the real flag set.
func TestHelpAndExamples(t *testing.T) {
	makers := []func() *cobra.Command{
		func() *cobra.Command {
			return NewCmdList(flagFactory(), func(context.Context, *ListOptions) error { return nil })
		},
		func() *cobra.Command {
			return NewCmdVersions(flagFactory(), func(context.Context, *VersionsOptions) error { return nil })
		},
		func() *cobra.Command {
			return NewCmdDelete(flagFactory(), func(context.Context, *DeleteOptions) error { return nil })
		},
	}
	for _, mk := range makers {
		c := mk()
		t.Run(c.Name(), func(t *testing.T) {
			if c.Short == "" || c.Long == "" || c.Example == "" {
				t.Error("missing Short, Long or Example")
			}
			if c.Annotations[cmdutil.AnnotationExitStatus] == "" {
				t.Error("no EXIT STATUS note")
			}
			var help bytes.Buffer
			c.SetOut(&help)
			cmdutil.SetHelp(c)
			if err := c.Help(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(help.String(), "EXIT STATUS") || !strings.Contains(help.String(), "--app") {
				t.Errorf("help:\n%s", help.String())
			}
			ex := strings.ReplaceAll(c.Example, "\\\n", " ")
			n := 0
			for line := range strings.Lines(ex) {
				line = strings.TrimSpace(line)
				if !strings.HasPrefix(line, "agentstore artifacts "+c.Name()) {
					continue
				}
				line, _, _ = strings.Cut(line, " > ")
				words := shellWords(t, line)[3:]
				var args []string
				for i := 0; i < len(words); i++ {
					switch words[i] {
					case "--store", "-o": // global flags, on the root command
						i++
						continue
					}
					args = append(args, words[i])
				}
				if err := execCmd(mk(), args...); err != nil {
					t.Errorf("example %q: %v", line, err)
				}
				n++
			}
			if n == 0 {
				t.Error("no runnable example")
			}
		})
	}
}
