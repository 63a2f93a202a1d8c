package wscmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/pkg/sweep"
	"github.com/agentstore/agentstore/pkg/workspace"
)

func TestSweepFlags(t *testing.T) {
	f, _, _ := testFactory(t, "json", false)
	var got *SweepOptions
	cmd := NewCmdSweep(f, func(_ context.Context, o *SweepOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--idle", "36h", "--dry-run", "--max-removals", "7", "--discard", "--confirm", "abc"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Idle != 36*time.Hour || !got.DryRun || got.MaxRemovals != 7 || !got.Discard || !got.ConfirmSet || got.Confirm != "abc" {
		t.Fatalf("options %+v", got)
	}
	for _, args := range [][]string{
		{},
		{"--idle", "-1h"},
		{"--idle", "1h", "--max-removals", "-1"},
		{"--idle", "1h", "--confirm", "x", "--confirm-file", "y"},
		{"--idle", "1h", "--confirm-file", ""},
		{"--idle", "1h", "--metrics-file", "/nonexistent/dir/m.prom"},
		{"--idle", "soon"},
		{"--idle", "4m59s"},
		{"--idle", "1h", "--exclude", "[x"},
	} {
		cmd := NewCmdSweep(f, func(context.Context, *SweepOptions) error { t.Fatal("ran"); return nil })
		cmd.SetArgs(args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.Execute(); cmdutil.ExitCode(cmdutil.AsUsageError(err, cmd)) != cmdutil.ExitUsage {
			t.Errorf("%q: %v, want exit 2", args, err)
		}
	}
}

func TestSweepRun(t *testing.T) {
	f, out, errOut := testFactory(t, "json", false)
	cfg, _ := f.Config()
	dir := workspace.DirName("demo-a", "user-42", "session-7")
	cmd := NewCmdSweep(f, nil)
	cmd.SetArgs([]string{"--idle", "1m", "--force", "--dry-run"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var res SweepOutput
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if !res.DryRun || len(res.Items) != 1 || res.Items[0].Decision != sweep.WouldRemove || *res.Items[0].SnapshotVersion != 1 || res.Items[0].Dir != dir {
		t.Fatalf("%s", out)
	}
	if errOut.Len() != 0 {
		t.Fatalf("stderr: %s", errOut)
	}
	out.Reset()
	metrics := filepath.Join(t.TempDir(), "m.prom")
	cmd = NewCmdSweep(f, nil)
	cmd.SetArgs([]string{"--idle", "1m", "--force", "--metrics-file", metrics})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	res = SweepOutput{}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.DryRun || res.Removed != 1 || res.Items[0].Decision != sweep.Removed || res.Items[0].IdleSeconds != 90 {
		t.Fatalf("%s", out)
	}
	if _, err := os.Stat(filepath.Join(cfg.Scratch, dir)); !os.IsNotExist(err) {
		t.Fatalf("still there: %v", err)
	}
	b, err := os.ReadFile(metrics)
	if err != nil || !strings.Contains(string(b), "agentstore_ws_sweep_removed{scratch=") {
		t.Fatalf("metrics: %s %v", b, err)
	}
	if errOut.Len() != 0 {
		t.Fatalf("stderr: %s", errOut)
	}
}

func TestSweepTable(t *testing.T) {
	f, out, errOut := testFactory(t, "table", true)
	cmd := NewCmdSweep(f, nil)
	cmd.SetArgs([]string{"--idle", "1h"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"(dry run", "DIR", "DECISION", "kept", "idle for 1m30s, not longer than --idle 1h0m"} {
		if want == "(dry run" {
			if strings.Contains(s, want) {
				t.Errorf("a real sweep says dry run:\n%s", s)
			}
			continue
		}
		if !strings.Contains(s, want) {
			t.Errorf("no %q in\n%s", want, s)
		}
	}
	if strings.Contains(errOut.String(), "agentstore:") {
		t.Errorf("stderr: %s", errOut)
	}
}
