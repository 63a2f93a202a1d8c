package gcsstore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/option"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

const testBucket = "artifacts-test"

// newEmulator starts an in-process fake-gcs-server with the memory backend,
// listening on 127.0.0.1, with the test bucket.
func newEmulator(tb testing.TB) *fakestorage.Server {
	tb.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0})
	if err != nil {
		tb.Fatal(err)
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testBucket})
	tb.Cleanup(srv.Stop)
	return srv
}

// newClient returns a storage client for the emulator (or a proxy in front
// of it) at base, reading through the JSON API.
func newClient(tb testing.TB, base string) *storage.Client {
	tb.Helper()
	c, err := storage.NewClient(context.Background(),
		option.WithEndpoint(base+"/storage/v1/"),
		option.WithoutAuthentication(),
		storage.WithJSONReads(),
	)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// openStore opens a Store on the client.
func openStore(tb testing.TB, c *storage.Client, opts gcsstore.Options) *gcsstore.Store {
	tb.Helper()
	s, err := gcsstore.Open(context.Background(), c, testBucket, "", opts)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// newStore starts an emulator and opens a Store on it.
func newStore(tb testing.TB, opts gcsstore.Options) (*gcsstore.Store, *fakestorage.Server) {
	tb.Helper()
	srv := newEmulator(tb)
	return openStore(tb, newClient(tb, srv.URL()), opts), srv
}

// proxy is a reverse proxy in front of the emulator whose hook may answer
// a request itself (return true) instead of forwarding it.
type proxy struct {
	*httptest.Server
	hook func(w http.ResponseWriter, r *http.Request, forward http.Handler) bool
}

func newProxy(tb testing.TB, target string) *proxy {
	tb.Helper()
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = nil
	p := &proxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.hook != nil && p.hook(w, r, rp) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(p.Close)
	return p
}

// objectName is the object's name a request addresses: the "name" query
// parameter of an upload, or the path after /o/.
func objectName(r *http.Request) string {
	if n := r.URL.Query().Get("name"); n != "" {
		return n
	}
	p := r.URL.EscapedPath()
	for i := 0; i+3 <= len(p); i++ {
		if p[i:i+3] == "/o/" {
			n, _ := url.PathUnescape(p[i+3:])
			return n
		}
	}
	return ""
}

// overwrite writes b to an object directly, without a precondition.
func overwrite(tb testing.TB, s *gcsstore.Store, name string, b []byte) {
	tb.Helper()
	w := s.Client().Bucket(s.Bucket()).Object(name).NewWriter(context.Background())
	if _, err := w.Write(b); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// readObject reads an object directly.
func readObject(tb testing.TB, s *gcsstore.Store, name string) []byte {
	tb.Helper()
	r, err := s.Client().Bucket(s.Bucket()).Object(name).NewReader(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// objectExists reports whether an object exists.
func objectExists(tb testing.TB, s *gcsstore.Store, name string) bool {
	tb.Helper()
	_, err := s.Client().Bucket(s.Bucket()).Object(name).Attrs(context.Background())
	if errors.Is(err, storage.ErrObjectNotExist) {
		return false
	}
	if err != nil {
		tb.Fatal(err)
	}
	return true
}

func readAll(r *artifacts.Reader, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}
