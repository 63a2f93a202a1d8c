package adkgcs_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	srv, r := recordingEmulator(t)
	return srv, &r.n
}

// requests is what the proxy of recordingEmulator saw.
type requests struct {
	n atomic.Int64 // requests passed on or failed
	// failPages, when not 0, is the HTTP status the proxy answers every
	// listing request that asks for a page after the first (pageToken)
	// with, instead of passing it on.
	failPages atomic.Int32
	mu        sync.Mutex
	lists     []string // each listing request: "prefix maxResults", "+" for a later page
}

// listed returns the listing requests seen since the last call.
func (r *requests) listed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lists
	r.lists = nil
	return out
}

// recordingEmulator is countingEmulator that also records the listing
// requests, and can fail the later pages of listings.
func recordingEmulator(t *testing.T) (*fakestorage.Server, *requests) {
	t.Helper()
	srv := newEmulator(t)
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	r := &requests{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	ps := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.n.Add(1)
		q := req.URL.Query()
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/o") {
			rec := q.Get("prefix") + " " + q.Get("maxResults")
			if q.Get("pageToken") != "" {
				rec += "+"
			}
			r.mu.Lock()
			r.lists = append(r.lists, rec)
			r.mu.Unlock()
			if code := int(r.failPages.Load()); code != 0 && q.Get("pageToken") != "" {
				http.Error(w, `{"error":{"code":`+strconv.Itoa(code)+`,"message":"refused by the test"}}`, code)
				return
			}
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(ps.Close)
	t.Setenv("STORAGE_EMULATOR_HOST", ps.Listener.Addr().String())
	return srv, r
}

// TestLayoutDetectRequests checks detection and opening through the
// layout as the URL mux does it (Detect, then Open): what is detected,
// the first version found, and the requests each step takes: one listing
// answers both detection questions unless it stops short of where
// adk-artifacts/ objects would sort, and Open reuses it for the first
// version. The cases of 1,000 objects or more are in
// TestLayoutDetectRequestsLarge (integration tier).
func TestLayoutDetectRequests(t *testing.T) {
	testLayoutDetectRequests(t, false)
}

// largeObjects is the number of objects from which a case of
// TestLayoutDetectRequests or TestOpenRequests is a large one: seconds
// to create on the emulator under -race, so it runs in the integration
// tier.
const largeObjects = 1000

// testLayoutDetectRequests runs the cases of TestLayoutDetectRequests of
// fewer than largeObjects objects, or, when large, the others.
func testLayoutDetectRequests(t *testing.T, large bool) {
	many := func(format string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	foreign := many("0-foreign/x-%03d", 150) // sorts before every version below
	tests := []struct {
		name       string
		objects    []string
		uri        string
		detected   bool
		detectReqs int64
		first      int64
		openReqs   int64
		aloneReqs  int64 // of Open without a Detect before it
	}{
		{name: "adk-go objects", objects: []string{"app/u/s/a.txt/1", "app/u/s/a.txt/2"}, uri: "gs://" + testBucket, detected: true, detectReqs: 1, first: 1, aloneReqs: 1},
		{name: "ADK JS objects", objects: []string{"app/u/s/a.txt/0", "app/u/user/x/0"}, uri: "gs://" + testBucket, detected: true, detectReqs: 1, first: 0, aloneReqs: 1},
		{name: "first_version given", objects: []string{"app/u/s/a.txt/1"}, uri: "gs://" + testBucket + "?first_version=0", detected: true, detectReqs: 1, first: 0},
		{name: "beside adk-artifacts/, in the listing", objects: []string{"app/u/s/a.txt/1", "adk-artifacts/v1/s/x/n/y/v-1.meta"}, uri: "gs://" + testBucket, detectReqs: 1},
		{name: "more than a page, all after adk-artifacts/", objects: many("b/u/s/f-%04d/1", 1000), uri: "gs://" + testBucket, detected: true, detectReqs: 1, first: 1, aloneReqs: 1},
		{name: "a page before adk-artifacts/, none there", objects: many("a/u/s/f-%04d/0", 1000), uri: "gs://" + testBucket, detected: true, detectReqs: 2, first: 0, aloneReqs: 1},
		{name: "a page before adk-artifacts/, one there", objects: append(many("a/u/s/f-%04d/1", 1000), "adk-artifacts/v1/s/x/n/y/v-1.meta"), uri: "gs://" + testBucket, detectReqs: 2},
		{name: "below a prefix", objects: []string{"team/app/u/s/a.txt/1", "app/u/s/b.txt/0"}, uri: "gs://" + testBucket + "/team", detected: true, detectReqs: 1, first: 1, aloneReqs: 1},
		{name: "nothing of ADK", objects: []string{"readme.txt", "data/x.csv"}, uri: "gs://" + testBucket, detectReqs: 1},
		// The first page of 100 names holds no version: detection reads
		// on, up to 1,000 names, and numbers by what it read.
		{name: "150 foreign objects, then an ADK JS version", objects: slices.Concat(foreign, []string{"app/u/s/a.txt/0"}), uri: "gs://" + testBucket, detected: true, detectReqs: 2, first: 0, aloneReqs: 2},
		{name: "150 foreign objects, then adk-go versions", objects: slices.Concat(foreign, []string{"app/u/s/a.txt/1", "app/u/s/a.txt/2"}), uri: "gs://" + testBucket, detected: true, detectReqs: 2, first: 1, aloneReqs: 2},
		// 100 names, 900 more, and the probe of adk-artifacts/, which the
		// 1,000 names stop short of.
		{name: "1,000 foreign objects, then a version", objects: append(many("0-foreign/x-%04d", 1000), "app/u/s/a.txt/1"), uri: "gs://" + testBucket, detectReqs: 3},
		// The first version is judged by the first page when it holds
		// versions: a version 0 in it numbers from 0, one beyond it does not.
		{name: "version 0 in the first page", objects: append([]string{"b/u/s/a/0"}, many("b/u/s/f-%03d/1", 150)...), uri: "gs://" + testBucket, detected: true, detectReqs: 1, first: 0, aloneReqs: 1},
		{name: "version 0 only beyond the first page", objects: append(many("b/u/s/f-%03d/1", 150), "b/u/s/zz/0"), uri: "gs://" + testBucket, detected: true, detectReqs: 1, first: 1, aloneReqs: 1},
		{name: "version 0 only beyond the first page, first_version=0", objects: append(many("b/u/s/f-%03d/1", 150), "b/u/s/zz/0"), uri: "gs://" + testBucket + "?first_version=0", detected: true, detectReqs: 1, first: 0},
	}
	for _, tt := range tests {
		if (len(tt.objects) >= largeObjects) != large {
			continue
		}
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
			// Without a Detect before it, Open reads the same sample itself.
			l2 := adkgcs.NewLayout(adkgcs.Options{})
			n.Store(0)
			d2, err := l2.Open(t.Context(), loc, false)
			if err != nil {
				t.Fatal(err)
			}
			defer d2.(*adkgcs.Store).Close()
			if got := d2.Capabilities().FirstVersion; got != tt.first || n.Load() != tt.aloneReqs {
				t.Errorf("Open without Detect: first version %d after %d requests, want %d after %d", got, n.Load(), tt.first, tt.aloneReqs)
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
// whenever it reaches where their objects sort. The cases of 1,000
// objects or more are in TestOpenRequestsLarge (integration tier).
func TestOpenRequests(t *testing.T) {
	testOpenRequests(t, false)
}

// testOpenRequests runs the cases of TestOpenRequests of fewer than
// largeObjects objects, or, when large, the others.
func testOpenRequests(t *testing.T, large bool) {
	many := func(format string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	foreign := many("0-foreign/x-%03d", 150) // sorts before every version below
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
		lists   []string // the listing requests ("prefix maxResults", + for a later page), when given
		fail    int      // the HTTP status later pages of listings get, when not 0
	}{
		{name: "google-adk-gcs, adk-go", objects: []string{"app/u/s/a.txt/1", "app/u/user/user:x/2"}, uri: "gs://" + testBucket, layout: adkgcs.LayoutName, first: 1, reqs: 1},
		{name: "google-adk-gcs, ADK JS", objects: []string{"app/u/s/a.txt/0"}, uri: "gs://" + testBucket, layout: adkgcs.LayoutName, first: 0, reqs: 1},
		{name: "google-adk-gcs, 1,000 names", objects: many("b/u/s/f-%04d/1", 1000), uri: "gs://" + testBucket, layout: adkgcs.LayoutName, first: 1, reqs: 1, lists: []string{" 100"}},
		{name: "google-adk-gcs, 1,000 names before adk-artifacts/", objects: many("a/u/s/f-%04d/1", 1000), uri: "gs://" + testBucket, layout: adkgcs.LayoutName, first: 1, reqs: 3},
		{name: "google-adk-gcs below a prefix", objects: []string{"team/app/u/s/a.txt/1"}, uri: "gs://" + testBucket + "/team", layout: adkgcs.LayoutName, first: 1, reqs: 1},
		{name: "erlang-gcs", objects: []string{erlang}, uri: "gs://" + testBucket, layout: gcsstore.LayoutName, reqs: 2},
		{name: "erlang-gcs below a prefix", objects: []string{"p/s/x/n/y/v-1.meta"}, uri: "gs://" + testBucket + "/p", layout: gcsstore.LayoutName, reqs: 2},
		{name: "empty bucket", uri: "gs://" + testBucket, code: artifacts.CodeNotFound, msg: "no store at gs://" + testBucket + ": no object lies below adk-artifacts/v1/", reqs: 3},
		{name: "unknown layout", objects: []string{"data/x.csv", "readme.txt"}, uri: "gs://" + testBucket, code: artifacts.CodeUnknownLayout,
			msg: "gs://" + testBucket + " is not a store of a known layout (erlang-gcs, google-adk-gcs); found objects in bucket " + testBucket + ": data/, readme.txt; none of its first objects is a Google ADK artifact", reqs: 3},
		{name: "ADK objects beside adk-artifacts/", objects: []string{"app/u/s/a.txt/1", "adk-artifacts/x"}, uri: "gs://" + testBucket, code: artifacts.CodeUnknownLayout,
			msg: "it also holds Google ADK objects beside adk-artifacts/: give --layout google-adk-gcs to read those", reqs: 3},
		// The first page (100 names) holds no version: google-adk-gcs reads
		// on, up to 1,000 names, in the Inspector's listing (erlang-gcs
		// probed PREFIX/s/ before, which the first page stops short of).
		{name: "google-adk-gcs after 150 foreign objects", objects: slices.Concat(foreign, []string{"app/u/s/a.txt/0"}), uri: "gs://" + testBucket, layout: adkgcs.LayoutName, first: 0, reqs: 3,
			lists: []string{" 100", "adk-artifacts/v1/s/ 1", " 900+"}},
		{name: "a version after 1,000 foreign objects", objects: append(many("0-foreign/x-%04d", 1000), "app/u/s/a.txt/1"), uri: "gs://" + testBucket, code: artifacts.CodeUnknownLayout,
			msg: "none of its first objects is a Google ADK artifact", reqs: 8}, // 4 to detect, 4 for the guesses
		// The message names what detection read in the end: all 150
		// objects, one top-level prefix, not "and more" as the first page
		// of 100 would have it.
		{name: "150 foreign objects", objects: foreign, uri: "gs://" + testBucket, code: artifacts.CodeUnknownLayout,
			msg: "found objects in bucket " + testBucket + ": 0-foreign/; none of its first objects is a Google ADK artifact", reqs: 6},
		// adk-artifacts/ sorts after the first page of ADK versions: the
		// probes find it, and the bucket is the Erlang layout's (whose Open
		// checks its prefix is readable).
		{name: "erlang-gcs after 150 ADK versions", objects: append(many("a/u/s/f-%03d/1", 150), erlang), uri: "gs://" + testBucket, layout: gcsstore.LayoutName, reqs: 4,
			lists: []string{" 100", "adk-artifacts/v1/s/ 1", "adk-artifacts/ 1", "adk-artifacts/v1/ 1"}},
		// A later page that fails fails the open, classified; no layout
		// is guessed from the first page.
		{name: "later page refused", objects: slices.Concat(foreign, []string{"app/u/s/a.txt/0"}), uri: "gs://" + testBucket, fail: http.StatusForbidden,
			code: artifacts.CodePermission, msg: `bucket "` + testBucket + `" is not readable`, reqs: 3},
		{name: "bucket gone before a later page", objects: slices.Concat(foreign, []string{"app/u/s/a.txt/0"}), uri: "gs://" + testBucket, fail: http.StatusNotFound,
			code: artifacts.CodeNotFound, msg: `bucket "` + testBucket + `" does not exist`, reqs: 3},
		{name: "no such bucket", uri: "gs://no-such-bucket", code: artifacts.CodeNotFound, msg: `bucket "no-such-bucket" does not exist`, reqs: 1},
	}
	for _, tt := range tests {
		if (len(tt.objects) >= largeObjects) != large {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			srv, r := recordingEmulator(t)
			n := &r.n
			for _, o := range tt.objects {
				putObject(srv, o, []byte("x"), "text/plain", nil)
			}
			mux := cmdutil.NewStores()
			n.Store(0)
			r.listed()
			r.failPages.Store(int32(tt.fail))
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
			if got := r.listed(); tt.lists != nil && !slices.Equal(got, tt.lists) {
				t.Errorf("listing requests %q, want %q", got, tt.lists)
			}
		})
	}
}
