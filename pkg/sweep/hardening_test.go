package sweep

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// snapshotNames lists the entries of a version of scope's snapshot.
func snapshotNames(t *testing.T, st *artifacts.Store, scope artifacts.Scope, version int64) []string {
	t.Helper()
	rd, err := st.Get(context.Background(), scope, workspace.SnapshotName, version)
	must(t, err)
	b, err := io.ReadAll(rd)
	rd.Close()
	must(t, err)
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	must(t, err)
	var out []string
	for _, f := range zr.File {
		out = append(out, f.Name)
	}
	slices.Sort(out)
	return out
}

// A workspace holding what a snapshot cannot hold is kept and reported
// unsnapshottable; names beginning with .agentstore- below the top are
// snapshotted like any other, and the sweep checks the zip against the
// whole tree.
func TestUnsnapshottableIsKept(t *testing.T) {
	scratch := t.TempDir()
	st := artifacts.NewStore(newStore(t))
	linked := makeWorkspace(t, scratch, scopeN(1), t0.Add(-48*time.Hour), 3)
	must(t, os.Symlink("sub", filepath.Join(scratch, linked, "latest")))
	fifo := makeWorkspace(t, scratch, scopeN(2), t0.Add(-48*time.Hour), 3)
	must(t, syscall.Mkfifo(filepath.Join(scratch, fifo, "sub", "pipe"), 0o600))
	notes := makeWorkspace(t, scratch, scopeN(3), t0.Add(-48*time.Hour), 3)
	must(t, os.WriteFile(filepath.Join(scratch, notes, "sub", ".agentstore-notes"), []byte("keep me"), 0o600))
	for _, d := range []string{linked, fifo, notes} {
		backdate(t, filepath.Join(scratch, d), t0.Add(-48*time.Hour))
	}
	before := map[string]string{linked: treeOf(t, filepath.Join(scratch, linked)), fifo: treeOf(t, filepath.Join(scratch, fifo))}

	// The links and FIFOs were made now: sweep three days later.
	later := func() time.Time { return time.Now().Add(72 * time.Hour) }
	for _, dry := range []bool{true, false} {
		rep := run(t, Options{Scratch: scratch, Store: st, Idle: time.Hour, DryRun: dry, Now: later})
		items := byDir(rep)
		for d, want := range map[string]workspace.Omission{linked: {Path: "latest", Kind: "symlink"}, fifo: {Path: "sub/pipe", Kind: "fifo"}} {
			it := items[d]
			if it.Decision != Skipped || it.Code != CodeUnsnapshottable || !slices.Equal(it.Omitted, []workspace.Omission{want}) ||
				!strings.Contains(it.Reason, want.Path) {
				t.Fatalf("dry %t: %s: %s %s %v: %s", dry, d, it.Decision, it.Code, it.Omitted, it.Reason)
			}
			if got := treeOf(t, filepath.Join(scratch, d)); got != before[d] {
				t.Fatalf("%s changed", d)
			}
		}
		if rep.Problems() != 2 {
			t.Fatalf("%d problems", rep.Problems())
		}
	}
	// notes was removed by the second run above; its snapshot holds the
	// .agentstore- name.
	rec, err := st.Stat(context.Background(), scopeN(3), workspace.SnapshotName, artifacts.Latest)
	must(t, err)
	if names := snapshotNames(t, st, scopeN(3), rec.Version); !slices.Contains(names, "sub/.agentstore-notes") {
		t.Fatalf("snapshot holds %q", names)
	}
	if _, err := os.Stat(filepath.Join(scratch, notes)); !os.IsNotExist(err) {
		t.Fatalf("notes still there: %v", err)
	}
	// A confirmed discard plan removes an unsnapshottable workspace.
	rep, err := Run(context.Background(), Options{Scratch: scratch, Idle: time.Hour, Now: later})
	if rep == nil || rep.Plan == nil || len(rep.Plan.Items) != 2 {
		t.Fatalf("discard plan: %+v %v", rep, err)
	}
	rep = run(t, Options{Scratch: scratch, Idle: time.Hour, Now: later, Confirm: &Confirmation{PlanID: rep.Plan.PlanID}})
	if rep.Removed != 2 {
		t.Fatalf("discard removed %d", rep.Removed)
	}
}

// Idle is measured from the newest change in the tree too: a workspace
// whose files were edited directly is not idle, whatever its index says.
func TestIdleCountsEditsBehindTheIndex(t *testing.T) {
	scratch := t.TempDir()
	st := artifacts.NewStore(newStore(t))
	d := makeWorkspace(t, scratch, scopeN(1), t0.Add(-48*time.Hour), 3)
	edited := filepath.Join(scratch, d, "sub", "g2.txt")
	must(t, os.WriteFile(edited, []byte("edited directly"), 0o600))
	recent := t0.Add(-10 * time.Minute)
	must(t, os.Chtimes(edited, recent, recent))
	it := byDir(run(t, Options{Scratch: scratch, Store: st, Idle: time.Hour}))[d]
	if it.Decision != Kept || it.Idle != 10*time.Minute || !it.LastAccess.Equal(recent) {
		t.Fatalf("%s idle %s last %s: %s", it.Decision, it.Idle, it.LastAccess, it.Reason)
	}
	must(t, os.Chtimes(edited, t0.Add(-2*time.Hour), t0.Add(-2*time.Hour)))
	if it := byDir(run(t, Options{Scratch: scratch, Store: st, Idle: time.Hour}))[d]; it.Decision != Removed {
		t.Fatalf("once idle: %s %s", it.Decision, it.Reason)
	}
}

