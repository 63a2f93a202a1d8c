package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace/bench"
)

// The benchmarks snapshot and hydrate trees of several sizes and report
// the peak heap next to the time, to show that memory does not grow with
// the bytes of the tree (only the zip central directory grows with the
// number of entries). With WORKSPACE_BENCH_SCRATCH set (compare.sh does), they also run
// on the tree already in that scratch root for session bench/s (app
// "bench"), the tree zip and unzip are timed on.

var benchScope = artifacts.SessionScope("bench", "bench", "s")

type benchSize struct {
	files int
	bytes int64
}

// benchSizes: 5x the bytes at the same file count, then 5x the files at
// the same bytes.
var benchSizes = []benchSize{{2000, 40_000_000}, {2000, 200_000_000}, {10000, 200_000_000}}

var (
	benchMu    sync.Mutex
	benchTrees = map[benchSize]string{}
	benchBase  string
)

// benchScratch returns a scratch root holding the benchmark tree of size
// sz as the directory of benchScope, generated once per process.
func benchScratch(b *testing.B, sz benchSize) string {
	benchMu.Lock()
	defer benchMu.Unlock()
	if d, ok := benchTrees[sz]; ok {
		return d
	}
	if benchBase == "" {
		d, err := os.MkdirTemp("", "agentstore-ws-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchBase = d
	}
	scratch := filepath.Join(benchBase, fmt.Sprintf("scratch-%d-%d", sz.files, sz.bytes))
	if err := bench.GenTree(filepath.Join(scratch, DirName(benchScope.App, benchScope.User, benchScope.Session)), sz.files, sz.bytes); err != nil {
		b.Fatal(err)
	}
	benchTrees[sz] = scratch
	return scratch
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchBase != "" {
		os.RemoveAll(benchBase)
	}
	os.Exit(code)
}

// peakHeap runs fn while sampling the heap every 200µs and returns the
// largest heap (bytes of heap objects, live or not yet collected) seen
// above the heap before fn.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	peak := base
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				metrics.Read(s)
				peak = max(peak, s[0].Value.Uint64())
			}
		}
	})
	fn()
	close(stop)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

func benchStore(b *testing.B, dir string) *fsstore.Store {
	st, err := fsstore.Open(dir, fsstore.Options{MaxArtifactBytes: 4 << 30})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

func treeBytes(b *testing.B, scratch string) int64 {
	m, err := New(Options{Scratch: scratch})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	info, err := m.Inspect(context.Background(), DirName(benchScope.App, benchScope.User, benchScope.Session))
	if err != nil {
		b.Fatal(err)
	}
	return info.Bytes
}

func benchCases(b *testing.B, fn func(b *testing.B, scratch string)) {
	if dir := os.Getenv("WORKSPACE_BENCH_SCRATCH"); dir != "" {
		b.Run("tree=given", func(b *testing.B) { fn(b, dir) })
	}
	for _, sz := range benchSizes {
		b.Run(fmt.Sprintf("files=%d,MB=%d", sz.files, sz.bytes/1_000_000), func(b *testing.B) {
			fn(b, benchScratch(b, sz))
		})
	}
}

func BenchmarkSnapshot(b *testing.B) {
	benchCases(b, func(b *testing.B, scratch string) {
		ctx := context.Background()
		st := benchStore(b, b.TempDir())
		m, err := New(Options{Scratch: scratch, Store: artifacts.NewStore(st)})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		b.SetBytes(treeBytes(b, scratch))
		var peak uint64
		var size int64
		b.ResetTimer()
		for b.Loop() {
			peak = max(peak, peakHeap(func() {
				res, err := m.Snapshot(ctx, benchScope, SnapshotOptions{})
				if err != nil {
					b.Fatal(err)
				}
				size = res.Record.Size
			}))
			b.StopTimer()
			if _, err := st.Delete(ctx, benchScope, SnapshotName, artifacts.Selector{Kind: artifacts.SelectAll}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(size)/1e6, "archive-MB")
	})
}

func BenchmarkHydrate(b *testing.B) {
	benchCases(b, func(b *testing.B, scratch string) {
		ctx := context.Background()
		st := benchStore(b, b.TempDir())
		src, err := New(Options{Scratch: scratch, Store: artifacts.NewStore(st)})
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		res, err := src.Snapshot(ctx, benchScope, SnapshotOptions{})
		if err != nil {
			b.Fatal(err)
		}
		target := filepath.Join(filepath.Dir(scratch), filepath.Base(scratch)+"-hydrated")
		os.RemoveAll(target)
		if err := os.Mkdir(target, 0o700); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(target)
		m, err := New(Options{Scratch: target, Store: artifacts.NewStore(st)})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		dir := filepath.Join(target, DirName(benchScope.App, benchScope.User, benchScope.Session))
		b.SetBytes(res.Bytes)
		var peak uint64
		b.ResetTimer()
		for b.Loop() {
			b.StopTimer()
			if err := os.RemoveAll(dir); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			peak = max(peak, peakHeap(func() {
				h, err := m.Hydrate(ctx, benchScope, artifacts.Latest, HydrateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if h.Files != res.Files {
					b.Fatalf("hydrated %d files, snapshot has %d", h.Files, res.Files)
				}
			}))
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	})
}
