package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// steps are the points where the test hook runs, in order.
var steps = []string{"fingerprinted", "snapshotted", "verified", "marked", "renamed", "checked", "emptied"}

// one builds a scratch root holding one idle workspace and returns the
// scratch root, its directory name and its tree.
func one(t *testing.T, scope artifacts.Scope) (string, string, string) {
	t.Helper()
	scratch := t.TempDir()
	d := makeWorkspace(t, scratch, scope, t0.Add(-48*time.Hour), 7)
	return scratch, d, treeOf(t, filepath.Join(scratch, d))
}

// findTombstone returns the tombstone of dir in scratch, "" when none.
func findTombstone(t *testing.T, scratch, dir string) string {
	t.Helper()
	for _, n := range entriesOf(t, scratch) {
		if d, ok := parseTombstone(n); ok && d == dir {
			return n
		}
	}
	return ""
}

// TestTouchedDuringSweep writes into the workspace, as a session holding
// its directory open does, at every step before the removal starts: the
// sweep must notice, keep the workspace under its name, and lose nothing.
func TestTouchedDuringSweep(t *testing.T) {
	for _, step := range steps[:5] {
		t.Run(step, func(t *testing.T) {
			scope := scopeN(1)
			scratch, d, _ := one(t, scope)
			// The writer's handle, opened before the sweep, follows the
			// directory through renames.
			wr, err := os.OpenRoot(filepath.Join(scratch, d))
			must(t, err)
			defer wr.Close()
			st := newStore(t)
			rep := run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour, hook: func(s, dir string) error {
				if s == step {
					return wr.WriteFile("sub/written-at-"+step, []byte(step), 0o600)
				}
				return nil
			}})
			it := byDir(rep)[d]
			if it.Decision != Skipped || !strings.Contains(it.Reason, "touched") {
				t.Fatalf("%s: %s", it.Decision, it.Reason)
			}
			b, err := os.ReadFile(filepath.Join(scratch, d, "sub", "written-at-"+step))
			if err != nil || string(b) != step {
				t.Fatalf("the write is lost: %q %v", b, err)
			}
			noLeftovers(t, scratch)
			// Once idle again, the next sweep removes it, write included.
			backdate(t, filepath.Join(scratch, d), t0.Add(-2*time.Hour))
			tree := treeOf(t, filepath.Join(scratch, d))
			rep = run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour})
			it = byDir(rep)[d]
			if it.Decision != Removed {
				t.Fatalf("next sweep: %s: %s", it.Decision, it.Reason)
			}
			if got := hydrateTree(t, artifacts.NewStore(st), scope, it.SnapshotVersion); got != tree {
				t.Fatalf("hydrates to\n%s\nwant\n%s", got, tree)
			}
		})
	}
}

