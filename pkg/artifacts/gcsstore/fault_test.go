package gcsstore_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// fastRetry makes the client's retries quick so that fault tests run fast;
// MaxAttempts stays bounded.
var fastRetry = gcsstore.Options{ChunkSize: 256 << 10, RetryInitial: 5 * time.Millisecond, RetryMax: 50 * time.Millisecond, MaxAttempts: 4}

// proxied starts an emulator with a proxy in front and opens a Store that
// talks through the proxy.
func proxied(t *testing.T, opts gcsstore.Options) (*gcsstore.Store, *fakestorage.Server, *proxy) {
	t.Helper()
	srv := newEmulator(t)
	px := newProxy(t, srv.URL())
	return openStore(t, newClient(t, px.URL), opts), srv, px
}

// kind classifies a request of the storage client by the object it
// creates, reads or lists.
func kind(r *http.Request) string {
	name := objectName(r)
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/o") || strings.HasSuffix(r.URL.Path, "/o/"):
		return "list"
	case (r.Method == http.MethodPost || r.Method == http.MethodPut) && strings.Contains(r.URL.Path, "/upload/"):
		for _, suf := range []string{".reserve", ".data", ".meta"} {
			if strings.HasSuffix(name, suf) {
				return "create" + suf
			}
		}
		return "create"
	case r.Method == http.MethodDelete:
		return "delete"
	}
	return "read"
}

// published reports which objects of version v exist in the emulator,
// read from its backend directly (it works after Stop too).
func published(srv *fakestorage.Server, s *gcsstore.Store, sc artifacts.Scope, name string, v int64) (reserve, data, meta bool) {
	has := func(suf gcsstore.Suffix) bool {
		_, err := srv.GetObject(testBucket, s.ObjectName(sc, name, v, suf))
		return err == nil
	}
	return has(gcsstore.SuffixReserve), has(gcsstore.SuffixData), has(gcsstore.SuffixMeta)
}

// signalReader yields n pseudo-random bytes and calls at once after the
// first `after` bytes.
type signalReader struct {
	n, after, done int64
	at             func()
	once           sync.Once
}

func (r *signalReader) Read(p []byte) (int, error) {
	if r.done >= r.n {
		return 0, io.EOF
	}
	m := min(int64(len(p)), r.n-r.done, 64<<10)
	for i := range m {
		p[i] = byte(r.done + i*7)
	}
	r.done += m
	if r.done >= r.after {
		r.once.Do(r.at)
	}
	return int(m), nil
}

// TestEmulatorStoppedMidUpload stops the emulator while a large put
// streams: the put fails (unavailable, after its bounded retries: a put
// that retried on would fail the test by its timeout) and publishes
// nothing.
func TestEmulatorStoppedMidUpload(t *testing.T) {
	srv := newEmulator(t)
	s := openStore(t, newClient(t, srv.URL()), fastRetry)
	sc := artifacts.AppScope("stop")
	stopped := make(chan struct{})
	r := &signalReader{n: 32 << 20, after: 2 << 20, at: func() { go func() { srv.Stop(); close(stopped) }() }}
	_, err := s.Put(context.Background(), sc, "big", r, artifacts.PutOptions{})
	<-stopped
	if code := artifacts.CodeOf(err); code != artifacts.CodeUnavailable {
		t.Errorf("Put while the emulator stops = %v (code %q), want %s", err, code, artifacts.CodeUnavailable)
	}
	if _, data, meta := published(srv, s, sc, "big", 1); data || meta {
		t.Errorf("after the failed put: .data %v, .meta %v; want neither", data, meta)
	}
}

