package adkgcs_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkgcs"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
)

// damager is a proxy in front of the emulator that flips one bit in the
// middle of every download of the objects it was told are damaged: the
// bytes no longer match the CRC32C the service stored, as after a fault
// below the service. (The emulator recomputes or checks the CRC32C of
// every object written to it, so the damage is done on the way out.)
type damager struct {
	*httptest.Server
	mu      sync.Mutex
	damaged map[string]bool
}

func newDamager(t *testing.T, target string) *damager {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	d := &damager{damaged: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		r := resp.Request
		if r.Method != http.MethodGet || r.URL.Query().Get("alt") != "media" || resp.StatusCode/100 != 2 {
			return nil
		}
		name, ok := strings.CutPrefix(r.URL.EscapedPath(), "/storage/v1/b/"+testBucket+"/o/")
		if !ok {
			return nil
		}
		name, err := url.PathUnescape(name)
		if err != nil {
			return err
		}
		d.mu.Lock()
		bad := d.damaged[name]
		d.mu.Unlock()
		if !bad {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if len(b) > 0 {
			b[len(b)/2] ^= 0x01
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		return nil
	}
	d.Server = httptest.NewServer(rp)
	t.Cleanup(d.Close)
	return d
}

// damage marks an object damaged.
func (d *damager) damage(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.damaged[name] = true
}

// TestConformance runs the quick subtests of the conformance suite
// (artifactstest.QuickSubtests) on both numberings of the layout, in the
// default test tier; TestConformanceEmulator runs the whole suite in the
// integration tier.
func TestConformance(t *testing.T) {
	runConformance(t, artifactstest.QuickSubtests)
}

// runConformance runs the conformance suite, or only the subtests named
// in subtests when not empty, on both numberings of the layout, adk-go's
// (from 1) and ADK Python's, Java's and JS's (from 0), against one
// in-process emulator shared by every store: each store is the objects
// below a prefix of its own.
func runConformance(t *testing.T, subtests []string) {
	srv := newEmulator(t)
	proxy := newDamager(t, srv.URL())
	client := newClientAt(t, proxy.URL)
	var stores atomic.Int64
	for _, first := range []int64{1, 0} {
		t.Run(fmt.Sprint("first=", first), func(t *testing.T) {
			newStore := func(t *testing.T, limit int64) artifacts.Driver {
				root := fmt.Sprintf("conformance-%d", stores.Add(1))
				return openStore(t, client, root, adkgcs.Options{FirstVersion: first, FirstVersionSet: true, MaxArtifactBytes: limit})
			}
			artifactstest.Run(t, artifactstest.Harness{
				New: func(t *testing.T) artifacts.Driver { return newStore(t, 0) },
				NewWithLimit: func(t *testing.T, limit int64) artifacts.Driver {
					return newStore(t, limit)
				},
				// Flip one bit of the object's bytes and keep the CRC32C
				// Cloud Storage stored with it, as a fault below the
				// service would.
				CorruptPayload: func(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, v int64) {
					t.Helper()
					var d *adkgcs.Store
					if !st.As(&d) {
						t.Fatal("store is not an *adkgcs.Store")
					}
					o, err := srv.GetObject(testBucket, d.ObjectName(scope, name, v))
					if err != nil {
						t.Fatal(err)
					}
					if len(o.Content) == 0 || o.Crc32c == "" {
						t.Fatalf("object %s: %d bytes, CRC32C %q: nothing to damage", o.Name, len(o.Content), o.Crc32c)
					}
					proxy.damage(o.Name)
				},
				// The layout's records are object attributes
				// (AttributeRecords): the suite skips CorruptRecord for
				// that fact, and never calls this.
				CorruptRecord: func(t *testing.T, _ *artifacts.Store, scope artifacts.Scope, name string, v int64) {
					t.Fatalf("CorruptRecord(%s, %q, %d) called for a layout that declares AttributeRecords", scope, name, v)
				},
				// The layout keeps no index: every put lists the name's
				// versions, so 8 writers racing 50 puts each on one name
				// cost a quadratic number of listings (minutes on the
				// emulator under -race). 8 x 10 still races every put
				// against the others' create-only writes; TestConcurrentPuts
				// races large payloads too.
				SkipSlow: true,
				Subtests: subtests,
			})
		})
	}
}
