package artifactscmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// The benchmark store: one scope of benchNames names with benchVersions
// versions each, built once per test binary run and removed by TestMain.
const (
	benchNames    = 4000
	benchVersions = 3
	benchPage     = 100
)

var benchScope = artifacts.SessionScope("bench", "user", "session")

var benchStore struct {
	once sync.Once
	dir  string // removed by TestMain unless keep
	keep bool
	err  error
}

// benchDirEnv names a directory in which to build the benchmark store
// once and keep it for later runs (building it takes minutes on a slow
// disk: 12,000 durable puts).
const benchDirEnv = "ARTIFACTSCMD_BENCH_DIR"

// benchRoot returns the root of the benchmark store, building it the
// first time with fsstore.Put from parallel goroutines.
func benchRoot(b *testing.B) string {
	b.Helper()
	benchStore.once.Do(func() {
		dir := os.Getenv(benchDirEnv)
		if dir != "" {
			benchStore.dir, benchStore.keep = dir, true
			if err := os.MkdirAll(dir, 0o700); err != nil {
				benchStore.err = err
				return
			}
			if st, err := fsstore.Open(dir, fsstore.Options{}); err == nil {
				if p, err := ListNames(context.Background(), artifacts.NewStore(st), benchScope, 1000, "", true); err == nil && len(p.Items) == benchNames {
					return // built by an earlier run
				}
			}
		} else {
			d, err := os.MkdirTemp("", "artifactscmd-bench-")
			if err != nil {
				benchStore.err = err
				return
			}
			benchStore.dir = d
		}
		benchStore.err = buildBenchStore(benchStore.dir)
	})
	if benchStore.err != nil {
		b.Fatal(benchStore.err)
	}
	return benchStore.dir
}

// buildBenchStore puts benchVersions versions of benchNames names into the
// store at dir, from 32 goroutines.
func buildBenchStore(dir string) error {
	st, err := fsstore.Open(dir, fsstore.Options{})
	if err != nil {
		return err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= benchNames || stop {
					return
				}
				name := fmt.Sprintf("bench/%05d.txt", i)
				for v := range benchVersions {
					if _, err := st.Put(context.Background(), benchScope, name, strings.NewReader(fmt.Sprintf("%s v%d", name, v+1)),
						artifacts.PutOptions{MIMEType: "text/plain", Metadata: artifacts.Metadata{"i": int64(i)}}); err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// benchCursors returns the cursors of the 40 pages of 100 names.
func benchCursors() []string {
	cursors := []string{""}
	for i := benchPage; i < benchNames; i += benchPage {
		cursors = append(cursors, fmt.Sprintf("bench/%05d.txt", i-1))
	}
	return cursors
}

// BenchmarkListPageLibrary is the floor of BenchmarkListPageCommand: one
// page of 100 names of the 4,000-name scope (the op cycles through the 40
// pages) straight from fsstore's ListNames, the call "artifacts list
// --limit 100 [--cursor NAME]" wraps. "warm" reuses one opened store, as
// its name cache then allows; "cold" opens the store for each page, as a
// separate command run does.
func BenchmarkListPageLibrary(b *testing.B) {
	root := benchRoot(b)
	cursors := benchCursors()
	ctx := context.Background()
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			st, err := fsstore.Open(root, fsstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				if mode == "cold" {
					if st, err = fsstore.Open(root, fsstore.Options{}); err != nil {
						b.Fatal(err)
					}
				}
				page, err := st.ListNames(ctx, benchScope, artifacts.ListOptions{Limit: benchPage, Cursor: cursors[i%len(cursors)]})
				if err != nil || len(page.Items) != benchPage {
					b.Fatalf("page %d: %d names, %v", i%len(cursors), len(page.Items), err)
				}
			}
		})
	}
}

// BenchmarkListPageCommand lists the same pages through the command's run
// function (runList with --limit 100 and the page's --cursor), printing
// JSON (or, for table/warm, a plain table) into a buffer; warm and cold
// as in BenchmarkListPageLibrary.
func BenchmarkListPageCommand(b *testing.B) {
	root := benchRoot(b)
	cursors := benchCursors()
	for _, tc := range []struct{ output, mode string }{
		{cmdutil.OutputJSON, "warm"}, {cmdutil.OutputJSON, "cold"}, {cmdutil.OutputTable, "warm"},
	} {
		b.Run(tc.output+"/"+tc.mode, func(b *testing.B) {
			ios, _, out, _ := iostreams.Test()
			f := cmdutil.NewFactory(ios)
			f.SetConfig(&cmdutil.Config{Store: root, Output: tc.output, LogFormat: cmdutil.LogText})
			opts := &ListOptions{deps: depsOf(f), Scope: benchScope, Limit: benchPage}
			warm, err := fsstore.Open(root, fsstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			opts.OpenStore = func(context.Context) (*artifacts.Store, error) {
				if tc.mode == "warm" {
					return artifacts.NewStore(warm), nil
				}
				cold, err := fsstore.Open(root, fsstore.Options{})
				if err != nil {
					return nil, err
				}
				return artifacts.NewStore(cold), nil
			}
			ctx := context.Background()
			for i := 0; b.Loop(); i++ {
				out.Reset()
				opts.Cursor = cursors[i%len(cursors)]
				if err := runList(ctx, opts); err != nil {
					b.Fatal(err)
				}
			}
			if !strings.Contains(out.String(), "bench/") {
				b.Fatal("no name in the output")
			}
		})
	}
}

// TestBenchStoreShape builds a small version of the benchmark listing to
// keep the benchmark code honest under go test (benchmarks do not run
// there): runList over a store of a few names gives every name once.
func TestBenchStoreShape(t *testing.T) {
	root := t.TempDir()
	st, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := st.Put(context.Background(), benchScope, fmt.Sprintf("bench/%05d.txt", i), strings.NewReader("x"), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnvAt(root, cmdutil.OutputJSON, false)
	if err := e.list("--app", "bench", "--user", "user", "--session", "session", "--limit", "2", "--all"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(e.out.String(), `"name": "bench/`); got != 5 {
		t.Errorf("%d names:\n%s", got, e.out)
	}
}

// BenchmarkListJSON writes what "artifacts list -o json" writes for a
// page of 1,000 names (a ListResult, with output.JSON) and, beside it,
// the same value with the encoder's own indentation (SetIndent), which
// output.JSON's one pass replaced; that row skips output.JSON's scan for
// hidden characters, so it flatters the encoder a little. Numbers:
// docs/performance.md.
func BenchmarkListJSON(b *testing.B) {
	store := "gs://bucket"
	res := ListResult{Scope: ScopeJSON(benchScope), Items: make([]NameItem, 1000)}
	res.Store = &store
	for i := range res.Items {
		res.Items[i] = NameItem{Name: fmt.Sprintf("name-%04d.txt", i), LatestVersion: 1, Versions: 1, Size: 1, MIMEType: "text/plain", CreatedAt: "2026-12-01T19:45:58.123Z", CreatedAtMS: 1796154391123}
	}
	b.Run("JSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := output.JSON(io.Discard, res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoder-indent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(res); err != nil {
				b.Fatal(err)
			}
			if _, err := io.Discard.Write(buf.Bytes()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
