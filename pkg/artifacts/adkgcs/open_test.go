package adkgcs_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkgcs"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
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

// TestOpenRequests opens gs:// locations through the command line's
// layouts (cmdutil.NewStores: the gs:// Inspector, erlang-gcs and
// google-adk-gcs, sharing one storage client) and checks what is opened,
// or the error, and the requests the opener makes in all, Open of the
// layout included (erlang-gcs's Open checks that the bucket is readable
// with one request of its own; the guesses of a failed open read too):
// the Inspector's one listing answers the detection of both layouts
// whenever it reaches where their objects sort.
func TestOpenRequests(t *testing.T) {
	many := func(format string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	erlang := "adk-artifacts/v1/s/" + strings.Repeat("a", 64) + "/n/" + strings.Repeat("b", 64) + "/v-00000000000000000001.meta"
	tests := []struct {
		name    string
		objects []string
		uri     string
		layout  string // "" when opening fails
		code    artifacts.Code
		msg     string // in the error
		first   int64  // google-adk-gcs
		reqs    int64
	}{
		{name: "google-adk-gcs, adk-go", objects: []string{"app/u/s/a.txt/1", "app/u/user/user:x/2"}, uri: "gs://" + testBucket, layout: adkgcs.LayoutName, first: 1, reqs: 1},
		{name: "google-adk-gcs, ADK JS", objects: []string{"app/u/s/a.txt/0"}, uri: "gs://" + testBucket, layout: adkgcs.LayoutName, first: 0, reqs: 1},
		{name: "google-adk-gcs, 1,000 names", objects: many("b/u/s/f-%04d/1", 1000), uri: "gs://" + testBucket, layout: adkgcs.LayoutName, first: 1, reqs: 1},
		{name: "google-adk-gcs, 1,000 names before adk-artifacts/", objects: many("a/u/s/f-%04d/1", 1000), uri: "gs://" + testBucket, layout: adkgcs.LayoutName, first: 1, reqs: 3},
		{name: "google-adk-gcs below a prefix", objects: []string{"team/app/u/s/a.txt/1"}, uri: "gs://" + testBucket + "/team", layout: adkgcs.LayoutName, first: 1, reqs: 1},
		{name: "erlang-gcs", objects: []string{erlang}, uri: "gs://" + testBucket, layout: gcsstore.LayoutName, reqs: 2},
		{name: "erlang-gcs below a prefix", objects: []string{"p/s/x/n/y/v-1.meta"}, uri: "gs://" + testBucket + "/p", layout: gcsstore.LayoutName, reqs: 2},
		{name: "empty bucket", uri: "gs://" + testBucket, code: artifacts.CodeNotFound, msg: "no store at gs://" + testBucket + ": no object lies below adk-artifacts/v1/", reqs: 3},
		{name: "unknown layout", objects: []string{"data/x.csv", "readme.txt"}, uri: "gs://" + testBucket, code: artifacts.CodeUnknownLayout,
			msg: "gs://" + testBucket + " is not a store of a known layout (erlang-gcs, google-adk-gcs); found objects in bucket " + testBucket + ": data/, readme.txt; none of its first objects is a Google ADK artifact", reqs: 3},
		{name: "ADK objects beside adk-artifacts/", objects: []string{"app/u/s/a.txt/1", "adk-artifacts/x"}, uri: "gs://" + testBucket, code: artifacts.CodeUnknownLayout,
			msg: "it also holds Google ADK objects beside adk-artifacts/: give --layout google-adk-gcs to read those", reqs: 3},
		{name: "no such bucket", uri: "gs://no-such-bucket", code: artifacts.CodeNotFound, msg: `bucket "no-such-bucket" does not exist`, reqs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := countingEmulator(t)
			for _, o := range tt.objects {
				putObject(srv, o, []byte("x"), "text/plain", nil)
			}
			mux := cmdutil.NewStores()
			n.Store(0)
			opened, err := mux.Open(t.Context(), tt.uri, artifacts.OpenOptions{})
			if tt.layout == "" {
				if err == nil {
					opened.Driver.(io.Closer).Close()
					t.Fatalf("opened %s as %s, want %s", tt.uri, opened.Layout, tt.code)
				}
				if artifacts.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("error %v (%s), want %s containing %q", err, artifacts.CodeOf(err), tt.code, tt.msg)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				defer opened.Driver.(io.Closer).Close()
				if opened.Layout != tt.layout {
					t.Fatalf("opened as %s, want %s", opened.Layout, tt.layout)
				}
				if got := opened.Store.Capabilities().FirstVersion; tt.layout == adkgcs.LayoutName && got != tt.first {
					t.Errorf("first version %d, want %d", got, tt.first)
				}
			}
			if got := n.Load(); got != tt.reqs {
				t.Errorf("%d requests, want %d", got, tt.reqs)
			}
		})
	}
}
