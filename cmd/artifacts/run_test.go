package artifactscmd

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/deletion"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the actual output")

// fixedNow is the clock of the run tests: two days after the fixture was
// written.
var fixedNow = time.Date(2026, 12, 1, 21, 37, 0, 0, time.UTC)

// fixedStoreURI is the store every golden plan names, whatever temporary
// directory the fixture was copied to.
var fixedStoreURI = cmdutil.StoreURI{Scheme: cmdutil.SchemeFile, Root: "/srv/fixture/store"}

// env is one run of a command over fake streams.
type env struct {
	ios         *iostreams.IOStreams
	out, errOut *bytes.Buffer
	f           *cmdutil.Factory
	store       string
}

// shared is a copy of the fixture made once for the tests that only read
// it; TestMain removes it.
var shared struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	if benchStore.dir != "" && !benchStore.keep {
		os.RemoveAll(benchStore.dir)
	}
	os.Exit(code)
}

// readOnlyEnv is newEnv over the shared copy of the fixture; the test must
// not change the store.
func readOnlyEnv(t testing.TB, output string, tty bool) *env {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "artifactscmd-fixture-")
		if shared.err == nil {
			_, shared.err = testfixtures.CopyFSStore(filepath.Join(shared.dir, "store"))
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return newEnvAt(filepath.Join(shared.dir, "store"), output, tty)
}

// newEnv copies the fixture and returns fake streams (stdout a terminal
// when tty) and a Factory over them with output format output.
func newEnv(t testing.TB, output string, tty bool) *env {
	t.Helper()
	store, err := testfixtures.CopyFSStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return newEnvAt(store, output, tty)
}

func newEnvAt(store, output string, tty bool) *env {
	ios, _, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(tty)
	f := cmdutil.NewFactory(ios)
	f.SetConfig(&cmdutil.Config{Store: store, Output: output, LogFormat: cmdutil.LogText})
	f.Now = func() time.Time { return fixedNow }
	f.OpenStore = func(context.Context) (*artifacts.Store, error) {
		d, err := fsstore.Open(store, fsstore.Options{})
		if err != nil {
			return nil, err
		}
		return artifacts.NewStore(d), nil
	}
	return &env{ios: ios, out: out, errOut: errOut, f: f, store: store}
}

// list runs list with the output naming fixedStoreURI.
func (e *env) list(args ...string) error {
	return execCmd(NewCmdList(e.f, func(ctx context.Context, o *ListOptions) error {
		o.StoreURI = func() (cmdutil.StoreURI, error) { return fixedStoreURI, nil }
		return runList(ctx, o)
	}), args...)
}

// versions runs versions with the output naming fixedStoreURI.
func (e *env) versions(args ...string) error {
	return execCmd(NewCmdVersions(e.f, func(ctx context.Context, o *VersionsOptions) error {
		o.StoreURI = func() (cmdutil.StoreURI, error) { return fixedStoreURI, nil }
		return runVersions(ctx, o)
	}), args...)
}

// delete runs delete with the plan naming fixedStoreURI.
func (e *env) delete(args ...string) error {
	return execCmd(NewCmdDelete(e.f, func(ctx context.Context, o *DeleteOptions) error {
		o.StoreURI = func() (cmdutil.StoreURI, error) { return fixedStoreURI, nil }
		return runDelete(ctx, o)
	}), args...)
}

func (e *env) reset() { e.out.Reset(); e.errOut.Reset() }

// golden compares got with testdata/NAME.golden, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

var (
	session7   = []string{"--app", "demo-a", "--user", "user-42", "--session", "session-7"}
	unicodeSes = []string{"--app", "demo-a", "--user", "用户-a", "--session", "sessão/ü 1"}
	bulk       = []string{"--app", "demo-a", "--user", "bulk", "--session", "s-a"}
)

func args(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestGoldenTables checks the plain tables (colour off, stdout not a
// terminal) and the JSON of each command against golden files, with an
// empty stderr where nothing is wrong.
func TestGoldenTables(t *testing.T) {
	for _, tc := range []struct {
		golden     string
		output     string
		run        func(*env) error
		wantErr    string // error code, "" for success
		wantStderr bool
	}{
		{"list_scopes", "table", func(e *env) error { return e.list() }, "", true},
		{"list_session7", "table", func(e *env) error { return e.list(session7...) }, "", false},
		{"list_unicode", "table", func(e *env) error { return e.list(unicodeSes...) }, "", false},
		{"list_bulk_page", "table", func(e *env) error { return e.list(args(bulk, []string{"--limit", "7", "--cursor", "n/0100"})...) }, "", true},
		{"list_session7_json", "json", func(e *env) error { return e.list(session7...) }, "", false},
		{"versions_summary", "table", func(e *env) error { return e.versions(args(session7, []string{"--name", "reports/summary.txt"})...) }, "", false},
		{"versions_summary_json", "json", func(e *env) error {
			return e.versions(args(session7, []string{"--name", "reports/summary.txt"})...)
		}, "", false},
		{"delete_plan", "table", func(e *env) error {
			return e.delete(args(session7, []string{"--name", "reports/summary.txt", "--all-versions"})...)
		}, cmdutil.CodeConfirmationRequired, false},
		{"delete_plan_json", "json", func(e *env) error {
			return e.delete(args(unicodeSes, []string{"--name", "données/résumé.md", "--latest"})...)
		}, cmdutil.CodeConfirmationRequired, false},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			e := readOnlyEnv(t, tc.output, false)
			err := tc.run(e)
			if cmdutil.ErrorCode(err) != tc.wantErr {
				t.Fatalf("err %v, want code %q", err, tc.wantErr)
			}
			if (e.errOut.Len() > 0) != tc.wantStderr {
				t.Errorf("stderr: %q", e.errOut)
			}
			if strings.Contains(e.out.String(), "\x1b") {
				t.Error("ANSI escape in plain output")
			}
			golden(t, tc.golden, e.out.String())
		})
	}
}