// lost+found and excluded names are left alone, reported as kept; debris
// of killed hydrations is cleaned after the grace period.
func TestExcludeLostFoundAndDebris(t *testing.T) {
	scratch := t.TempDir()
	st := artifacts.NewStore(newStore(t))
	old := t0.Add(-1000 * time.Hour)
	for _, n := range []string{"lost+found", "backup-1", "backup-2", "stray"} {
		must(t, os.MkdirAll(filepath.Join(scratch, n), 0o700))
		must(t, os.Chtimes(filepath.Join(scratch, n), old, old))
	}
	d := makeWorkspace(t, scratch, scopeN(1), t0.Add(-48*time.Hour), 2)
	archive := filepath.Join(scratch, ".agentstore-hydrate-"+d+"-0123456789abcdef.zip")
	extract := filepath.Join(scratch, "."+d+".zipsafe-new-7")
	must(t, os.WriteFile(archive, []byte("partial"), 0o600))
	must(t, os.MkdirAll(filepath.Join(extract, "a"), 0o700))
	must(t, os.WriteFile(filepath.Join(extract, "a", "b"), []byte("half"), 0o600))
	backdate(t, extract, old)
	must(t, os.Chtimes(extract, old, old))
	must(t, os.Chtimes(archive, old, old))
	young := filepath.Join(scratch, ".agentstore-hydrate-"+d+"-1111111111111111.zip")
	must(t, os.WriteFile(young, []byte("running"), 0o600))
	young0 := t0.Add(-time.Minute)
	must(t, os.Chtimes(young, young0, young0))

	_, err := Run(context.Background(), Options{Scratch: scratch, Store: st, Idle: time.Hour, Exclude: []string{"[x"}})
	if artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Fatalf("malformed pattern: %v", err)
	}
	for _, dry := range []bool{true, false} {
		rep := run(t, Options{Scratch: scratch, Store: st, Idle: time.Hour, Exclude: []string{"backup-*"}, DryRun: dry})
		items := byDir(rep)
		for _, n := range []string{"lost+found", "backup-1", "backup-2"} {
			if it := items[n]; it.Decision != Kept || it.Reason == "" {
				t.Errorf("dry %t: %s: %s %q", dry, n, it.Decision, it.Reason)
			}
		}
		if it := items["stray"]; it.Decision != Skipped {
			t.Errorf("stray: %s", it.Decision)
		}
		for _, p := range []string{archive, extract} {
			it := items[filepath.Base(p)]
			if it.Decision != Cleaned || !strings.Contains(it.Reason, "interrupted") {
				t.Errorf("dry %t: %s: %s %q", dry, filepath.Base(p), it.Decision, it.Reason)
			}
			_, err := os.Lstat(p)
			if gone := os.IsNotExist(err); gone == dry {
				t.Errorf("dry %t: %s gone %t", dry, filepath.Base(p), gone)
			}
		}
		if it := items[filepath.Base(young)]; it.Decision != Kept {
			t.Errorf("young archive: %s %q", it.Decision, it.Reason)
		}
		if rep.Cleaned != 2 || rep.Problems() != 1 {
			t.Errorf("dry %t: cleaned %d, problems %d", dry, rep.Cleaned, rep.Problems())
		}
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatal(err)
	}
}

// Manager.Open during concurrent sweeps never fails with a not-found or
// I/O error: a directory swept away while it is being opened is a
// conflict (retryable), and opening again hydrates the sweep's snapshot.
// Sweeping an untouched hydrated workspace uses no new version.
func TestOpenDuringConcurrentSweeps(t *testing.T) {
	scratch := t.TempDir()
	st := artifacts.NewStore(newStore(t))
	ctx := context.Background()
	m, err := workspace.New(workspace.Options{Scratch: scratch, Store: st})
	must(t, err)
	defer m.Close()
	const sessions = 4
	for i := range sessions {
		w, err := m.Open(ctx, scopeN(i))
		must(t, err)
		must(t, w.Write(ctx, "a.txt", []byte("a")))
		_, err = w.Snapshot(ctx, workspace.SnapshotOptions{})
		must(t, err)
		must(t, w.Close())
	}
	later := func() time.Time { return time.Now().Add(72 * time.Hour) }
	var opens, conflicts, removed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			for n := 0; n < 150; n++ {
				w, err := m.Open(ctx, scopeN(i))
				switch {
				case err == nil:
					opens.Add(1)
					if b, rerr := readAll(w, "a.txt"); rerr == nil && b != "a" {
						t.Errorf("a.txt holds %q", b)
					}
					w.Close()
				case artifacts.CodeOf(err) == artifacts.CodeConflict:
					conflicts.Add(1)
				default:
					t.Errorf("open %d: %v (code %s)", i, err, artifacts.CodeOf(err))
					return
				}
			}
		})
	}
	// One sweep at a time, as the scratch root's lock makes it (LockFile).
	var sweeps sync.WaitGroup
	for range 1 {
		sweeps.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				rep, err := Run(ctx, Options{Scratch: scratch, Store: st, Idle: time.Hour, Now: later, Workers: 2})
				if err != nil {
					t.Errorf("sweep: %v", err)
					return
				}
				for _, it := range rep.Items {
					if it.Decision == Removed {
						removed.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	sweeps.Wait()
	t.Logf("%d opens, %d conflicts, %d removals", opens.Load(), conflicts.Load(), removed.Load())
	if removed.Load() == 0 {
		t.Fatal("no sweep removed anything: the race did not run")
	}
	for i := range sessions {
		page, err := st.ListVersions(ctx, scopeN(i), workspace.SnapshotName, artifacts.ListOptions{Limit: 100})
		must(t, err)
		if len(page.Items) != 1 {
			t.Errorf("session %d: %d versions; sweeps of an untouched hydrated workspace must write none", i, len(page.Items))
		}
	}
}
