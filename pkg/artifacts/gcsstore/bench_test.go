package gcsstore_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// emulatorEnv makes the test binary serve an emulator instead of running
// tests: memory measurements then see the client's heap only.
const emulatorEnv = "GCSSTORE_TEST_EMULATOR_PROCESS"

func TestMain(m *testing.M) {
	if os.Getenv(emulatorEnv) == "1" {
		srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testBucket})
		fmt.Println(srv.URL())
		io.Copy(io.Discard, os.Stdin) // until the parent closes stdin
		srv.Stop()
		return
	}
	os.Exit(m.Run())
}

// externalEmulator starts an emulator in a child process (this test binary)
// and returns its URL.
func externalEmulator(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), emulatorEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("emulator process: %v", err)
	}
	return strings.TrimSpace(line)
}

// pattern yields n bytes without holding them.
type pattern struct{ n, off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	m := min(int64(len(b)), p.n-p.off)
	for i := range m {
		b[i] = byte((p.off + i) * 31)
	}
	p.off += m
	return int(m), nil
}

// peakHeap runs fn and returns the highest HeapInuse seen while it ran,
// less HeapInuse before it, sampling every 2 ms.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	fn()
	close(stop)
	wg.Wait()
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

func benchPut(b *testing.B, s *gcsstore.Store, size int64) {
	ctx := context.Background()
	sc := artifacts.AppScope("bench")
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Put(ctx, sc, "put", &pattern{n: size}, artifacts.PutOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchGet(b *testing.B, s *gcsstore.Store, size int64) {
	ctx := context.Background()
	sc := artifacts.AppScope("bench")
	if _, err := s.Put(ctx, sc, "get", &pattern{n: size}, artifacts.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		r, err := s.Get(ctx, sc, "get", artifacts.Latest)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, r); err != nil || n != size {
			b.Fatalf("Get: %d bytes, %v", n, err)
		}
		r.Close()
	}
}

// BenchmarkPut measures puts against the in-process emulator.
func BenchmarkPut(b *testing.B) {
	for _, size := range []int64{1 << 10, 64 << 20} {
		b.Run(sizeName(size), func(b *testing.B) {
			s, _ := newStore(b, gcsstore.Options{MaxScanEntries: 1 << 30})
			benchPut(b, s, size)
		})
	}
}

// BenchmarkGet measures verified whole-object reads against the in-process
// emulator.
func BenchmarkGet(b *testing.B) {
	for _, size := range []int64{1 << 10, 64 << 20} {
		b.Run(sizeName(size), func(b *testing.B) {
			s, _ := newStore(b, gcsstore.Options{})
			benchGet(b, s, size)
		})
	}
}

// BenchmarkHeap reports the client's peak heap growth during one put and
// one get (metric peak-heap-MiB), against an emulator in a child process.
func BenchmarkHeap(b *testing.B) {
	for _, size := range []int64{8 << 20, 64 << 20} {
		for _, op := range []string{"put", "get"} {
			b.Run(op+"/"+sizeName(size), func(b *testing.B) {
				s := openStore(b, newClient(b, externalEmulator(b)), gcsstore.Options{MaxScanEntries: 1 << 30})
				ctx := context.Background()
				sc := artifacts.AppScope("heap")
				if op == "get" {
					if _, err := s.Put(ctx, sc, "x", &pattern{n: size}, artifacts.PutOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(size)
				var peak uint64
				b.ResetTimer()
				for b.Loop() {
					p := peakHeap(func() {
						if op == "put" {
							if _, err := s.Put(ctx, sc, "x", &pattern{n: size}, artifacts.PutOptions{}); err != nil {
								b.Fatal(err)
							}
							return
						}
						r, err := s.Get(ctx, sc, "x", artifacts.Latest)
						if err != nil {
							b.Fatal(err)
						}
						io.Copy(io.Discard, r)
						r.Close()
					})
					peak = max(peak, p)
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			})
		}
	}
}

// BenchmarkListNames measures a first page (100 names) of a scope of 1,000
// names: cold (a new Store, so every name's record is read to learn it)
// and warm (names cached; only the page's names are listed and read).
func BenchmarkListNames(b *testing.B) {
	srv := newEmulator(b)
	c := newClient(b, srv.URL())
	s := openStore(b, c, gcsstore.Options{})
	ctx := context.Background()
	sc := artifacts.SessionScope("bench", "user", "session")
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 1000; i += 8 {
				if _, err := s.Put(ctx, sc, fmt.Sprintf("names/%04d.txt", i), bytes.NewReader([]byte("x")), artifacts.PutOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	list := func(s *gcsstore.Store) {
		p, err := s.ListNames(ctx, sc, artifacts.ListOptions{})
		if err != nil || len(p.Items) != 100 || p.NextCursor == "" {
			b.Fatalf("ListNames: %d items, %v", len(p.Items), err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			list(openStore(b, c, gcsstore.Options{}))
		}
	})
	b.Run("warm", func(b *testing.B) {
		list(s)
		for b.Loop() {
			list(s)
		}
	})
}

func sizeName(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}
