//go:build crash

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

	"github.com/agentstore/agentstore/internal/crashtest"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// The crash test runs this test binary again as a child process that
// sweeps until it is killed or done. The child reports its progress on
// stdout through a crashtest.Reporter, a line per point it passes: "start"
// before the sweep, "plan i/n" and "sweep i/n" from Options.Progress, and
// "STEP DIR" from the step hook of every removal.
const (
	childScratchEnv = "SWEEP_CHILD_SCRATCH"
	childStoreEnv   = "SWEEP_CHILD_STORE"
)

func init() {
	crashChild = func() (int, bool) {
		scratch := os.Getenv(childScratchEnv)
		if scratch == "" {
			return 0, false
		}
		return runChild(scratch, os.Getenv(childStoreEnv)), true
	}
}

func runChild(scratch, store string) int {
	rep, err := crashtest.NewReporter()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := fsstore.Open(store, fsstore.Options{MaxScanEntries: 100_000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rep.Report("start")
	opts := Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour, Workers: 3,
		Progress: func(phase string, done, total int) { rep.Report(fmt.Sprintf("%s %d/%d", phase, done, total)) },
		hook: func(step, dir string) error {
			rep.Report(step + " " + dir)
			return nil
		},
	}
	if _, err := Run(context.Background(), opts); err != nil {
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
	// verified is the snapshot version last verified (versions never
	// change once written, so a check after a kill skips it).
	verified int64
}

// TestCrashSafety kills a sweeping child process with SIGKILL, hundreds of
// times (20 with -short, 300 with AGENTSTORE_SWEEP_FULL=1, 60 otherwise),
// adding idle workspaces as they are swept. Kill points come from the
// child's own progress reports, not from the clock, so that the number of
// kills is the test's and not the machine's: every other kill stops the
// child at a step of a removal (each step in turn, at a random workspace),
// the others land after a random report while the child runs on; runs
// that finish before their kill point are run again. After every kill each
// workspace exists either as its directory, unchanged, or as a snapshot
// that verifies and lists exactly its files and their checksums, never
// neither; tombstones left by a kill are finished off by the next sweep; a
// last sweep leaves nothing of its own behind.
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
	// Batches are small, so that a run's kill point is never far off: the
	// work of the test grows with the workspaces swept, not the kills.
	const batch = 5
	addBatch := func() {
		for range batch {
			sc := scopeN(next)
			next++
			nfiles := 3 + rng.IntN(30)
			if rng.IntN(4) == 0 {
				nfiles = 120 // slower to remove: more kills land mid-removal
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
			rec, err := st.Stat(context.Background(), w.scope, workspace.SnapshotName, artifacts.Latest)
			if err != nil {
				t.Fatalf("%s: %s is neither a directory nor a snapshot: %v", when, w.dir, err)
			}
			if rec.Version == w.verified {
				continue
			}
			if _, err := verify(context.Background(), artifacts.NewStore(st), root, w.scope, rec.Version, "", w.want); err != nil {
				t.Fatalf("%s: %s is gone and its snapshot v%d does not verify: %v", when, w.dir, rec.Version, err)
			}
			w.verified = rec.Version
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
	stepKills := map[string]int{}
	start := time.Now()
	for kills < runs {
		if remaining := check(fmt.Sprintf("kill %d", kills)); remaining > 0 {
			sawTombstones++
		}
		idleLeft := 0
		for _, w := range all {
			if _, err := os.Lstat(filepath.Join(scratch, w.dir)); err == nil {
				idleLeft++
			}
		}
		if idleLeft < 3 {
			addBatch()
			idleLeft += batch
		}
		// Every idle directory is planned and goes through every step and
		// a "sweep" report; so do the active ones' plans and the start:
		// the child reports at least this many lines before it is done.
		least := 1 + idleLeft + len(active) + idleLeft*(len(steps)+1)
		var kp crashtest.Point
		switch {
		case kills == runs-1:
			// The last kill leaves a tombstone for the last sweep.
			kp = crashtest.Point{Kind: "renamed", N: 1 + rng.IntN(idleLeft), Freeze: true}
		case kills%2 == 0:
			kp = crashtest.Point{Kind: steps[kills/2%len(steps)], N: 1 + rng.IntN(idleLeft), Freeze: true}
		default:
			kp = crashtest.Point{N: 1 + rng.IntN(least), Freeze: rng.IntN(2) == 0}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childScratchEnv+"="+scratch, childStoreEnv+"="+storeDir)
		outcome, last, err := crashtest.Run(cmd, kp, nil)
		if err != nil {
			t.Fatalf("the sweeping child: %v", err)
		}
		if outcome == crashtest.Finished {
			t.Logf("the child finished before its kill point %s (at least %d reports expected; its last was %q): run again", kp, least, last)
			if finished++; finished > runs {
				t.Fatalf("the child finished %d times before its kill point (last: %s, at least %d reports expected; its last was %q): its progress reports do not match its work", finished, kp, least, last)
			}
			continue
		}
		kills++
		if kp.Freeze {
			stepKills[strings.Fields(last)[0]]++
		}
	}
	tomb := check("after the last kill")
	t.Logf("%d kills and %d finished runs in %s; frozen kills by step %v; tombstones found after a kill %d times; %d workspaces", kills, finished, time.Since(start).Round(time.Millisecond), stepKills, sawTombstones, len(all))
	for _, s := range steps {
		if runs >= 2*len(steps) && stepKills[s] == 0 {
			t.Errorf("no kill at step %s", s)
		}
	}
	if tomb == 0 {
		t.Fatal("the last kill, at a renamed workspace, left no tombstone")
	}
	rep := run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour, Now: time.Now})
	if rep.Problems() != 0 {
		t.Fatalf("the last sweep found problems: %+v", rep.Items)
	}
	done := 0
	for _, it := range rep.Items {
		if it.Decision == Removed && parseTombstoneOK(it.Dir) {
			done++
		}
	}
	if done != tomb {
		t.Errorf("%d tombstones, %d finished off", tomb, done)
	}
	noLeftovers(t, scratch)
	for _, w := range all {
		w.verified = 0 // verify every snapshot once more
	}
	check("after the last sweep")
	for i, w := range all {
		if _, err := os.Lstat(filepath.Join(scratch, w.dir)); err == nil {
			t.Errorf("%s still exists after the last sweep", w.dir)
		}
		if i%10 == 0 {
			rec, err := st.Stat(context.Background(), w.scope, workspace.SnapshotName, artifacts.Latest)
			must(t, err)
			if got := hydrateTree(t, artifacts.NewStore(st), w.scope, rec.Version); got != w.tree {
				t.Errorf("%s v%d hydrates to\n%s", w.dir, rec.Version, got)
			}
		}
	}
}

func parseTombstoneOK(name string) bool {
	_, ok := parseTombstone(name)
	return ok
}
