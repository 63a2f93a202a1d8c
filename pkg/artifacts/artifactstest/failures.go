package artifactstest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// blockingReader yields a first chunk, then blocks until its context is
// done, then ends as its mode says.
type blockingReader struct {
	ctx   context.Context
	mode  string // "data", "error" or "eof"
	state int
}

func (r *blockingReader) Read(p []byte) (int, error) {
	r.state++
	switch r.state {
	case 1:
		return copy(p, data(min(len(p), 100), 1)), nil
	case 2:
		<-r.ctx.Done()
		switch r.mode {
		case "data":
			return copy(p, "late bytes"), nil
		case "error":
			return 0, r.ctx.Err()
		}
	}
	return 0, io.EOF
}

func testDeadlines(t *testing.T, s *suite) {
	type call struct {
		name string
		fn   func(ctx context.Context, st *artifacts.Store) error
	}
	calls := []call{
		{"Put new name", func(ctx context.Context, st *artifacts.Store) error {
			return errOf(st.Put(ctx, s.app, "new-name", reader([]byte("x")), artifacts.PutOptions{}))
		}},
		{"Put existing name", func(ctx context.Context, st *artifacts.Store) error {
			return errOf(st.Put(ctx, s.app, baselineName, reader([]byte("x")), artifacts.PutOptions{}))
		}},
		{"Put new scope", func(ctx context.Context, st *artifacts.Store) error {
			return errOf(st.Put(ctx, s.user, s.n(s.user, "new-name"), reader([]byte("x")), artifacts.PutOptions{}))
		}},
		{"Stat", func(ctx context.Context, st *artifacts.Store) error {
			return errOf(st.Stat(ctx, s.app, baselineName, artifacts.Latest))
		}},
		{"Get", func(ctx context.Context, st *artifacts.Store) error {
			return errOf(st.Get(ctx, s.app, baselineName, artifacts.Latest))
		}},
		{"GetRange", func(ctx context.Context, st *artifacts.Store) error {
			return errOf(st.GetRange(ctx, s.app, baselineName, s.v(1), 0, 2))
		}},
		{"ListNames", func(ctx context.Context, st *artifacts.Store) error {
			return errOf(st.ListNames(ctx, s.app, artifacts.ListOptions{}))
		}},
		{"ListVersions", func(ctx context.Context, st *artifacts.Store) error {
			return errOf(st.ListVersions(ctx, s.app, baselineName, artifacts.ListOptions{}))
		}},
		{"Delete", func(ctx context.Context, st *artifacts.Store) error {
			return errOf(st.Delete(ctx, s.app, baselineName, artifacts.Selector{Kind: artifacts.SelectAll}))
		}},
		{"ListScopes", func(ctx context.Context, st *artifacts.Store) error {
			if l, ok := st, canListScopes(st); ok {
				return errOf(l.ListScopes(ctx))
			}
			return artifacts.CheckContext(ctx, "skip")
		}},
		{"Walk", func(ctx context.Context, st *artifacts.Store) error {
			if w, ok := st, st.CanWalk(); ok {
				return w.Walk(ctx, func(artifacts.ScopeUsage) error { return nil })
			}
			return artifacts.CheckContext(ctx, "skip")
		}},
	}
	for _, tc := range []struct {
		what string
		code artifacts.Code
		ctx  func(t *testing.T) context.Context
	}{
		{"expired", artifacts.CodeTimeout, func(t *testing.T) context.Context {
			ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}},
		{"canceled", artifacts.CodeCanceled, func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			b := newBaseline(t, s)
			ctx := tc.ctx(t)
			for _, c := range calls {
				wantCode(t, c.fn(ctx, b.st), tc.code, "%s with a %s context", c.name, tc.what)
				b.unchanged(t, c.name+" with a "+tc.what+" context")
			}
			mustGet(t, b.st, s.app, baselineName, s.v(1), []byte("baseline"))
		})
	}
	for _, mode := range []string{"data", "error", "eof"} {
		for _, code := range []artifacts.Code{artifacts.CodeTimeout, artifacts.CodeCanceled} {
			t.Run("reader blocks past the "+map[artifacts.Code]string{artifacts.CodeTimeout: "deadline", artifacts.CodeCanceled: "cancel"}[code]+" then returns "+mode, func(t *testing.T) {
				b := newBaseline(t, s)
				var ctx context.Context
				var cancel context.CancelFunc
				if code == artifacts.CodeTimeout {
					ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
				} else {
					ctx, cancel = context.WithCancel(t.Context())
					time.AfterFunc(100*time.Millisecond, cancel)
				}
				defer cancel()
				for _, name := range []string{baselineName, "slow"} {
					_, err := b.st.Put(ctx, s.app, name, &blockingReader{ctx: ctx, mode: mode}, artifacts.PutOptions{})
					wantCode(t, err, code, "Put(%q) whose reader blocks past the context's end and returns %s", name, mode)
					b.unchanged(t, "the blocked Put")
					if got := versionsOf(t, b.st, s.app, baselineName); !slices.Equal(got, s.vs(1)) {
						t.Errorf("versions of %q after the blocked Put = %v, want %v", baselineName, got, s.vs(1))
					}
				}
				// The store still works; a gap in the numbers is allowed.
				rec := put(t, b.st, s.app, baselineName, []byte("later"), artifacts.PutOptions{})
				if rec.Version < s.v(2) {
					t.Errorf("Put after the blocked Put got version %d, want at least %d", rec.Version, s.v(2))
				}
				mustGet(t, b.st, s.app, baselineName, artifacts.Latest, []byte("later"))
			})
		}
	}
}