// TestWriterDuringRemoval is a session resuming work after the final
// check: it rewrites the index (as every confined call does when the last
// access is old) and writes a file. The sweep must notice, keep the
// tombstone for an operator, and never touch it again.
func TestWriterDuringRemoval(t *testing.T) {
	scope := scopeN(1)
	scratch, d, _ := one(t, scope)
	wr, err := os.OpenRoot(filepath.Join(scratch, d))
	must(t, err)
	defer wr.Close()
	st := newStore(t)
	rep := run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour, hook: func(s, dir string) error {
		if s != "checked" {
			return nil
		}
		b, _ := json.Marshal(workspace.Index{Format: workspace.IndexFormat, App: scope.App, User: scope.User, Session: scope.Session, LastAccess: t0})
		must(t, wr.WriteFile(workspace.IndexName+"-tmp", b, 0o600))
		must(t, wr.Rename(workspace.IndexName+"-tmp", workspace.IndexName))
		return wr.WriteFile("late.txt", []byte("late"), 0o600)
	}})
	it := byDir(rep)[d]
	if it.Decision != Skipped || !strings.Contains(it.Reason, "written to while it was being removed") {
		t.Fatalf("%s: %s", it.Decision, it.Reason)
	}
	tomb := findTombstone(t, scratch, d)
	if tomb == "" {
		t.Fatal("no tombstone kept")
	}
	for range 2 {
		rep = run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour})
		it = byDir(rep)[tomb]
		if it.Decision != Skipped || !strings.Contains(it.Reason, "merge what it holds by hand") {
			t.Fatalf("next sweep: %s: %s", it.Decision, it.Reason)
		}
		if _, err := os.Stat(filepath.Join(scratch, tomb, workspace.IndexName)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInterruptedAtEveryStep stops a removal at every step, as a kill
// would, and checks that the workspace is always either its directory or a
// verified snapshot, and that the next sweep finishes the job.
func TestInterruptedAtEveryStep(t *testing.T) {
	for _, step := range steps {
		for _, variant := range []string{"plain", "half removed", "marker lost"} {
			if variant == "half removed" && step != "checked" || variant == "marker lost" && step != "renamed" {
				continue
			}
			t.Run(step+"/"+variant, func(t *testing.T) {
				scope := scopeN(1)
				scratch, d, tree := one(t, scope)
				st := newStore(t)
				rep := run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour, hook: func(s, dir string) error {
					if s != step {
						return nil
					}
					tomb := findTombstone(t, scratch, d)
					switch variant {
					case "half removed":
						must(t, os.RemoveAll(filepath.Join(scratch, tomb, "sub")))
						must(t, os.Remove(filepath.Join(scratch, tomb, "f0.txt")))
					case "marker lost":
						must(t, os.Remove(filepath.Join(scratch, tomb+MarkerSuffix)))
					}
					return errHook
				}})
				if it := byDir(rep)[d]; it.Decision == Removed {
					t.Fatalf("removed although stopped at %s", step)
				}
				// Invariant: the directory, or a verified snapshot.
				_, err := os.Lstat(filepath.Join(scratch, d))
				switch {
				case err == nil:
					if got := treeOf(t, filepath.Join(scratch, d)); got != tree {
						t.Fatalf("the directory changed:\n%s", got)
					}
				default:
					if got := hydrateTree(t, artifacts.NewStore(st), scope, 1); got != tree {
						t.Fatalf("no directory and v1 hydrates to\n%s", got)
					}
				}
				rep = run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour})
				if _, err := os.Lstat(filepath.Join(scratch, d)); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("still there after the next sweep: %v; %+v", err, rep.Items)
				}
				noLeftovers(t, scratch)
				if rep.Problems() != 0 {
					t.Fatalf("problems: %+v", rep.Items)
				}
				latest, err := st.Stat(context.Background(), scope, workspace.SnapshotName, artifacts.Latest)
				must(t, err)
				if got := hydrateTree(t, artifacts.NewStore(st), scope, latest.Version); got != tree {
					t.Fatalf("v%d hydrates to\n%s", latest.Version, got)
				}
				var finished bool
				for _, it := range rep.Items {
					finished = finished || strings.Contains(it.Reason, "finished the removal")
				}
				if tombstoned := step == "renamed" && variant != "marker lost" || step == "checked"; finished != tombstoned {
					t.Fatalf("finished an interrupted removal: %v; items %+v", finished, rep.Items)
				}
			})
		}
	}
}

// TestTombstoneWhoseSnapshotIsGone: the verified version recorded for a
// tombstone was deleted from the store since; the tombstone must be kept.
func TestTombstoneWhoseSnapshotIsGone(t *testing.T) {
	scope := scopeN(1)
	scratch, d, _ := one(t, scope)
	st := newStore(t)
	run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour, hook: func(s, _ string) error {
		if s == "checked" {
			return errHook
		}
		return nil
	}})
	tomb := findTombstone(t, scratch, d)
	if _, err := st.Delete(context.Background(), scope, workspace.SnapshotName, artifacts.Selector{Kind: artifacts.SelectAll}); err != nil {
		t.Fatal(err)
	}
	rep := run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour})
	it := byDir(rep)[tomb]
	if it.Decision != Skipped || !strings.Contains(it.Reason, "does not verify") || rep.Problems() != 1 {
		t.Fatalf("%s: %s", it.Decision, it.Reason)
	}
	if _, err := os.Stat(filepath.Join(scratch, tomb, "f1.txt")); err != nil {
		t.Fatal(err)
	}
}

// TestSessionWritingIsNeverRemoved runs sweeps while a session writes
// through package workspace with a fresh last access (as every session
// does: a confined call records the access at least once a minute). It is
// never removed, and every write that returned is found in the end; an
// idle workspace beside it is removed.
func TestSessionWritingIsNeverRemoved(t *testing.T) {
	testSessionWriting(t, false)
}

