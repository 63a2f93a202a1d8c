package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// full reports whether the full-size tests were asked for.
func full() bool { return os.Getenv("AGENTSTORE_SWEEP_FULL") == "1" }

// population describes a generated scratch root.
type population struct {
	scratch string
	idle    map[string]artifacts.Scope // dir -> scope
	others  []string                   // every other entry
}

// populate generates n entries under scratch: every 40th an idle
// workspace (3 small files), every 101st a forged one (a copy of an idle
// workspace's index under another DirName), every 103rd a directory
// without an index, and the rest active workspaces (1 file, last access an
// hour ago).
func populate(tb testing.TB, scratch string, n int) *population {
	tb.Helper()
	p := &population{scratch: scratch, idle: map[string]artifacts.Scope{}}
	var firstIdle string
	for i := range n {
		sc := scopeN(i)
		switch {
		case i%40 == 0:
			d := makeWorkspace(tb, scratch, sc, t0.Add(-72*time.Hour), 3)
			p.idle[d] = sc
			if firstIdle == "" {
				firstIdle = d
			}
		case i%101 == 7 && firstIdle != "":
			d := workspace.DirName(sc.App, "forged", sc.Session)
			must(tb, os.Mkdir(filepath.Join(scratch, d), 0o700))
			b, err := os.ReadFile(filepath.Join(scratch, firstIdle, workspace.IndexName))
			must(tb, err)
			must(tb, os.WriteFile(filepath.Join(scratch, d, workspace.IndexName), b, 0o600))
			p.others = append(p.others, d)
		case i%103 == 9:
			d := fmt.Sprintf("noindex-%d", i)
			must(tb, os.Mkdir(filepath.Join(scratch, d), 0o700))
			must(tb, os.WriteFile(filepath.Join(scratch, d, "f"), []byte("x"), 0o600))
			p.others = append(p.others, d)
		default:
			p.others = append(p.others, makeWorkspace(tb, scratch, sc, t0.Add(-time.Hour), 1))
		}
	}
	return p
}

// TestSweepScale sweeps a scratch root of 2,000 entries (20,000 with
// AGENTSTORE_SWEEP_FULL=1), 1 in 40 of them idle: exactly the idle ones
// are removed, every one with a snapshot that verifies, and a sample of 50
// hydrates back to the very tree. Each snapshot costs a few fsyncs, which
// is why only 1 in 40 is idle.
func TestSweepScale(t *testing.T) {
	n := 2000
	if full() {
		n = 20000
	}
	scratch := t.TempDir()
	start := time.Now()
	pop := populate(t, scratch, n)
	st, err := fsstore.Open(t.TempDir(), fsstore.Options{MaxScanEntries: 4 * n})
	must(t, err)
	sample := map[string]string{}
	for d := range pop.idle {
		if len(sample) == 50 {
			break
		}
		sample[d] = treeOf(t, filepath.Join(scratch, d))
	}
	t.Logf("generated %d entries (%d idle) in %s", n, len(pop.idle), time.Since(start).Round(time.Millisecond))

	start = time.Now()
	rep := run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: 24 * time.Hour, Workers: 8})
	t.Logf("swept %d entries, removed %d, in %s", len(rep.Items), rep.Removed, time.Since(start).Round(time.Millisecond))

	if rep.Removed != len(pop.idle) || len(rep.Items) != n {
		t.Fatalf("removed %d of %d idle; %d items for %d entries", rep.Removed, len(pop.idle), len(rep.Items), n)
	}
	items := byDir(rep)
	var mu sync.Mutex
	dirs := make([]string, 0, len(pop.idle))
	for d := range pop.idle {
		dirs = append(dirs, d)
	}
	must(t, parallel(context.Background(), 8, len(dirs), func(i int) {
		d := dirs[i]
		it := items[d]
		fail := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			t.Errorf(d+": "+format, args...)
		}
		if it.Decision != Removed || it.SnapshotVersion != 1 {
			fail("%s v%d: %s", it.Decision, it.SnapshotVersion, it.Reason)
			return
		}
		if _, err := os.Lstat(filepath.Join(scratch, d)); err == nil {
			fail("still exists")
		}
		if err := readVersion(artifacts.NewStore(st), pop.idle[d], 1); err != nil {
			fail("v1 does not verify: %v", err)
		}
	}))
	for d, tree := range sample {
		if got := hydrateTree(t, artifacts.NewStore(st), pop.idle[d], 1); got != tree {
			t.Errorf("%s hydrates to\n%s\nwant\n%s", d, got, tree)
		}
	}
	for _, d := range pop.others {
		if _, err := os.Lstat(filepath.Join(scratch, d)); err != nil {
			t.Errorf("%s: %v", d, err)
		}
		if items[d].Decision == Removed {
			t.Errorf("%s removed", d)
		}
	}
	noLeftovers(t, scratch)
}

var (
	benchOnce    sync.Once
	benchScratch string
	benchStore   *fsstore.Store
)

// BenchmarkPlan plans a sweep (a dry run: every entry inspected, every idle
// one fingerprinted and its next snapshot version looked up) over a
// scratch root of 20,000 entries, 500 of them idle.
func BenchmarkPlan(b *testing.B) {
	benchOnce.Do(func() {
		d, err := os.MkdirTemp("", "agentstore-sweep-bench-")
		must(b, err)
		benchScratch = filepath.Join(d, "scratch")
		must(b, os.Mkdir(benchScratch, 0o700))
		must(b, os.Mkdir(filepath.Join(d, "store"), 0o700))
		populate(b, benchScratch, 20000)
		benchStore, err = fsstore.Open(filepath.Join(d, "store"), fsstore.Options{})
		must(b, err)
	})
	for b.Loop() {
		rep, err := Run(context.Background(), Options{Scratch: benchScratch, Store: artifacts.NewStore(benchStore), Idle: 24 * time.Hour, DryRun: true, Now: fixedNow})
		if err != nil || rep.Removed != 500 {
			b.Fatalf("%v: would remove %d", err, rep.Removed)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/20000, "ns/entry")
}

// crashChild runs this test binary as the child process of a crash test
// when the environment asks for one, and reports whether it did. The crash
// tests (crash_test.go, build tag crash) set it; otherwise it is nil.
var crashChild func() (code int, ok bool)

func TestMain(m *testing.M) {
	if crashChild != nil {
		if code, ok := crashChild(); ok {
			os.Exit(code)
		}
	}
	code := m.Run()
	if benchScratch != "" {
		os.RemoveAll(filepath.Dir(benchScratch))
	}
	os.Exit(code)
}