// endless yields bytes forever, up to a safety stop, counting them.
type endless struct{ n atomic.Int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.n.Load() > 256<<20 {
		return 0, errors.New("artifactstest: Put kept reading 256 MiB past the payload limit")
	}
	for i := range p {
		p[i] = byte(i)
	}
	e.n.Add(int64(len(p)))
	return len(p), nil
}

func testTooLarge(t *testing.T, s *suite) {
	if s.h.NewWithLimit == nil {
		t.Fatal("Harness.NewWithLimit is nil: the artifact_too_large test is mandatory")
	}
	const limit = 1000
	st := artifacts.NewStore(s.h.NewWithLimit(t, limit))
	if got := st.Capabilities().MaxArtifactBytes; got != limit {
		t.Fatalf("NewWithLimit(%d).Capabilities().MaxArtifactBytes = %d", limit, got)
	}
	b := &baseline{s: s, st: st, names: map[string]int{}, scopes: map[artifacts.Scope]bool{}}
	full := data(limit, 3)
	b.okPut(t, s.app, "fits", artifacts.PutOptions{}) // a short payload
	rec, err := st.Put(t.Context(), s.app, "fits", reader(full), artifacts.PutOptions{})
	if err != nil {
		t.Fatalf("Put of exactly MaxArtifactBytes: %v", err)
	}
	b.names["fits"]++
	mustGet(t, st, s.app, "fits", rec.Version, full)
	rec, err = st.Put(t.Context(), s.app, "fits", iotest.DataErrReader(bytes.NewReader(full)), artifacts.PutOptions{})
	if err != nil {
		t.Fatalf("Put of exactly MaxArtifactBytes from a reader returning data with io.EOF: %v", err)
	}
	b.names["fits"]++
	mustGet(t, st, s.app, "fits", rec.Version, full)
	b.unchanged(t, "the puts that fit")

	over := data(limit+1, 4)
	for _, tc := range []struct {
		what string
		r    func() io.Reader
	}{
		{"MaxArtifactBytes+1", func() io.Reader { return reader(over) }},
		{"MaxArtifactBytes+1 in one read", func() io.Reader { return bytes.NewReader(over) }},
		{"MaxArtifactBytes+1 with io.EOF", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(over)) }},
		{"a megabyte", func() io.Reader { return reader(data(1<<20, 5)) }},
	} {
		for _, name := range []string{"fits", "new-name"} {
			_, err := st.Put(t.Context(), s.app, name, tc.r(), artifacts.PutOptions{})
			wantCode(t, err, artifacts.CodeTooLarge, "Put(%q) of %s", name, tc.what)
			b.unchanged(t, "Put of "+tc.what)
		}
	}
	e := &endless{}
	_, err = st.Put(t.Context(), s.user, s.n(s.user, "endless"), e, artifacts.PutOptions{})
	wantCode(t, err, artifacts.CodeTooLarge, "Put of an endless stream")
	if n := e.n.Load(); n > limit+(4<<20) {
		t.Errorf("Put of an endless stream read %d bytes with a limit of %d; it must stop soon after the limit", n, limit)
	}
	b.unchanged(t, "Put of an endless stream")
	if got := versionsOf(t, st, s.app, "fits"); len(got) != 3 {
		t.Errorf("versions of fits = %v, want 3", got)
	}
}

// wantCorruptRead checks that a read of a damaged payload fails with
// CodeCorrupt, at open or at the end, and yields no bytes when the payload
// is small enough to be checked before the first byte.
func wantCorruptRead(t *testing.T, r *artifacts.Reader, err error, small bool, what string) {
	t.Helper()
	if err != nil {
		wantCode(t, err, artifacts.CodeCorrupt, "%s: open", what)
		return
	}
	got, err := readAll(r)
	if err == nil {
		t.Errorf("%s: read %d bytes and io.EOF from a damaged payload; want code %s", what, len(got), artifacts.CodeCorrupt)
		return
	}
	wantCode(t, err, artifacts.CodeCorrupt, "%s: final Read", what)
	if small && len(got) > 0 {
		t.Errorf("%s: yielded %d bytes of a damaged payload of at most SmallPayloadBytes; want none", what, len(got))
	}
}

