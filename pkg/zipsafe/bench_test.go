package zipsafe

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// genTree writes files files totalling about totalBytes under dir, 50 per
// directory: nine in ten are source-like text, one in ten random bytes.
// It returns the exact number of bytes written.
func genTree(tb testing.TB, dir string, files int, totalBytes int64) int64 {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 500)
	for i := range words {
		w := make([]byte, 2+rng.IntN(9))
		for j := range w {
			w[j] = byte('a' + rng.IntN(26))
		}
		words[i] = string(w)
	}
	per := totalBytes / int64(files)
	var total int64
	buf := make([]byte, 0, per*2)
	for i := range files {
		size := per/2 + rng.Int64N(per+1)
		buf = buf[:0]
		if i%10 == 9 {
			for int64(len(buf)) < size {
				buf = append(buf, byte(rng.Uint32()))
			}
		} else {
			for int64(len(buf)) < size {
				indent := rng.IntN(4)
				buf = append(buf, strings.Repeat("\t", indent)...)
				for n := 3 + rng.IntN(8); n > 0; n-- {
					buf = append(buf, words[rng.IntN(len(words))]...)
					buf = append(buf, ' ')
				}
				buf = append(buf, '\n')
			}
			buf = buf[:size]
		}
		path := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/50), fmt.Sprintf("file%05d.txt", i))
		if i%50 == 0 {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			tb.Fatal(err)
		}
		total += int64(len(buf))
	}
	return total
}

var (
	benchOnce  sync.Once
	benchDir   string
	benchBytes int64
)

// benchTree returns a tree of AGENTSTORE_BENCH_FILES files (default 1000)
// totalling about AGENTSTORE_BENCH_MB MB (default 20), shared by benchmarks.
func benchTree(b *testing.B) (string, int64) {
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zipsafe-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
		benchBytes = genTree(b, filepath.Join(dir, "src"), envInt("AGENTSTORE_BENCH_FILES", 1000), int64(envInt("AGENTSTORE_BENCH_MB", 20))<<20)
	})
	if benchDir == "" {
		b.Fatal("no bench tree")
	}
	return filepath.Join(benchDir, "src"), benchBytes
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// heapSampler records the peak heap in use above the level at start.
type heapSampler struct {
	base, peak atomic.Uint64
	stop       chan struct{}
	done       chan struct{}
}

func startHeapSampler() *heapSampler {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	h.base.Store(ms.HeapInuse)
	go func() {
		defer close(h.done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > h.peak.Load() {
				h.peak.Store(ms.HeapInuse)
			}
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

// peakMB stops the sampler and returns the peak extra heap in MB.
func (h *heapSampler) peakMB() float64 {
	close(h.stop)
	<-h.done
	p, base := h.peak.Load(), h.base.Load()
	if p < base {
		return 0
	}
	return float64(p-base) / (1 << 20)
}

func writeArchive(b *testing.B, src, path string, level int) WriteStats {
	root, err := os.OpenRoot(src)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	st, err := Write(f, root, WriteOptions{Level: level})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return st
}

func BenchmarkWrite(b *testing.B) {
	src, total := benchTree(b)
	for _, level := range []int{LevelDefault, 6, LevelStore} {
		name := "level=" + strconv.Itoa(level)
		if level == LevelDefault {
			name = "level=default"
		} else if level == LevelStore {
			name = "level=store"
		}
		b.Run(name, func(b *testing.B) {
			out := filepath.Join(b.TempDir(), "out.zip")
			b.SetBytes(total)
			b.ReportAllocs()
			h := startHeapSampler()
			for b.Loop() {
				writeArchive(b, src, out, level)
			}
			b.ReportMetric(h.peakMB(), "peak-heap-MB")
			fi, _ := os.Stat(out)
			b.ReportMetric(float64(fi.Size())/float64(total), "size-ratio")
		})
	}
}

func BenchmarkExtract(b *testing.B) {
	src, total := benchTree(b)
	dir := b.TempDir()
	archive := filepath.Join(dir, "in.zip")
	writeArchive(b, src, archive, LevelDefault)
	b.SetBytes(total)
	b.ReportAllocs()
	h := startHeapSampler()
	for i := 0; i < b.N; i++ {
		target := filepath.Join(dir, "ws"+strconv.Itoa(i))
		if _, err := ExtractFile(archive, target, ExtractOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(target)
		b.StartTimer()
	}
	b.ReportMetric(h.peakMB(), "peak-heap-MB")
}
