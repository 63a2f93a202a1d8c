package adkgcs_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkgcs"
)

// countingEmulator starts the emulator behind a proxy that counts the
// requests it passes on, and points STORAGE_EMULATOR_HOST (which the
// layout's own client follows) at the proxy.
func countingEmulator(t *testing.T) (*fakestorage.Server, *atomic.Int64) {
	t.Helper()
	srv := newEmulator(t)
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	proxy := httputil.NewSingleHostReverseProxy(u)
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(ps.Close)
	t.Setenv("STORAGE_EMULATOR_HOST", ps.Listener.Addr().String())
	return srv, &n
}

// TestLayoutDetectRequests checks detection and opening through the
// layout as the URL mux does it (Detect, then Open): what is detected,
// the first version found, and the requests each step takes: one listing
// answers both detection questions unless it stops short of where
// adk-artifacts/ objects would sort, and Open reuses it for the first
// version.
func TestLayoutDetectRequests(t *testing.T) {
	many := func(format string) []string {
		var out []string
		for i := range 1000 {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	tests := []struct {
		name       string
		objects    []string
		uri        string
		detected   bool
		detectReqs int64
		first      int64
		openReqs   int64
	}{
		{name: "adk-go objects", objects: []string{"app/u/s/a.txt/1", "app/u/s/a.txt/2"}, uri: "gs://" + testBucket, detected: true, detectReqs: 1, first: 1},
		{name: "ADK JS objects", objects: []string{"app/u/s/a.txt/0", "app/u/user/x/0"}, uri: "gs://" + testBucket, detected: true, detectReqs: 1, first: 0},
		{name: "first_version given", objects: []string{"app/u/s/a.txt/1"}, uri: "gs://" + testBucket + "?first_version=0", detected: true, detectReqs: 1, first: 0},
		{name: "beside adk-artifacts/, in the listing", objects: []string{"app/u/s/a.txt/1", "adk-artifacts/v1/s/x/n/y/v-1.meta"}, uri: "gs://" + testBucket, detectReqs: 1},
		{name: "more than a page, all after adk-artifacts/", objects: many("b/u/s/f-%04d/1"), uri: "gs://" + testBucket, detected: true, detectReqs: 1, first: 1},
		{name: "a page before adk-artifacts/, none there", objects: many("a/u/s/f-%04d/0"), uri: "gs://" + testBucket, detected: true, detectReqs: 2, first: 0},
		{name: "a page before adk-artifacts/, one there", objects: append(many("a/u/s/f-%04d/1"), "adk-artifacts/v1/s/x/n/y/v-1.meta"), uri: "gs://" + testBucket, detectReqs: 2},
		{name: "below a prefix", objects: []string{"team/app/u/s/a.txt/1", "app/u/s/b.txt/0"}, uri: "gs://" + testBucket + "/team", detected: true, detectReqs: 1, first: 1},
		{name: "nothing of ADK", objects: []string{"readme.txt", "data/x.csv"}, uri: "gs://" + testBucket, detectReqs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := countingEmulator(t)
			for _, o := range tt.objects {
				putObject(srv, o, []byte("x"), "text/plain", nil)
			}
			loc, err := artifacts.ParseLocation(tt.uri)
			if err != nil {
				t.Fatal(err)
			}
			l := adkgcs.NewLayout(adkgcs.Options{})
			t.Cleanup(func() { l.Close() })
			n.Store(0)
			ok, err := l.Detect(t.Context(), loc)
			if err != nil || ok != tt.detected || n.Load() != tt.detectReqs {
				t.Fatalf("Detect = %v, %v after %d requests; want %v after %d", ok, err, n.Load(), tt.detected, tt.detectReqs)
			}
			if !ok {
				return
			}
			n.Store(0)
			d, err := l.Open(t.Context(), loc, false)
			if err != nil {
				t.Fatal(err)
			}
			defer d.(*adkgcs.Store).Close()
			if got := d.Capabilities().FirstVersion; got != tt.first || n.Load() != tt.openReqs {
				t.Errorf("Open: first version %d after %d requests, want %d after %d", got, n.Load(), tt.first, tt.openReqs)
			}
			// Without a Detect before it, Open lists the first page itself.
			l2 := adkgcs.NewLayout(adkgcs.Options{})
			n.Store(0)
			d2, err := l2.Open(t.Context(), loc, false)
			if err != nil {
				t.Fatal(err)
			}
			defer d2.(*adkgcs.Store).Close()
			want := int64(1)
			if loc.FirstVersionSet {
				want = 0
			}
			if got := d2.Capabilities().FirstVersion; got != tt.first || n.Load() != want {
				t.Errorf("Open without Detect: first version %d after %d requests, want %d after %d", got, n.Load(), tt.first, want)
			}
		})
	}
}
