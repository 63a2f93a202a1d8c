package sweep

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// The crash test runs this test binary again as a child process that
// sweeps until it is killed or done. The child reports its progress on
// stdout, a line per point it passes: "start" before the sweep, "plan
// i/n" and "sweep i/n" from Options.Progress, and "STEP DIR" from the
// step hook of every removal. With childFreezeEnv set to a kill point it
// stops at that point (holding every other worker at its next report)
// until it is killed.
const (
	childScratchEnv = "SWEEP_CHILD_SCRATCH"
	childStoreEnv   = "SWEEP_CHILD_STORE"
	childFreezeEnv  = "SWEEP_CHILD_FREEZE"
)

func runChild(scratch, store string) int {
	var freeze *killPoint
	if v := os.Getenv(childFreezeEnv); v != "" {
		kp, err := parseKillPoint(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		freeze = &kp
	}
	var mu sync.Mutex
	seen := 0
	report := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		// Unbuffered: the parent sees each line as soon as it is passed.
		fmt.Println(line)
		if freeze != nil && freeze.matches(line) {
			if seen++; seen == freeze.n {
				// Stay here, holding mu, until the parent kills this
				// process; it never writes to stdin, so the read ends
				// only when the parent is gone.
				io.Copy(io.Discard, os.Stdin)
				os.Exit(2)
			}
		}
	}
	st, err := fsstore.Open(store, fsstore.Options{MaxScanEntries: 100_000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	report("start")
	opts := Options{Scratch: scratch, Store: st, Idle: time.Hour, Workers: 3,
		Progress: func(phase string, done, total int) { report(fmt.Sprintf("%s %d/%d", phase, done, total)) },
		hook: func(step, dir string) error {
			report(step + " " + dir)
			return nil
		},
	}
	if _, err := Run(context.Background(), opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// killPoint is where a run of the child is killed: when it has reported
// its n-th line of the given kind (the line's first word: "start", "plan",
// "sweep" or a step), of any kind when kind is "". With freeze the child
// stops there and waits for the kill; without, it runs on, and the kill
// lands wherever it has got to by then.
type killPoint struct {
	kind   string
	n      int
	freeze bool
}

func (k killPoint) matches(line string) bool {
	return k.kind == "" || strings.HasPrefix(line, k.kind+" ") || line == k.kind
}

func (k killPoint) String() string {
	mode := "running"
	if k.freeze {
		mode = "frozen"
	}
	kind := k.kind
	if kind == "" {
		kind = "any"
	}
	return fmt.Sprintf("%s %d %s", kind, k.n, mode)
}

func parseKillPoint(s string) (killPoint, error) {
	var k killPoint
	var mode string
	if _, err := fmt.Sscanf(s, "%s %d %s", &k.kind, &k.n, &mode); err != nil || k.n < 1 || (mode != "running" && mode != "frozen") {
		return k, fmt.Errorf("bad kill point %q", s)
	}
	if k.kind == "any" {
		k.kind = ""
	}
	k.freeze = mode == "frozen"
	return k, nil
}

// childOutcome is how a run of the child ended.
type childOutcome int

const (
	childKilled   childOutcome = iota // by the parent's SIGKILL, at its kill point
	childFinished                     // the sweep ended before the kill point was reached or the kill landed
)

// runChildTo runs the child on scratch and store and kills it with
// SIGKILL as soon as it reports kp. It returns whether the kill happened
// or the child finished first, and the child's last report. Any other end
// of the child fails the test.
func runChildTo(t *testing.T, scratch, store string, kp killPoint) (childOutcome, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childScratchEnv+"="+scratch, childStoreEnv+"="+store, childFreezeEnv+"=")
	if kp.freeze {
		cmd.Env[len(cmd.Env)-1] += kp.String()
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	must(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	seen, last, reached := 0, "", false
	for !reached && sc.Scan() {
		last = sc.Text()
		if kp.matches(last) {
			seen++
			reached = seen == kp.n
		}
	}
	if reached {
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}
	// Read to the end, so that a child that runs on never blocks on a
	// full pipe before the kill lands.
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return childFinished, last
	case reached && errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		return childKilled, last
	}
	t.Fatalf("the sweeping child (kill point %s, last report %q) failed: %v\n%s", kp, last, err, stderr.String())
	return 0, ""
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
			rec, err := st.Stat(context.Background(), w.scope, workspace.SnapshotName, 0)
			if err != nil {
				t.Fatalf("%s: %s is neither a directory nor a snapshot: %v", when, w.dir, err)
			}
			if rec.Version == w.verified {
				continue
			}
			if _, err := verify(context.Background(), st, root, w.scope, rec.Version, "", w.want); err != nil {
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
		var kp killPoint
		switch {
		case kills == runs-1:
			// The last kill leaves a tombstone for the last sweep.
			kp = killPoint{kind: "renamed", n: 1 + rng.IntN(idleLeft), freeze: true}
		case kills%2 == 0:
			kp = killPoint{kind: steps[kills/2%len(steps)], n: 1 + rng.IntN(idleLeft), freeze: true}
		default:
			kp = killPoint{n: 1 + rng.IntN(least), freeze: rng.IntN(2) == 0}
		}
		outcome, last := runChildTo(t, scratch, storeDir, kp)
		if outcome == childFinished {
			t.Logf("the child finished before its kill point %s (at least %d reports expected; its last was %q): run again", kp, least, last)
			if finished++; finished > runs {
				t.Fatalf("the child finished %d times before its kill point (last: %s, at least %d reports expected; its last was %q): its progress reports do not match its work", finished, kp, least, last)
			}
			continue
		}
		kills++
		if kp.freeze {
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
	rep := run(t, Options{Scratch: scratch, Store: st, Idle: time.Hour, Now: time.Now})
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