// TestTerminalTables checks the terminal form: relative times, and long
// cells cut in the middle so the table fits the width, with colour off
// (golden) and on (ANSI escapes present), and NO_COLOR or --no-color
// turning it off.
func TestTerminalTables(t *testing.T) {
	e := newEnv(t, "table", true)
	e.ios.SetColorDisabled(true)
	e.ios.SetTerminalWidth(72)
	if err := e.versions(args(session7, []string{"--name", "reports/summary.txt"})...); err != nil {
		t.Fatal(err)
	}
	golden(t, "versions_summary_tty72", e.out.String())
	for _, line := range strings.Split(strings.TrimSuffix(e.out.String(), "\n"), "\n") {
		if w := len([]rune(line)); w > 72 {
			t.Errorf("line of %d columns: %q", w, line)
		}
	}
	if !strings.Contains(e.out.String(), "…") || !strings.Contains(e.out.String(), "1 day ago") {
		t.Errorf("no middle truncation or relative time:\n%s", e.out)
	}

	e = newEnvAt(e.store, "table", true)
	e.ios.SetColorDisabled(true)
	e.ios.SetTerminalWidth(40)
	long := strings.Repeat("x", 100) + "/tail-of-a-long-name.txt"
	st, _ := fsstore.Open(e.store, fsstore.Options{})
	if _, err := st.Put(context.Background(), artifacts.AppScope("long"), long, strings.NewReader("z"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.list("--app", "long"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.out.String(), "…") || !strings.Contains(e.out.String(), "txt") || strings.Contains(e.out.String(), long) {
		t.Errorf("long name not cut in the middle:\n%s", e.out)
	}

	for _, tc := range []struct {
		name      string
		set       func(*iostreams.IOStreams)
		wantColor bool
	}{
		{"colour on", func(*iostreams.IOStreams) {}, true},
		{"NO_COLOR", func(s *iostreams.IOStreams) { s.SetNoColorEnv(true) }, false},
		{"--no-color", func(s *iostreams.IOStreams) { s.SetColorDisabled(true) }, false},
		{"not a terminal", func(s *iostreams.IOStreams) { s.SetStdoutTTY(false) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, run := range []func(*env) error{
				func(e *env) error { return e.list() },
				func(e *env) error { return e.list(session7...) },
				func(e *env) error { return e.versions(args(session7, []string{"--name", "workspace.zip"})...) },
				func(e *env) error {
					return e.delete(args(session7, []string{"--name", "workspace.zip", "--latest"})...)
				},
			} {
				e := newEnvAt(e.store, "table", true)
				tc.set(e.ios)
				_ = run(e)
				if got := strings.Contains(e.out.String(), "\x1b["); got != tc.wantColor {
					t.Errorf("ANSI escapes %v, want %v:\n%q", got, tc.wantColor, e.out)
				}
			}
		})
	}
}

// TestDeleteRun runs a whole plan-then-confirm cycle through the run
// function, and checks the happy path writes nothing on stderr.
func TestDeleteRun(t *testing.T) {
	e := newEnv(t, "json", false)
	sel := args(session7, []string{"--name", "reports/summary.txt", "--all-versions"})
	if err := e.delete(sel...); cmdutil.ExitCode(err) != cmdutil.ExitConfirmation {
		t.Fatalf("plan: %v", err)
	}
	c, err := deletion.ParseConfirmation(e.out.String())
	if err != nil || c.Plan == nil || len(c.Plan.Versions) != 2 || c.Plan.Store != fixedStoreURI.String() {
		t.Fatalf("plan %q: %v", e.out, err)
	}
	plan := e.out.String()

	// By --confirm-file - (standard input).
	e.reset()
	e.ios.In = strings.NewReader(plan)
	if err := e.delete(append(sel, "--confirm-file", "-")...); err != nil {
		t.Fatal(err)
	}
	if e.errOut.Len() != 0 {
		t.Errorf("stderr: %q", e.errOut)
	}
	golden(t, "delete_done_json", e.out.String())

	// By --confirm-file FILE, for a plan in table mode.
	e = newEnvAt(e.store, "table", false)
	if err := e.delete(args(session7, []string{"--name", "workspace.zip", "--version", "1"})...); cmdutil.ExitCode(err) != cmdutil.ExitConfirmation {
		t.Fatal(err)
	}
	e2 := newEnvAt(e.store, "json", false)
	if err := e2.delete(args(session7, []string{"--name", "workspace.zip", "--version", "1"})...); cmdutil.ExitCode(err) != cmdutil.ExitConfirmation {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, e2.out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	e.reset()
	if err := e.delete(args(session7, []string{"--name", "workspace.zip", "--version", "1", "--confirm-file", file})...); err != nil {
		t.Fatal(err)
	}
	golden(t, "delete_done", e.out.String())
	if e.errOut.Len() != 0 {
		t.Errorf("stderr: %q", e.errOut)
	}
	var cmd *cobra.Command = NewCmdList(e.f, nil)
	if err := execCmd(cmd, session7...); !artifacts.IsNotFound(err) {
		t.Errorf("session-7 after deleting everything: %v", err)
	}
}
