package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/iostreams"
)

func TestFactoryOpenStore(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios)
	t.Cleanup(f.Cleanup)
	ctx := context.Background()
	if _, err := f.Config(); err == nil {
		t.Fatal("Config before SetConfig must fail")
	}
	if _, err := f.OpenStore(ctx); err == nil {
		t.Fatal("OpenStore before SetConfig must fail")
	}
	f.SetConfig(&Config{Output: OutputJSON})
	if _, err := f.OpenStore(ctx); err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "AGENTSTORE_STORE") {
		t.Fatalf("no store: %v", err)
	}

	dir := t.TempDir()
	fsRoot := filepath.Join(dir, "fs")
	if err := os.MkdirAll(filepath.Join(fsRoot, "v1"), 0o700); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name, store, layout string
		create              bool
		wantLayout          string // "" when an error is wanted
		wantCode            string
		wantExit            int
		wantMsg             string
	}{
		{name: "detected", store: fsRoot, wantLayout: "erlang-fs"},
		{name: "forced", store: fsRoot, layout: "erlang-fs", wantLayout: "erlang-fs"},
		{name: "forced wrong", store: fsRoot, layout: "erlang-fs-sharded", wantCode: "unknown_layout", wantExit: 2, wantMsg: "drop --layout"},
		{name: "unknown layout name", store: fsRoot, layout: "nope", wantCode: CodeUsage, wantExit: 2, wantMsg: `unknown layout "nope"`},
		{name: "empty", store: empty, wantCode: "unknown_layout", wantExit: 2, wantMsg: "give --layout"},
		{name: "empty forced", store: empty, layout: "erlang-fs-sharded", wantLayout: "erlang-fs-sharded"},
		{name: "missing", store: missing, wantCode: "not_found", wantExit: 1, wantMsg: "no store at " + missing},
		{name: "inside", store: filepath.Join(fsRoot, "v1"), wantCode: "unknown_layout", wantExit: 2, wantMsg: "use --store " + fsRoot + ","},
		{name: "bad uri", store: "s3://x", wantCode: CodeUsage, wantExit: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.SetConfig(&Config{Store: tt.store, Layout: tt.layout})
			open := f.OpenStore
			if tt.create {
				open = f.CreateStore
			}
			st, err := open(ctx)
			if tt.wantLayout != "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := st.Capabilities().Layout; got != tt.wantLayout {
					t.Fatalf("layout %q, want %q", got, tt.wantLayout)
				}
				return
			}
			if ErrorCode(err) != tt.wantCode || ExitCode(err) != tt.wantExit || !strings.Contains(fmt.Sprint(err), tt.wantMsg) {
				t.Fatalf("error %v (code %q, exit %d), want code %q exit %d containing %q", err, ErrorCode(err), ExitCode(err), tt.wantCode, tt.wantExit, tt.wantMsg)
			}
			if strings.HasPrefix(err.Error(), "artifacts:") {
				t.Errorf("message %q has the package prefix", err)
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("a read created %s: %v", missing, err)
	}

	// Only CreateStore makes a store, of the default layout.
	f.SetConfig(&Config{Store: missing})
	st, err := f.CreateStore(ctx)
	if err != nil || st.Capabilities().Layout != "erlang-fs" {
		t.Fatalf("CreateStore: %v, %v", st, err)
	}
	if fi, err := os.Stat(missing); err != nil || !fi.IsDir() {
		t.Fatalf("CreateStore did not make %s: %v", missing, err)
	}

	// The default store is named as such when it is missing.
	f.SetConfig(&Config{Store: filepath.Join(dir, "default"), StoreDefault: true})
	if _, err := f.OpenStore(ctx); !strings.Contains(fmt.Sprint(err), "this is the default store") {
		t.Fatalf("default store: %v", err)
	}
}

func TestFactorySetConfigAppliesNoColor(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	ios.SetStdoutTTY(true)
	f := NewFactory(ios)
	f.SetConfig(&Config{NoColor: true, LogFormat: LogText})
	if ios.ColorEnabled() {
		t.Error("NoColor not applied")
	}
	f.Logger().Debug("hidden")
	f.Logger().Info("info")
	f.Logger().Warn("shown")
	if s := errOut.String(); strings.Contains(s, "hidden") || !strings.Contains(s, "level=WARN msg=shown") || !strings.Contains(s, "level=INFO msg=info") {
		t.Errorf("default logger wrote %q", s)
	}
	errOut.Reset()
	f.SetConfig(&Config{Verbose: true, LogFormat: LogJSON})
	f.Logger().Debug("dbg", "k", "v")
	if s := errOut.String(); !strings.HasPrefix(s, "{") || !strings.Contains(s, `"level":"DEBUG","msg":"dbg","k":"v"`) {
		t.Errorf("verbose JSON logger wrote %q", s)
	}
}

func TestFactorySetupTimeout(t *testing.T) {
	clearEnv(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios)
	var ctxErr error
	var hasDeadline bool
	cmd := &cobra.Command{
		Use: "x",
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return f.Setup(cmd, false)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, hasDeadline = cmd.Context().Deadline()
			<-cmd.Context().Done()
			ctxErr = cmd.Context().Err()
			return nil
		},
	}
	AddGlobalFlags(cmd.PersistentFlags())
	cmd.SetArgs([]string{"--timeout", "10ms"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.Cleanup()
	if !hasDeadline || !errors.Is(ctxErr, context.DeadlineExceeded) {
		t.Errorf("deadline %v, ctx err %v", hasDeadline, ctxErr)
	}
}

func TestHelpHasExitStatus(t *testing.T) {
	root := &cobra.Command{Use: "agentstore"}
	leaf := &cobra.Command{Use: "leaf", Short: "a leaf", RunE: func(*cobra.Command, []string) error { return nil }}
	SetExitStatusNote(leaf, "3  when a corrupt artifact is found")
	group := NewGroupCmd("grp", "a group", "")
	group.AddCommand(leaf)
	root.AddCommand(group)
	SetHelp(root)
	for _, c := range []*cobra.Command{root, group, leaf} {
		var b strings.Builder
		c.SetOut(&b)
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "\nEXIT STATUS\n  0  done") && c != leaf {
			t.Errorf("%s help lacks EXIT STATUS:\n%s", c.Name(), b.String())
		}
		if c == leaf && !strings.Contains(b.String(), "EXIT STATUS\n  3  when a corrupt artifact is found\n\n  0  done") {
			t.Errorf("leaf help lacks its note:\n%s", b.String())
		}
	}
}

func TestGroupCmdAndWrapArgs(t *testing.T) {
	root := &cobra.Command{Use: "agentstore"}
	group := NewGroupCmd("grp", "a group", "")
	group.AddCommand(&cobra.Command{Use: "list", Args: cobra.ExactArgs(1), RunE: func(*cobra.Command, []string) error { return nil }})
	root.AddCommand(group)
	WrapArgsErrors(root)
	root.SilenceErrors, root.SilenceUsage = true, true
	var out strings.Builder
	root.SetOut(&out)

	root.SetArgs([]string{"grp", "lst"})
	err := root.Execute()
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "Did you mean this?\n\tlist") {
		t.Errorf("unknown subcommand: %v", err)
	}
	root.SetArgs([]string{"grp", "list"})
	err = root.Execute()
	var u *UsageError
	if !errors.As(err, &u) || u.CommandPath != "agentstore grp list" {
		t.Errorf("args error: %#v", err)
	}
	root.SetArgs([]string{"grp"})
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "agentstore grp") {
		t.Errorf("group alone: %v, %q", err, out.String())
	}
}
