package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
)

// isolate gives the test an empty environment for agentstore's settings.
func isolate(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("NO_COLOR", "")
	for _, k := range []string{"STORE", "LAYOUT", "SCRATCH", "CONFIG", "OUTPUT", "NO_COLOR", "TIMEOUT", "VERBOSE", "LOG_FORMAT"} {
		t.Setenv("AGENTSTORE_"+k, "")
	}
}

func run(t *testing.T, tty bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(tty)
	code = Run(context.Background(), cmdutil.NewFactory(ios), args)
	return code, out.String(), errOut.String()
}

func TestRunVersion(t *testing.T) {
	isolate(t)
	code, out, errOut := run(t, false, "version")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	for _, k := range []string{"version", "revision", "time", "modified", "go"} {
		if _, ok := v[k]; !ok {
			t.Errorf("version JSON lacks %q: %s", k, out)
		}
	}
	code, out, _ = run(t, true, "version")
	if code != 0 || !strings.HasPrefix(out, "agentstore ") {
		t.Errorf("on a terminal: exit %d, %q", code, out)
	}
}

func TestVersionLdflag(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v9.8.7"
	if got := BuildVersion().Version; got != "v9.8.7" {
		t.Errorf("Version = %q", got)
	}
}

func TestRunErrors(t *testing.T) {
	isolate(t)
	tests := []struct {
		args    []string
		tty     bool
		code    int
		wantErr string
	}{
		{[]string{"bogus"}, false, 2, `{"error":{"code":"usage_error","message":"unknown command \"bogus\" for \"agentstore\""}}` + "\n"},
		{[]string{"bogus"}, true, 2, "agentstore: unknown command \"bogus\" for \"agentstore\"\nRun 'agentstore --help' for usage.\n"},
		{[]string{"-vojson", "bogus"}, true, 2, `{"error":{"code":"usage_error",`},
		{[]string{"version", "-o", "xml"}, false, 2, "agentstore: invalid --output value: \"xml\" is not an output format (want table or json)\nRun 'agentstore version --help' for usage.\n"},
		{[]string{"version", "--timeout", "x", "-o", "table"}, false, 2, `agentstore: invalid argument "x" for "--timeout" flag`},
		{[]string{"quota", "-o", "prometheus"}, false, 2, "does not support -o prometheus"},
		{[]string{"artifacts", "lsit", "-o", "table"}, false, 2, "agentstore: unknown command \"lsit\" for \"agentstore artifacts\""},
	}
	for _, tt := range tests {
		code, out, errOut := run(t, tt.tty, tt.args...)
		if code != tt.code || out != "" || !strings.HasPrefix(errOut, tt.wantErr) && !strings.Contains(errOut, tt.wantErr) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q", tt.args, code, out, errOut, tt.code, tt.wantErr)
		}
	}
}

// TestSampleStore runs the README's main command on the sample store the
// repository ships: real findings, exit 3, and the store unchanged.
func TestSampleStore(t *testing.T) {
	isolate(t)
	const sample = "../examples/sample-store"
	before, err := treeListing(sample)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, false, "fs", "verify", "--store", sample, "-o", "table")
	if code != 3 || !strings.Contains(out, "(erlang-fs-sharded)") || !strings.Contains(out, "27 scopes, 66 published versions") ||
		!strings.Contains(out, `session("shard-a","bulk","s-2") "log.txt" v1: payload SHA-256`) || errOut != "agentstore: 1 corrupt version found\n" {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if after, err := treeListing(sample); err != nil || after != before {
		t.Fatalf("verify changed the sample store (%v)", err)
	}
}

// TestNoHiddenDefaults: reads never create the default store; without a
// home directory there is no default (never one under /tmp); ws sweep and
// fs repair need a store named.
func TestNoHiddenDefaults(t *testing.T) {
	isolate(t)
	home := os.Getenv("HOME")
	def := filepath.Join(home, ".local", "share", "agentstore", "store")
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		wantErr string
	}{
		{"read of a missing default", nil, []string{"artifacts", "list"}, 1,
			`"code":"not_found","message":"no store at ` + def + `: nothing is there`},
		{"read of a missing default, hint", nil, []string{"artifacts", "list"}, 1, `(this is the default store: give --store or set AGENTSTORE_STORE)"`},
		{"verify of a missing default", nil, []string{"fs", "verify"}, 1, `(this is the default store`},
		{"quota of a missing default", nil, []string{"quota", "report"}, 1, `(this is the default store`},
		{"no home", map[string]string{"HOME": "", "XDG_DATA_HOME": ""}, []string{"artifacts", "list"}, 2, `"no store given: use --store URI or set AGENTSTORE_STORE"`},
		{"repair without a store", nil, []string{"fs", "repair", "--dry-run"}, 2, `fs repair needs the store named`},
		{"sweep without a store", nil, []string{"ws", "sweep", "--scratch", home, "--idle", "1h", "--dry-run"}, 2, `ws sweep needs the store to snapshot into`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, out, errOut := run(t, false, append(tt.args, "-o", "json")...)
			if code != tt.code || out != "" || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, %q", code, out, errOut, tt.code, tt.wantErr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(home, ".local")); !os.IsNotExist(err) {
		t.Errorf("a read made %s: %v", filepath.Join(home, ".local"), err)
	}
	t.Setenv("HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	if d := cmdutil.DefaultDataDir(); d != "" {
		t.Errorf("DefaultDataDir without a home = %q, want none", d)
	}
}

func TestScanOutputFlag(t *testing.T) {
	tests := []struct {
		args []string
		want string
		ok   bool
	}{
		{nil, "", false},
		{[]string{"version"}, "", false},
		{[]string{"-o", "json"}, "json", true},
		{[]string{"-ojson"}, "json", true},
		{[]string{"-o=json"}, "json", true},
		{[]string{"--output", "table"}, "table", true},
		{[]string{"--output=json", "-o", "table"}, "table", true},
		{[]string{"-vo", "json"}, "json", true},
		{[]string{"-v"}, "", false},
		{[]string{"--", "-o", "json"}, "", false},
		{[]string{"-o"}, "", true},
	}
	for _, tt := range tests {
		got, ok := scanOutputFlag(tt.args)
		if got != tt.want || ok != tt.ok {
			t.Errorf("scanOutputFlag(%q) = %q, %v; want %q, %v", tt.args, got, ok, tt.want, tt.ok)
		}
	}
}

// TestEveryCommandHelp runs --help on every command of the tree (catching
// duplicate flags, which panic) and checks the EXIT STATUS section.
func TestEveryCommandHelp(t *testing.T) {
	isolate(t)
	ios, _, _, _ := iostreams.Test()
	var walk func(c *cobra.Command)
	var paths [][]string
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		paths = append(paths, strings.Fields(c.CommandPath())[1:])
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRootCmd(cmdutil.NewFactory(ios)))
	for _, p := range paths {
		code, out, errOut := run(t, false, append(p, "--help")...)
		if code != 0 || errOut != "" || !strings.Contains(out, "\nEXIT STATUS\n") {
			t.Errorf("%v --help: exit %d, stderr %q, stdout:\n%s", p, code, errOut, out)
		}
	}
}
