package sweep

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// The crash test runs this test binary again as a child process that
// sweeps until it is killed or done.
const (
	childScratchEnv = "SWEEP_CHILD_SCRATCH"
	childStoreEnv   = "SWEEP_CHILD_STORE"
)

func runChild(scratch, store string) int {
	st, err := fsstore.Open(store, fsstore.Options{MaxScanEntries: 100_000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := Run(context.Background(), Options{Scratch: scratch, Store: st, Idle: time.Hour, Workers: 3}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// crashWorkspace is a workspace the crash test made, with what its
// snapshot must list.
type crashWorkspace struct {
	dir   string
	scope artifacts.Scope
	tree  string
	want  snapSummary
}

// TestCrashSafety kills a sweeping child process with SIGKILL at random
// moments, hundreds of times (20 with -short, 300 with
// AGENTSTORE_SWEEP_FULL=1, 60 otherwise), adding idle workspaces as they
// are swept. After every kill each workspace exists either as its
// directory, unchanged, or as a snapshot that verifies and lists exactly
// its files and their checksums, never neither; tombstones left by a kill
// are finished off by the next sweep; a last sweep leaves nothing of its
// own behind.
func TestCrashSafety(t *testing.T) {
	runs := 60
	switch {
	case testing.Short():
		runs = 20
	case full():
		runs = 300
	}
	scratch, storeDir := t.TempDir(), t.TempDir()
	st, err := fsstore.Open(storeDir, fsstore.Options{MaxScanEntries: 100_000})
	must(t, err)
	root, err := os.OpenRoot(scratch)
	must(t, err)
	defer root.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	var all []*crashWorkspace
	next := 0
	// Two active workspaces that must survive every sweep.
	active := []string{
		makeWorkspace(t, scratch, scopeN(100000), time.Now().Add(24*time.Hour), 3),
		makeWorkspace(t, scratch, scopeN(100001), time.Now().Add(24*time.Hour), 3),
	}
	addBatch := func() {
		for range 8 {
			sc := scopeN(next)
			next++
			nfiles := 3 + rng.IntN(40)
			if rng.IntN(4) == 0 {
				nfiles = 300 // slower to remove: more kills land mid-removal
			}
			d := makeWorkspace(t, scratch, sc, time.Now().Add(-48*time.Hour), nfiles)
			r, err := root.OpenRoot(d)
			must(t, err)
			fp, err := fingerprint(r, d, true)
			r.Close()
			must(t, err)
			all = append(all, &crashWorkspace{dir: d, scope: sc, tree: treeOf(t, filepath.Join(scratch, d)), want: summaryOf(fp)})
		}
	}
	check := func(when string) (tombstones int) {
		t.Helper()
		for _, n := range entriesOf(t, scratch) {
			if _, ok := parseTombstone(n); ok {
				tombstones++
			}
		}
		for _, w := range all {
			if _, err := os.Lstat(filepath.Join(scratch, w.dir)); err == nil {
				if got := treeOf(t, filepath.Join(scratch, w.dir)); got != w.tree {
					t.Fatalf("%s: %s changed: %d lines, was %d; entries %v", when, w.dir, len(strings.Split(got, "\n")), len(strings.Split(w.tree, "\n")), entriesOf(t, scratch))
				}
				continue
			}
			rec, err := st.Stat(context.Background(), w.scope, workspace.SnapshotName, 0)
			if err != nil {
				t.Fatalf("%s: %s is neither a directory nor a snapshot: %v", when, w.dir, err)
			}
			if _, err := verify(context.Background(), st, root, w.scope, rec.Version, "", w.want); err != nil {
				t.Fatalf("%s: %s is gone and its snapshot v%d does not verify: %v", when, w.dir, rec.Version, err)
			}
		}
		for _, d := range active {
			if _, err := os.Lstat(filepath.Join(scratch, d)); err != nil {
				t.Fatalf("%s: active workspace %s: %v", when, d, err)
			}
		}
		return tombstones
	}
	addBatch()
	var kills, finished, sawTombstones int
	start := time.Now()
	for i := range runs {
		if remaining := check(fmt.Sprintf("run %d", i)); remaining > 0 {
			sawTombstones++
		}
		idleLeft := 0
		for _, w := range all {
			if _, err := os.Lstat(filepath.Join(scratch, w.dir)); err == nil {
				idleLeft++
			}
		}
		if idleLeft < 4 {
			addBatch()
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childScratchEnv+"="+scratch, childStoreEnv+"="+storeDir)
		cmd.Stderr = os.Stderr
		must(t, cmd.Start())
		time.Sleep(time.Duration(rng.IntN(250)) * time.Millisecond)
		_ = cmd.Process.Kill()
		if err := cmd.Wait(); err == nil {
			finished++
		} else {
			kills++
		}
	}
	tomb := check("after the last kill")
	t.Logf("%d runs in %s: %d killed, %d finished; tombstones found after a kill %d times; %d workspaces", runs, time.Since(start).Round(time.Millisecond), kills, finished, sawTombstones, len(all))
	if kills < runs/2 {
		t.Errorf("only %d of %d runs were killed", kills, runs)
	}
	rep := run(t, Options{Scratch: scratch, Store: st, Idle: time.Hour, Now: time.Now})
	if rep.Problems() != 0 {
		t.Fatalf("the last sweep found problems: %+v", rep.Items)
	}
	if tomb > 0 {
		done := 0
		for _, it := range rep.Items {
			if it.Decision == Removed && parseTombstoneOK(it.Dir) {
				done++
			}
		}
		if done != tomb {
			t.Errorf("%d tombstones, %d finished off", tomb, done)
		}
	}
	noLeftovers(t, scratch)
	check("after the last sweep")
	for i, w := range all {
		if _, err := os.Lstat(filepath.Join(scratch, w.dir)); err == nil {
			t.Errorf("%s still exists after the last sweep", w.dir)
		}
		if i%10 == 0 {
			rec, err := st.Stat(context.Background(), w.scope, workspace.SnapshotName, 0)
			must(t, err)
			if got := hydrateTree(t, st, w.scope, rec.Version); got != w.tree {
				t.Errorf("%s v%d hydrates to\n%s", w.dir, rec.Version, got)
			}
		}
	}
}

func parseTombstoneOK(name string) bool {
	_, ok := parseTombstone(name)
	return ok
}