func testCorruptPayload(t *testing.T, s *suite) {
	if s.caps.UncheckedPayloads {
		t.Skipf("Capabilities.UncheckedPayloads: the %s layout keeps no digest, checksum or size of a payload, so no read can tell a damaged payload from an intact one (CorruptRecord checks what it does keep)", s.caps.Layout)
	}
	st := s.newStore(t)
	caps := st.Capabilities()
	for i, size := range []int{1, 1000, artifacts.SmallPayloadBytes, artifacts.SmallPayloadBytes + 1, 3 << 20} {
		name := "corrupt/" + string(rune('a'+i))
		bad := data(size, uint64(i))
		good := data(size, uint64(i)+100)
		put(t, st, s.session, name, bad, artifacts.PutOptions{})
		put(t, st, s.session, name, good, artifacts.PutOptions{})
		s.corruptPayload(t, st, s.session, name, s.v(1))
		small := size <= artifacts.SmallPayloadBytes
		ctx := t.Context()
		r, err := st.Get(ctx, s.session, name, s.v(1))
		wantCorruptRead(t, r, err, small, "Get of a damaged payload of "+itoa(size)+" bytes")
		if caps.VerifiedRanges {
			for _, rg := range [][2]int64{{0, 1}, {0, -1}, {int64(size) / 2, -1}, {int64(size) - 1, 1}} {
				r, err := st.GetRange(ctx, s.session, name, s.v(1), rg[0], rg[1])
				wantCorruptRead(t, r, err, small, "GetRange("+itoa(int(rg[0]))+", "+itoa(int(rg[1]))+") of a damaged payload of "+itoa(size)+" bytes")
			}
		}
		// The intact version is unaffected.
		mustGet(t, st, s.session, name, s.v(2), good)
		mustGet(t, st, s.session, name, artifacts.Latest, good)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func testCorruptRecord(t *testing.T, s *suite) {
	if s.caps.AttributeRecords {
		t.Skipf("Capabilities.AttributeRecords: the %s layout's records are its objects' own attributes, which always decode (CorruptPayload checks what it does keep)", s.caps.Layout)
	}
	st := s.newStore(t)
	name := s.n(s.user, "rec")
	recs := putN(t, st, s.user, name, 3, 50)
	s.corruptRecord(t, st, s.user, name, s.v(2))
	ctx := t.Context()
	wantCode(t, errOf(st.Stat(ctx, s.user, name, s.v(2))), artifacts.CodeCorrupt, "Stat of a damaged record")
	wantCode(t, errOf(st.Get(ctx, s.user, name, s.v(2))), artifacts.CodeCorrupt, "Get of a damaged record")
	wantCode(t, errOf(st.GetRange(ctx, s.user, name, s.v(2), 0, 1)), artifacts.CodeCorrupt, "GetRange of a damaged record")
	wantCode(t, errOf(st.ListVersions(ctx, s.user, name, artifacts.ListOptions{})), artifacts.CodeCorrupt, "ListVersions over a damaged record")
	wantCode(t, errOf(st.ListVersions(ctx, s.user, name, artifacts.ListOptions{Cursor: strconv.FormatInt(s.v(1), 10), Limit: 1})), artifacts.CodeCorrupt, "ListVersions page holding only the damaged record")
	// Intact versions still read, and a page that skips the damage works.
	for _, v := range []int64{s.v(1), s.v(3), artifacts.Latest} {
		got, err := st.Stat(ctx, s.user, name, v)
		if err != nil {
			t.Errorf("Stat(v%d) beside a damaged record: %v", v, err)
			continue
		}
		want := recs[2]
		if v == s.v(1) {
			want = recs[0]
		}
		sameRecord(t, got, want, "Stat(v%d) beside a damaged record", v)
	}
	mustGet(t, st, s.user, name, s.v(1), data(100, 50))
	if p, err := st.ListVersions(ctx, s.user, name, artifacts.ListOptions{Cursor: strconv.FormatInt(s.v(2), 10)}); err != nil || len(p.Items) != 1 || p.Items[0].Version != s.v(3) {
		t.Errorf("ListVersions after the damaged record = %+v, %v; want v%d", p, err, s.v(3))
	}
	// Damage the latest: reads of the latest fail too.
	s.corruptRecord(t, st, s.user, name, s.v(3))
	wantCode(t, errOf(st.Stat(ctx, s.user, name, artifacts.Latest)), artifacts.CodeCorrupt, "Stat(latest) of a damaged record")
	wantCode(t, errOf(st.Get(ctx, s.user, name, artifacts.Latest)), artifacts.CodeCorrupt, "Get(latest) of a damaged record")
	if w, ok := st, st.CanWalk(); ok {
		var problems []int64
		err := w.Walk(ctx, func(u artifacts.ScopeUsage) error {
			for _, n := range u.Names {
				for _, p := range n.Problems {
					problems = append(problems, p.Version)
				}
				for _, r := range n.Records {
					if r.Version != s.v(1) {
						t.Errorf("Walk reports damaged v%d as a record", r.Version)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("Walk over damaged records: %v", err)
		}
		slices.Sort(problems)
		if !slices.Equal(problems, s.vs(2, 3)) {
			t.Errorf("Walk reports problems with versions %v, want %v", problems, s.vs(2, 3))
		}
	}
}
