package adkgcs_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/quota"
)

// counting counts the HTTP requests a client sends.
type counting struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// countingStore opens the bucket's root through a client whose requests
// are counted.
func countingStore(b *testing.B, url string) (*artifacts.Store, *counting) {
	b.Helper()
	cnt := &counting{next: http.DefaultTransport}
	c, err := storage.NewClient(context.Background(), option.WithEndpoint(url+"/storage/v1/"),
		option.WithoutAuthentication(), storage.WithJSONReads(), option.WithHTTPClient(&http.Client{Transport: cnt}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return artifacts.NewStore(openStore(b, c, "", adkgcsOptions(0))), cnt
}

// BenchmarkListSession lists one session of 1,000 names (one version each)
// in full: one flat listing of the session's prefix, one request per 1,000
// objects.
func BenchmarkListSession(b *testing.B) {
	srv := newEmulator(b)
	for i := range 1000 {
		putObject(srv, fmt.Sprintf("app/u-1/s-1/file-%04d.txt/0", i), []byte("x"), "text/plain", nil)
	}
	st, cnt := countingStore(b, srv.URL())
	cnt.n.Store(0)
	for b.Loop() {
		page, err := st.ListNames(b.Context(), sessionScope, artifacts.ListOptions{Limit: 1000})
		if err != nil || len(page.Items) != 1000 {
			b.Fatalf("%d names, %v", len(page.Items), err)
		}
	}
	b.ReportMetric(float64(cnt.n.Load())/float64(b.N), "requests/op")
}

// BenchmarkQuotaReport computes a store-wide quota report over
// $ADKGCS_BENCH_OBJECTS objects (default 100,000: 100 sessions of 1,000
// versions) and reports the requests it sent: one flat listing of the
// bucket, one request per 1,000 objects, no per-object read.
//
// The emulator keeps the objects in its filesystem backend below
// $ADKGCS_BENCH_DIR (default a temporary directory; /dev/shm keeps fsync
// out of the seeding): its memory backend scans every stored object on
// each insert (fake-gcs-server 1.56.1, internal/backend/memory.go,
// findObject), so seeding 100,000 objects there takes hours, while the
// filesystem backend writes one file each. That backend reads every
// object's attributes on each listing page, so most of the time measured
// is the emulator's; requests/op is what the store costs.
func BenchmarkQuotaReport(b *testing.B) {
	n := 100_000
	if v := os.Getenv("ADKGCS_BENCH_OBJECTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1000 || n%1000 != 0 {
			b.Fatalf("ADKGCS_BENCH_OBJECTS=%q: want a multiple of 1000", v)
		}
	}
	dir := os.Getenv("ADKGCS_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	} else {
		var err error
		if dir, err = os.MkdirTemp(dir, "adkgcs-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	srv := newFSEmulator(b, dir)
	for s := range n / 1000 {
		for i := range 1000 {
			putObject(srv, fmt.Sprintf("app/u-%d/s-%d/f-%d/%d", s%10, s, i%100, i/100), []byte("x"), "text/plain", nil)
		}
	}
	st, cnt := countingStore(b, srv.URL())
	cnt.n.Store(0)
	// No deadline: the walk is bounded by its progress only, and this
	// emulator takes many minutes to list 100,000 objects 1,000 at a time.
	ctx := b.Context()
	for b.Loop() {
		r, err := quota.Compute(ctx, st, quota.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if r.Store.Versions != int64(n) {
			b.Fatalf("%d versions, want %d", r.Store.Versions, n)
		}
	}
	b.ReportMetric(float64(cnt.n.Load())/float64(b.N), "requests/op")
	b.ReportMetric(float64(n), "objects")
}