// TestServerErrors puts a proxy answering 500 or 503 to chosen requests in
// front of the emulator: calls fail with unavailable after at most
// MaxAttempts attempts, nothing is half-published, and transient errors
// are retried away.
func TestServerErrors(t *testing.T) {
	sc := artifacts.AppScope("errors")
	large := bytes.Repeat([]byte("z"), 1<<20)
	for _, tc := range []struct {
		what    string
		fail    string // request kind that fails
		status  int
		times   int32 // 0: always
		payload []byte
		wantErr artifacts.Code
		meta    bool // the version is published
	}{
		{"503 on every .reserve create", "create.reserve", 503, 0, []byte("x"), artifacts.CodeUnavailable, false},
		{"500 on every .data create", "create.data", 500, 0, []byte("x"), artifacts.CodeUnavailable, false},
		{"500 on every chunk of a large .data", "create.data", 500, 0, large, artifacts.CodeUnavailable, false},
		{"503 on every .meta create", "create.meta", 503, 0, []byte("x"), artifacts.CodeUnavailable, false},
		{"503 on every .meta create of a large put", "create.meta", 503, 0, large, artifacts.CodeUnavailable, false},
		{"503 on every listing", "list", 503, 0, []byte("x"), artifacts.CodeUnavailable, false},
		{"429 on every listing", "list", 429, 0, []byte("x"), artifacts.CodeUnavailable, false},
		{"403 on every listing", "list", 403, 0, []byte("x"), artifacts.CodePermission, false},
		{"two 503 on .reserve creates", "create.reserve", 503, 2, []byte("x"), "", true},
		{"two 500 on .data chunks", "create.data", 500, 2, large, "", true},
		{"two 503 on .meta creates", "create.meta", 503, 2, []byte("x"), "", true},
		{"two 503 on listings", "list", 503, 2, []byte("x"), "", true},
	} {
		t.Run(tc.what, func(t *testing.T) {
			s, srv, px := proxied(t, fastRetry)
			var failed atomic.Int32
			px.hook = func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
				if kind(r) != tc.fail || (tc.times > 0 && failed.Load() >= tc.times) {
					return false
				}
				failed.Add(1)
				io.Copy(io.Discard, r.Body)
				http.Error(w, `{"error":{"code":`+http.StatusText(tc.status)+`}}`, tc.status)
				return true
			}
			ctx := context.Background()
			_, err := s.Put(ctx, sc, "n", bytes.NewReader(tc.payload), artifacts.PutOptions{})
			if code := artifacts.CodeOf(err); code != tc.wantErr {
				t.Errorf("Put = %v (code %q), want %q", err, code, tc.wantErr)
			}
			if n := failed.Load(); n > int32(fastRetry.MaxAttempts) {
				t.Errorf("the proxy failed %d requests: retries are not bounded by MaxAttempts %d", n, fastRetry.MaxAttempts)
			}
			if failed.Load() == 0 {
				t.Fatal("the proxy failed no request")
			}
			_, data, meta := published(srv, s, sc, "n", 1)
			if meta != tc.meta || data != tc.meta {
				t.Errorf("after the put: .data %v, .meta %v; want both %v", data, meta, tc.meta)
			}
			if tc.meta {
				b, err := readAll(s.Get(ctx, sc, "n", 1))
				if err != nil || !bytes.Equal(b, tc.payload) {
					t.Errorf("Get after retried faults: %d bytes, %v", len(b), err)
				}
			}
		})
	}
	t.Run("reads", func(t *testing.T) {
		s, _, px := proxied(t, fastRetry)
		ctx := context.Background()
		if _, err := s.Put(ctx, sc, "n", strings.NewReader("payload"), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		px.hook = func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return true
		}
		for what, err := range map[string]error{
			"Stat":         errOf(s.Stat(ctx, sc, "n", 1)),
			"Get":          errOf(s.Get(ctx, sc, "n", 1)),
			"GetRange":     errOf(s.GetRange(ctx, sc, "n", 1, 0, 1)),
			"ListNames":    errOf(s.ListNames(ctx, sc, artifacts.ListOptions{})),
			"ListVersions": errOf(s.ListVersions(ctx, sc, "n", artifacts.ListOptions{})),
			"Delete":       errOf(s.Delete(ctx, sc, "n", artifacts.Selector{Kind: artifacts.SelectAll})),
			"ListScopes":   errOf(s.ListScopes(ctx)),
			"Walk":         s.Walk(ctx, func(artifacts.ScopeUsage) error { return nil }),
		} {
			if artifacts.CodeOf(err) != artifacts.CodeUnavailable {
				t.Errorf("%s against 503 = %v, want %s", what, err, artifacts.CodeUnavailable)
			}
		}
	})
}

func errOf[T any](_ T, err error) error { return err }

