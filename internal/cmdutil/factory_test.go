package cmdutil

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// fakeStore is an artifacts.Driver that records Close.
type fakeStore struct {
	artifacts.Driver
	closed bool
}

func (s *fakeStore) Capabilities() artifacts.Capabilities {
	return artifacts.Capabilities{Name: "fake"}
}

func (s *fakeStore) Close() error { s.closed = true; return nil }

func TestFactoryOpenStore(t *testing.T) {
	oldFS, oldGCS := OpenFS, OpenGCS
	t.Cleanup(func() { OpenFS, OpenGCS = oldFS, oldGCS })

	ios, _, _, _ := iostreams.Test()
	f := NewFactory(ios)
	ctx := context.Background()
	if _, err := f.Config(); err == nil {
		t.Fatal("Config before SetConfig must fail")
	}
	if _, err := f.OpenStore(ctx); err == nil {
		t.Fatal("OpenStore before SetConfig must fail")
	}

	f.SetConfig(&Config{Output: OutputJSON})
	_, err := f.OpenStore(ctx)
	if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "AGENTSTORE_STORE") {
		t.Fatalf("no store: %v", err)
	}

	f.SetConfig(&Config{Store: "gs://bucket-x"})
	OpenGCS = nil
	if _, err := f.OpenStore(ctx); ErrorCode(err) != CodeUnsupportedStore || ExitCode(err) != 1 {
		t.Fatalf("nil OpenGCS: %v (code %q)", err, ErrorCode(err))
	}
	var gotBucket, gotPrefix string
	gcs := &fakeStore{}
	OpenGCS = func(_ context.Context, bucket, prefix string) (artifacts.Driver, error) {
		gotBucket, gotPrefix = bucket, prefix
		return gcs, nil
	}
	var got *fakeStore
	if st, err := f.OpenStore(ctx); err != nil || !st.As(&got) || got != gcs {
		t.Fatalf("OpenGCS: %v, %v", st, err)
	}
	if gotBucket != "bucket-x" || gotPrefix != DefaultGCSPrefix {
		t.Errorf("OpenGCS(%q, %q)", gotBucket, gotPrefix)
	}

	f.SetConfig(&Config{Store: "file:///srv/store"})
	OpenFS = nil
	if _, err := f.OpenStore(ctx); ErrorCode(err) != CodeUnsupportedStore {
		t.Fatalf("nil OpenFS: %v", err)
	}
	var gotRoot string
	OpenFS = func(root string) (artifacts.Driver, error) {
		gotRoot = root
		return nil, artifacts.Errorf(artifacts.CodeUnsafeStore, "open", nil, "symlink")
	}
	if _, err := f.OpenStore(ctx); ErrorCode(err) != string(artifacts.CodeUnsafeStore) || gotRoot != "/srv/store" {
		t.Fatalf("OpenFS error: %v, root %q", err, gotRoot)
	}

	f.SetConfig(&Config{Store: "s3://x"})
	if _, err := f.OpenStore(ctx); ExitCode(err) != ExitUsage {
		t.Fatalf("bad URI: %v", err)
	}

	f.Cleanup()
	if !gcs.closed {
		t.Error("Cleanup must close opened stores")
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