// TestStaleSessionWritingDuringSweep is the same with a second session
// whose index says it has been idle for two days while it keeps writing
// (its manager's clock is two days behind). The sweep may take it between
// two calls — each confined call holds a shared lock on the directory that
// the sweep takes exclusively, so never during one. The call that comes
// next fails with conflict and writes nothing; opening the workspace again
// hydrates the sweep's snapshot, which holds every write that succeeded.
func TestStaleSessionWritingDuringSweep(t *testing.T) {
	testSessionWriting(t, true)
}

func testSessionWriting(t *testing.T, withStale bool) {
	scratch := t.TempDir()
	st := newStore(t)
	ctx := context.Background()
	fresh, err := workspace.New(workspace.Options{Scratch: scratch, Store: artifacts.NewStore(st)})
	must(t, err)
	defer fresh.Close()
	stale, err := workspace.New(workspace.Options{Scratch: scratch, Store: artifacts.NewStore(st), Now: func() time.Time { return time.Now().Add(-48 * time.Hour) }})
	must(t, err)
	defer stale.Close()
	wFresh, err := fresh.Open(ctx, scopeN(1))
	must(t, err)
	sessions := []*workspace.Workspace{wFresh}
	managers := []*workspace.Manager{fresh, stale}
	reopened := make([]int, 2)
	if withStale {
		wStale, err := stale.Open(ctx, scopeN(2))
		must(t, err)
		sessions = append(sessions, wStale)
	}
	// An idle workspace nobody writes to, to show the sweeps do work.
	idle := makeWorkspace(t, scratch, scopeN(3), time.Now().Add(-48*time.Hour), 2)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	last := []map[string]string{{}, {}}
	for k, w := range sessions {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("dir%d/f%d.txt", i%3, i%5)
				data := fmt.Sprintf("write %d", i)
				var err error
				if i%4 == 3 {
					err = w.Append(ctx, name, []byte(data))
					if err == nil {
						data = last[k][name] + data
					}
				} else {
					err = w.Write(ctx, name, []byte(data))
				}
				if err != nil && artifacts.CodeOf(err) == artifacts.CodeConflict {
					// The sweep took the workspace between two calls (its
					// index looked idle): nothing of this call was written.
					// Opening it again hydrates the sweep's snapshot, which
					// must hold every write that succeeded before.
					again, oerr := managers[k].Open(ctx, w.Scope())
					if oerr != nil || again != w {
						t.Errorf("session %d: reopen after a sweep: %v", k, oerr)
						return
					}
					reopened[k]++
					for n, want := range last[k] {
						if b, rerr := readAll(w, n); rerr != nil || b != want {
							t.Errorf("session %d: after the sweep %s holds %q (%v), want %q", k, n, b, rerr, want)
							return
						}
					}
					continue
				}
				if err != nil {
					t.Errorf("session %d: write %d: %v", k, i, err)
					return
				}
				last[k][name] = data
			}
		})
	}
	runs := 30
	if testing.Short() {
		runs = 10
	}
	removedIdle := false
	for range runs {
		rep, err := Run(ctx, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour})
		must(t, err)
		for _, it := range rep.Items {
			if it.Decision == Removed {
				// The stale session's index says it is idle, so the sweep may
				// take it between two calls; the fresh one must never go.
				if it.Dir != idle && (!withStale || it.Dir != sessions[1].Dir()) {
					t.Errorf("removed %s: %s", it.Dir, it.Reason)
				}
				if it.Dir == idle {
					removedIdle = true
				}
			}
		}
	}
	close(stop)
	wg.Wait()
	if !removedIdle {
		t.Error("the idle workspace was not removed")
	}
	t.Logf("sessions reopened after a sweep took them: %v", reopened)
	if reopened[0] != 0 {
		t.Errorf("the fresh session was swept %d times", reopened[0])
	}
	for k, w := range sessions {
		if _, err := managers[k].Open(ctx, w.Scope()); err != nil { // set up again if swept last
			t.Fatal(err)
		}
		for name, want := range last[k] {
			f, err := w.Open(name)
			if err != nil {
				t.Fatalf("session %d: %s: %v", k, name, err)
			}
			b := make([]byte, len(want)+1)
			n, _ := f.Read(b)
			f.Close()
			if string(b[:n]) != want {
				t.Errorf("session %d: %s holds %q, want %q", k, name, b[:n], want)
			}
		}
		if _, err := os.Stat(w.Path()); err != nil {
			t.Errorf("session %d: %v", k, err)
		}
	}
}

func readAll(w *workspace.Workspace, name string) (string, error) {
	f, err := w.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}
