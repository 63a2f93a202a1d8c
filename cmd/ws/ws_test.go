package wscmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// testFactory returns a Factory over test streams with a store, a scratch
// root holding one session workspace, and a fixed clock.
func testFactory(t *testing.T, output string, tty bool) (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	ios.SetStdoutTTY(tty)
	ios.SetStderrTTY(tty)
	ios.SetTerminalWidth(200)
	f := cmdutil.NewFactory(ios)
	f.Now = func() time.Time { return now }
	storeDir := t.TempDir()
	st, err := fsstore.Open(storeDir, fsstore.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	f.OpenStore = func(context.Context) (*artifacts.Store, error) { return artifacts.NewStore(st), nil }
	f.CreateStore = f.OpenStore
	scratch := t.TempDir()
	f.SetConfig(&cmdutil.Config{Scratch: scratch, Store: storeDir, Output: output, NoColor: true})
	m, err := workspace.New(workspace.Options{Scratch: scratch, Store: artifacts.NewStore(st), Now: func() time.Time { return now.Add(-90 * time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Open(context.Background(), artifacts.SessionScope("demo-a", "user-42", "session-7"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), "notes/todo.md", []byte("- ship it\n")); err != nil {
		t.Fatal(err)
	}
	m.Close()
	// The files were written by the fixed clock's session, not now.
	backdate(t, w.Path(), now.Add(-90*time.Second))
	return f, out, errOut
}

// backdate sets the modification time of every entry below dir to when.
func backdate(t *testing.T, dir string, when time.Time) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, when, when)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotFlags(t *testing.T) {
	f, _, _ := testFactory(t, "json", false)
	var got *SnapshotOptions
	cmd := NewCmdSnapshot(f, func(_ context.Context, o *SnapshotOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--app", "demo-a", "--user", "user-42", "--session", "s 1/ü"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	sc, _ := got.Scope.Scope(true, artifacts.KindSession)
	if sc != artifacts.SessionScope("demo-a", "user-42", "s 1/ü") {
		t.Fatalf("scope %v", sc)
	}
	for _, args := range [][]string{
		{"--app", "demo-a", "--user", "user-42"},
		{"--app", "demo-a", "--user", "user-42", "--session", ""},
		{},
	} {
		cmd := NewCmdSnapshot(f, func(context.Context, *SnapshotOptions) error { t.Fatal("ran"); return nil })
		cmd.SetArgs(args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.Execute(); cmdutil.ExitCode(err) != cmdutil.ExitUsage {
			t.Errorf("%q: %v, exit %d, want 2", args, err, cmdutil.ExitCode(err))
		}
	}
	cmd = NewCmdHydrate(f, func(context.Context, *HydrateOptions) error { t.Fatal("ran"); return nil })
	cmd.SetArgs([]string{"--app", "a", "--user", "u", "--session", "s", "--version", "-3"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); cmdutil.ExitCode(err) != cmdutil.ExitUsage {
		t.Errorf("--version -3: %v", err)
	}
}

func TestSnapshotHydrateList(t *testing.T) {
	f, out, errOut := testFactory(t, "json", false)
	scope := []string{"--app", "demo-a", "--user", "user-42", "--session", "session-7"}
	snap := NewCmdSnapshot(f, nil)
	snap.SetArgs(scope)
	if err := snap.Execute(); err != nil {
		t.Fatal(err)
	}
	hyd := NewCmdHydrate(f, nil)
	hyd.SetArgs(append(scope, "--version", "1"))
	if err := hyd.Execute(); err != nil {
		t.Fatal(err)
	}
	list := NewCmdList(f, nil)
	list.SetArgs(nil)
	if err := list.Execute(); err != nil {
		t.Fatal(err)
	}
	func() {
		dec := json.NewDecoder(strings.NewReader(out.String()))
		var s SnapshotOutput
		var h HydrateOutput
		var l ListResult
		if err := dec.Decode(&s); err != nil || s.Version != 1 || s.Files != 1 || s.Bytes != 10 || len(s.Digest) != 64 {
			t.Errorf("snapshot output %+v %v", s, err)
		}
		if err := dec.Decode(&h); err != nil || h.Version != 1 || h.Files != 1 || h.Bytes != 10 {
			t.Errorf("hydrate output %+v %v", h, err)
		}
		cfg, _ := f.Config()
		for _, got := range []cmdutil.StoreJSON{s.StoreJSON, h.StoreJSON} {
			if got.Store == nil || *got.Store != "file://"+cfg.Store || got.Layout == nil || *got.Layout != "erlang-fs" {
				t.Errorf("store fields %+v", got)
			}
		}
		if err := dec.Decode(&l); err != nil || len(l.Items) != 1 || l.Items[0].State != workspace.StateOK ||
			*l.Items[0].SnapshotVersion != 1 || l.Items[0].Scope.Session != "session-7" {
			t.Errorf("list output %+v %v", l, err)
		}
		if s.Scratch != cfg.Scratch || h.Scratch != cfg.Scratch || l.Scratch != cfg.Scratch || l.Store == nil || *l.Store != "file://"+cfg.Store {
			t.Errorf("scratch %q %q %q, want %q; list store %v", s.Scratch, h.Scratch, l.Scratch, cfg.Scratch, l.Store)
		}
		if errOut.String() != "" {
			t.Errorf("stderr %q", errOut.String())
		}
	}()
}

func TestListTable(t *testing.T) {
	f, out, errOut := testFactory(t, "table", true)
	list := NewCmdList(f, nil)
	list.SetArgs(nil)
	if err := list.Execute(); err != nil {
		t.Fatal(err)
	}
	func() {
		dir := workspace.DirName("demo-a", "user-42", "session-7")
		cfg, _ := f.Config()
		want := "Store file://" + cfg.Store + " (erlang-fs)\nScratch " + cfg.Scratch + "\n" +
			"DIR                               STATE  SCOPE                                    SIZE  FILES  LAST ACCESS   IDLE   SNAPSHOT\n" +
			dir + "  ok     session(\"demo-a\",\"user-42\",\"session-7\")  10 B  1      1 minute ago  1m30s  -\n"
		if got := out.String(); got != want {
			t.Errorf("table:\n%s\nwant:\n%s", got, want)
		}
		if errOut.String() != "" {
			t.Errorf("stderr %q", errOut.String())
		}
	}()
}

// Progress goes to a terminal's stderr for large trees, never to stdout.
func TestSnapshotProgress(t *testing.T) {
	f, out, errOut := testFactory(t, "json", false)
	f.IO.SetStderrTTY(true)
	cfg, _ := f.Config()
	dir := cfg.Scratch + "/" + workspace.DirName("demo-a", "user-42", "session-7")
	for i := range progressFiles + 100 {
		if err := os.WriteFile(fmt.Sprintf("%s/f%04d", dir, i), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	snap := NewCmdSnapshot(f, nil)
	snap.SetArgs([]string{"--app", "demo-a", "--user", "user-42", "--session", "session-7"})
	if err := snap.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "\rsnapshot: 601 files, 610 B\n") {
		t.Errorf("stderr %q", errOut.String())
	}
	if !strings.Contains(out.String(), `"files": 601`) || strings.Contains(out.String(), "\r") {
		t.Errorf("stdout %q", out.String())
	}
}