// TestDeadlineNeverHangs puts a proxy that never answers in front of the
// emulator: every call returns timeout once its deadline has passed (a
// call that hung would fail the test by its timeout).
func TestDeadlineNeverHangs(t *testing.T) {
	s, _, px := proxied(t, gcsstore.Options{})
	sc := artifacts.AppScope("hang")
	if _, err := s.Put(context.Background(), sc, "n", strings.NewReader("x"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	px.hook = func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		<-r.Context().Done()
		return true
	}
	calls := map[string]func(ctx context.Context) error{
		"Put": func(ctx context.Context) error {
			return errOf(s.Put(ctx, sc, "n", strings.NewReader("x"), artifacts.PutOptions{}))
		},
		"Put large": func(ctx context.Context) error {
			return errOf(s.Put(ctx, sc, "n", bytes.NewReader(make([]byte, 3<<20)), artifacts.PutOptions{}))
		},
		"Stat":         func(ctx context.Context) error { return errOf(s.Stat(ctx, sc, "n", artifacts.Latest)) },
		"Get":          func(ctx context.Context) error { return errOf(readAll(s.Get(ctx, sc, "n", 1))) },
		"GetRange":     func(ctx context.Context) error { return errOf(readAll(s.GetRange(ctx, sc, "n", 1, 0, 1))) },
		"ListNames":    func(ctx context.Context) error { return errOf(s.ListNames(ctx, sc, artifacts.ListOptions{})) },
		"ListVersions": func(ctx context.Context) error { return errOf(s.ListVersions(ctx, sc, "n", artifacts.ListOptions{})) },
		"Delete": func(ctx context.Context) error {
			return errOf(s.Delete(ctx, sc, "n", artifacts.Selector{Kind: artifacts.SelectAll}))
		},
		"ListScopes": func(ctx context.Context) error { return errOf(s.ListScopes(ctx)) },
		"Walk":       func(ctx context.Context) error { return s.Walk(ctx, func(artifacts.ScopeUsage) error { return nil }) },
	}
	var wg sync.WaitGroup
	for what, call := range calls {
		wg.Go(func() {
			for _, d := range []time.Duration{-time.Second, 200 * time.Millisecond} {
				ctx, cancel := context.WithTimeout(context.Background(), d)
				err := call(ctx)
				expired := ctx.Err()
				cancel()
				if artifacts.CodeOf(err) != artifacts.CodeTimeout {
					t.Errorf("%s with deadline %v against a silent server = %v, want %s", what, d, err, artifacts.CodeTimeout)
				}
				if expired == nil {
					t.Errorf("%s with deadline %v returned %v before its deadline", what, d, err)
				}
			}
		})
	}
	wg.Wait()
}

// TestDamagedObjects checks a .meta holding garbage and a .data shorter
// than its record: corrupt_artifact, and no bytes.
func TestDamagedObjects(t *testing.T) {
	s, _ := newStore(t, gcsstore.Options{})
	ctx := context.Background()
	sc := artifacts.UserScope("app", "user")
	for _, size := range []int{10, 2 << 20} {
		payload := bytes.Repeat([]byte("p"), size)
		if _, err := s.Put(ctx, sc, "garbage", bytes.NewReader(payload), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Put(ctx, sc, "short", bytes.NewReader(payload), artifacts.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		overwrite(t, s, s.ObjectName(sc, "garbage", rec.Version, gcsstore.SuffixMeta), []byte("not a record at all"))
		overwrite(t, s, s.ObjectName(sc, "short", rec.Version, gcsstore.SuffixData), payload[:size-1])
		for what, err := range map[string]error{
			"Stat garbage":         errOf(s.Stat(ctx, sc, "garbage", rec.Version)),
			"Get garbage":          errOf(s.Get(ctx, sc, "garbage", artifacts.Latest)),
			"ListVersions garbage": errOf(s.ListVersions(ctx, sc, "garbage", artifacts.ListOptions{})),
			"ListNames garbage":    errOf(s.ListNames(ctx, sc, artifacts.ListOptions{})),
		} {
			if artifacts.CodeOf(err) != artifacts.CodeCorrupt {
				t.Errorf("%s (%d bytes) = %v, want %s", what, size, err, artifacts.CodeCorrupt)
			}
		}
		for what, open := range map[string]func() (*artifacts.Reader, error){
			"Get short":      func() (*artifacts.Reader, error) { return s.Get(ctx, sc, "short", rec.Version) },
			"GetRange short": func() (*artifacts.Reader, error) { return s.GetRange(ctx, sc, "short", rec.Version, 0, 5) },
		} {
			r, err := open()
			if err == nil {
				b, _ := io.ReadAll(r)
				r.Close()
				t.Errorf("%s (%d bytes) opened and yielded %d bytes, want corrupt_artifact at open", what, size, len(b))
				continue
			}
			if artifacts.CodeOf(err) != artifacts.CodeCorrupt {
				t.Errorf("%s (%d bytes) = %v, want %s", what, size, err, artifacts.CodeCorrupt)
			}
		}
		// Walk reports the garbage record as a problem.
		var problems int
		s.Walk(ctx, func(u artifacts.ScopeUsage) error {
			for _, n := range u.Names {
				problems += len(n.Problems)
			}
			return nil
		})
		if problems == 0 {
			t.Errorf("Walk reports no problem")
		}
	}
}

// TestRetriedCreateIsOurs makes the proxy forward a create and then drop
// the connection before the response, so the client retries and gets 412
// for the object its first attempt committed: the token tells it the
// object is its own, and the put succeeds with exactly one version.
func TestRetriedCreateIsOurs(t *testing.T) {
	for _, k := range []string{"create.reserve", "create.data", "create.meta"} {
		t.Run(k, func(t *testing.T) {
			s, srv, px := proxied(t, fastRetry)
			sc := artifacts.AppScope("race")
			var dropped atomic.Int32
			px.hook = func(w http.ResponseWriter, r *http.Request, forward http.Handler) bool {
				if kind(r) != k || !dropped.CompareAndSwap(0, 1) {
					return false
				}
				rec := httptest.NewRecorder()
				forward.ServeHTTP(rec, r)
				if rec.Code != http.StatusOK {
					t.Errorf("the forwarded create got %d", rec.Code)
				}
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return true
				}
				conn.Close()
				return true
			}
			ctx := context.Background()
			rec, err := s.Put(ctx, sc, "n", strings.NewReader("payload"), artifacts.PutOptions{})
			if err != nil {
				t.Fatalf("Put with a dropped %s response: %v", k, err)
			}
			if dropped.Load() != 1 {
				t.Fatal("no response was dropped")
			}
			if rec.Version != 1 {
				t.Errorf("Put got v%d, want v1", rec.Version)
			}
			if got := listAll(t, srv); len(got) != 3 {
				t.Errorf("objects after the put: %q, want one .reserve, .data and .meta", got)
			}
			b, err := readAll(s.Get(ctx, sc, "n", artifacts.Latest))
			if err != nil || string(b) != "payload" {
				t.Errorf("Get = %q, %v", b, err)
			}
			// A second put is v2: the version was neither lost nor doubled.
			if rec, err := s.Put(ctx, sc, "n", strings.NewReader("again"), artifacts.PutOptions{}); err != nil || rec.Version != 2 {
				t.Errorf("second Put = v%d, %v; want v2", rec.Version, err)
			}
		})
	}
}

// TestCorruptedInTransit flips a byte of an upload between the client and
// the emulator: the put fails and leaves no .data and no .meta.
func TestCorruptedInTransit(t *testing.T) {
	for _, size := range []int{1000, 1 << 20} {
		t.Run(strconv.Itoa(size)+" bytes", func(t *testing.T) {
			s, srv, px := proxied(t, fastRetry)
			sc := artifacts.AppScope("crc")
			var flipped atomic.Int32
			px.hook = func(w http.ResponseWriter, r *http.Request, forward http.Handler) bool {
				q := r.URL.Query()
				if kind(r) != "create.data" || r.Body == nil || (q.Get("upload_id") == "" && q.Get("uploadType") != "multipart") {
					return false // not a request carrying payload bytes
				}
				b, err := io.ReadAll(r.Body)
				if err != nil {
					t.Error(err)
				}
				if len(b) > 100 && flipped.CompareAndSwap(0, 1) {
					b[len(b)-100] ^= 0x20
				}
				r.Body = io.NopCloser(bytes.NewReader(b))
				forward.ServeHTTP(w, r)
				return true
			}
			_, err := s.Put(context.Background(), sc, "n", bytes.NewReader(bytes.Repeat([]byte("c"), size)), artifacts.PutOptions{})
			if err == nil {
				t.Fatal("Put of a payload damaged in transit succeeded")
			}
			if flipped.Load() != 1 {
				t.Fatal("no byte was flipped")
			}
			t.Logf("Put: %v", err)
			if _, data, meta := published(srv, s, sc, "n", 1); data || meta {
				t.Errorf("after the damaged put: .data %v, .meta %v; want neither", data, meta)
			}
		})
	}
}
