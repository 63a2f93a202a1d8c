package adkgcs_test

import (
	"context"
	"fmt"
	"net/http"
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

// BenchmarkQuotaReport computes a store-wide quota report over 100,000
// objects (100 sessions of 1,000 versions): one flat listing of the
// bucket, no per-object read.
func BenchmarkQuotaReport(b *testing.B) {
	srv := newEmulator(b)
	for s := range 100 {
		for i := range 1000 {
			putObject(srv, fmt.Sprintf("app/u-%d/s-%d/f-%d/%d", s%10, s, i%100, i/100), []byte("x"), "text/plain", nil)
		}
	}
	st, cnt := countingStore(b, srv.URL())
	cnt.n.Store(0)
	for b.Loop() {
		r, err := quota.Compute(b.Context(), st, quota.Options{})
		if err != nil || r.Store.Versions != 100_000 {
			b.Fatalf("%+v, %v", r.Store, err)
		}
	}
	b.ReportMetric(float64(cnt.n.Load())/float64(b.N), "requests/op")
}
