package fscmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/repair"
)

func factory(t *testing.T, store, output string) (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	f := cmdutil.NewFactory(ios)
	f.SetConfig(&cmdutil.Config{Store: store, Output: output})
	return f, out, errOut
}

func TestRepairFlags(t *testing.T) {
	f, _, _ := factory(t, "/s", "json")
	var got *RepairOptions
	cmd := NewCmdRepair(f, func(_ context.Context, o *RepairOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--grace", "90s", "--limit", "10", "--dry-run", "--metrics-file", filepath.Join(t.TempDir(), "m.prom")})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Grace != 90*time.Second || got.Limit != 10 || !got.DryRun {
		t.Fatalf("%+v", got)
	}
	cmd = NewCmdRepair(f, func(_ context.Context, o *RepairOptions) error { got = o; return nil })
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil || got.Grace != repair.DefaultGrace || got.DryRun {
		t.Fatalf("defaults: %+v %v", got, err)
	}
	for _, args := range [][]string{{"--grace", "-1s"}, {"--limit", "-1"}, {"--metrics-file", "/nonexistent/dir/x.prom"}} {
		cmd = NewCmdRepair(f, func(context.Context, *RepairOptions) error { return nil })
		cmd.SetArgs(args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		// A value the flag itself refuses is one of cobra's plain errors,
		// which the root command turns into a usage error (exit 2).
		if err := cmd.Execute(); cmdutil.ExitCode(err) != cmdutil.ExitUsage && !cmdutil.IsCobraUsageError(err) {
			t.Errorf("%v: %v", args, err)
		}
	}
}

func TestVerifyFlags(t *testing.T) {
	f, _, _ := factory(t, "/s", "json")
	var got *VerifyOptions
	cmd := NewCmdVerify(f, func(_ context.Context, o *VerifyOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--app", "a", "--user", "u", "--sample", "12.5", "--seed", "9"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if s, _ := got.Scope.Scope(false); s.App != "a" || s.User != "u" || got.Sample != 12.5 || got.Seed != 9 {
		t.Fatalf("%+v", got)
	}
}

func fixture(t *testing.T) string {
	root, err := testfixtures.CopyFSStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestRepairStreams: off a terminal stderr stays empty and stdout is JSON;
// on a terminal stderr carries progress and the rate.
func TestRepairStreams(t *testing.T) {
	root := fixture(t)
	f, out, errOut := factory(t, root, "json")
	opts := &RepairOptions{IO: f.IO, Config: f.Config, StoreURI: f.StoreURI, OpenStore: f.OpenStore, Now: time.Now, Grace: repair.DefaultGrace, DryRun: true}
	err := runRepair(context.Background(), opts)
	var pf *cmdutil.ProblemsFound
	if !errors.As(err, &pf) {
		t.Fatalf("got %v, want problems found", err)
	}
	if errOut.Len() != 0 {
		t.Fatalf("stderr off a terminal: %q", errOut)
	}
	var j map[string]any
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"store", "layout", "dry_run", "scanned", "removed", "reservations_preserved", "corrupt", "corrupt_items"} {
		if _, ok := j[k]; !ok {
			t.Errorf("no %q in %s", k, out)
		}
	}

	f, out, errOut = factory(t, root, "table")
	f.IO.SetStderrTTY(true)
	f.IO.SetStdoutTTY(true)
	opts = &RepairOptions{IO: f.IO, Config: f.Config, StoreURI: f.StoreURI, OpenStore: f.OpenStore, Now: time.Now, Grace: repair.DefaultGrace, DryRun: true}
	runRepair(context.Background(), opts)
	if !strings.Contains(errOut.String(), "repair: scanned") || !strings.Contains(errOut.String(), "files/s") {
		t.Fatalf("no progress on a terminal: %q", errOut)
	}
	if !strings.Contains(out.String(), "next: agentstore artifacts delete") {
		t.Fatalf("stdout %q", out)
	}
}
