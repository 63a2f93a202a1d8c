// Package artifactstest is the conformance suite of the artifact store:
// every driver (the Erlang layouts on disk and on Cloud Storage, Google
// ADK's GCS and file layouts, in-memory) must pass Run, through the
// portable *artifacts.Store. The suite checks the contract documented on
// *artifacts.Store with named subtests: round trips, version numbering,
// ranges, metadata, paging, every validation limit at and just past its
// edge, deadlines, payload limits, corruption detection, concurrency, and
// the optional ScopeLister and Walker interfaces.
//
// The suite is driven by the facts the driver declares in its
// Capabilities: the scope kinds it holds (a layout without app scopes is
// tested in session scopes instead), the first version number, whether
// numbers are reused after a delete, whether records hold a digest, the
// name rules of a layout that stores names unescaped (UserNamePrefix,
// MaxSegmentBytes, ...), string-only metadata. Where a fact changes what
// is right, the subtest checks the layout's own behaviour (numbers from 0,
// the deleted highest number handed out again, "user:" names), and the
// facts themselves are tested, not trusted.
//
// The suite refuses to skip what a driver could do: an adapter that does
// not supply the corruption hooks or a store with a small payload limit
// fails. The only skips name the declared fact that makes a subtest
// inapplicable (a layout that keeps no digest, checksum or size cannot
// detect a damaged payload: UncheckedPayloads).
package artifactstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Harness tells Run how to make and damage stores of one adapter.
type Harness struct {
	// New returns a new, empty store with the adapter's default limits. It
	// is called once per subtest; use t.TempDir, t.Cleanup and the like.
	New func(t *testing.T) artifacts.Driver
	// NewWithLimit returns a new, empty store whose Capabilities report, and
	// whose Put enforces, MaxArtifactBytes equal to maxArtifactBytes.
	// Mandatory: without it the artifact_too_large test fails.
	NewWithLimit func(t *testing.T, maxArtifactBytes int64) artifacts.Driver
	// CorruptPayload damages the stored payload of a published version of
	// at least one byte without changing its record, by writing to the
	// backend directly (flipping a bit, say). It may keep the payload's
	// size. When nil, the stores New returns must implement Corrupter.
	CorruptPayload func(t *testing.T, s *artifacts.Store, scope artifacts.Scope, name string, version int64)
	// CorruptRecord damages the stored record of a published version so
	// that it no longer decodes, by writing to the backend directly. When
	// nil, the stores New returns must implement Corrupter.
	CorruptRecord func(t *testing.T, s *artifacts.Store, scope artifacts.Scope, name string, version int64)
	// SkipSlow shrinks the concurrency tests (8 writers of 10 puts instead
	// of 50). Every subtest still runs.
	SkipSlow bool
	// Subtests, when not empty, names the only subtests of the suite to
	// run (QuickSubtests, say): a quick check of a slow backend in the
	// default test tier, whose full run is in the integration tier. A
	// name that is not a subtest of the suite fails the run.
	Subtests []string
}

// QuickSubtests are the subtests of the suite that are quick on every
// backend (a handful of requests each): the contract's main paths and its
// failure paths (not found, too large, damaged payloads and records,
// broken versions), without the paging, validation and concurrency cases
// that take minutes against an emulator. For Harness.Subtests.
var QuickSubtests = []string{
	"Capabilities", "Facts", "RoundTrip", "MetadataRoundTrip", "Stat",
	"NotFound", "Delete", "DeleteExact", "LatestAfterDeletes", "Cursors",
	"TooLarge", "CorruptPayload", "CorruptRecord", "BrokenVersions",
}

// Corrupter is implemented by stores that can damage their own data for
// tests, such as the in-memory adapter. Run uses it when the Harness has no
// corruption hooks.
type Corrupter interface {
	// CorruptPayload damages the payload of a published version so that its
	// digest no longer matches its record.
	CorruptPayload(scope artifacts.Scope, name string, version int64) error
	// CorruptRecord damages the record of a published version so that
	// reading it fails with CodeCorrupt.
	CorruptRecord(scope artifacts.Scope, name string, version int64) error
}

// suite carries the harness, and the facts of the driver's layout, into
// the subtests.
type suite struct {
	h Harness
	// caps are the declared facts, as NewStore fills them in.
	caps artifacts.Capabilities
	// app, user and session are the suite's three fixed scopes. A layout
	// without app scopes gets a second session scope for app (and one
	// without user scopes a third for user), so that the tests written for
	// three distinct scopes still have three.
	app, user, session artifacts.Scope
}

// newSuite reads the facts of the driver h makes and picks the scopes.
func newSuite(t *testing.T, h Harness) *suite {
	t.Helper()
	d := h.New(t)
	if d == nil {
		t.Fatal("Harness.New returned nil")
	}
	c := artifacts.NewStore(d).Capabilities()
	s := &suite{h: h, caps: c}
	s.app = s.scopeOf(artifacts.KindApp, "conformance-app", "", "")
	s.user = s.scopeOf(artifacts.KindUser, "conformance-app", "user-1", "")
	s.session = s.own(artifacts.SessionScope("conformance-app", "user-1", "session-1"))
	if !c.HasKind(artifacts.KindSession) {
		t.Fatalf("the store declares no session scopes (%v): the suite needs them", c.ScopeKinds)
	}
	return s
}

// scopeOf returns a scope of kind with the given parts, or, when the
// layout holds no scopes of kind, a session scope of its own; of the
// layout's only app when it has one (see own).
func (s *suite) scopeOf(kind artifacts.Kind, app, user, session string) artifacts.Scope {
	if s.caps.HasKind(kind) {
		switch kind {
		case artifacts.KindApp:
			return s.own(artifacts.AppScope(app))
		case artifacts.KindUser:
			return s.own(artifacts.UserScope(app, user))
		}
		return s.own(artifacts.SessionScope(app, user, session))
	}
	if user == "" {
		user = "as-user-of-" + app
	}
	return s.own(artifacts.SessionScope(app, user, "as-"+string(kind)+"-scope"))
}

// own returns scope in the layout's only app (Capabilities.OnlyApp), when
// it has one, so that the tests written with many apps keep their users
// and sessions apart; otherwise scope itself. The OnlyApp fact itself is
// tested by testFacts.
func (s *suite) own(scope artifacts.Scope) artifacts.Scope {
	if s.caps.OnlyApp != "" && scope.App != "" {
		scope.App = s.caps.OnlyApp
	}
	return scope
}

// n returns the name the layout gives name in scope: with
// Capabilities.UserNamePrefix in front in a user scope.
func (s *suite) n(scope artifacts.Scope, name string) string {
	if scope.Kind == artifacts.KindUser {
		return s.caps.UserNamePrefix + name
	}
	return name
}

// v returns the number of a name's i-th version (1-based), as the layout
// numbers them from Capabilities.FirstVersion.
func (s *suite) v(i int) int64 { return s.caps.FirstVersion + int64(i) - 1 }

// digestOf is the digest a record of payload b holds: its SHA-256 when
// the layout stores digests, else none.
func (s *suite) digestOf(b []byte) string {
	if !s.caps.StoresDigest {
		return ""
	}
	return digest(b)
}

// holds reports whether the layout can hold scope, by its declared facts:
// its kind, and parts within MaxSegmentBytes without a ScopePartForbidden
// byte.
func (s *suite) holds(scope artifacts.Scope) bool {
	if !s.caps.HasKind(scope.Kind) {
		return false
	}
	for _, p := range scope.Parts() {
		if s.caps.MaxSegmentBytes > 0 && len(p) > s.caps.MaxSegmentBytes {
			return false
		}
		if s.caps.ScopePartForbidden != "" && strings.ContainsAny(p, s.caps.ScopePartForbidden) {
			return false
		}
	}
	return true
}

// longName returns a name of exactly n bytes whose segments are at most
// Capabilities.MaxSegmentBytes long.
func (s *suite) longName(n int) string {
	seg := s.caps.MaxSegmentBytes
	if seg <= 1 || seg >= n {
		return strings.Repeat("n", n)
	}
	b := []byte(strings.Repeat(strings.Repeat("n", seg-1)+"/", n/seg+1)[:n])
	if b[n-1] == '/' {
		b[n-1] = 'n'
	}
	return string(b)
}

// takes reports whether the layout takes name (valid by ValidateName) in
// any scope it holds, by its declared facts: MaxNameBytes,
// MaxSegmentBytes and NameForbidden.
func (s *suite) takes(name string) bool {
	if len(name) > s.caps.MaxNameBytes {
		return false
	}
	if s.caps.NameForbidden != "" && strings.ContainsAny(name, s.caps.NameForbidden) {
		return false
	}
	segs := strings.Split(name, "/")
	for i, seg := range segs {
		if s.caps.MaxSegmentBytes > 0 && len(seg) > s.caps.MaxSegmentBytes {
			return false
		}
		if i == len(segs)-1 && slices.Contains(s.caps.ReservedSegments, seg) {
			return false
		}
	}
	return true
}

// test is one named subtest of Run.
type test struct {
	name string
	fn   func(t *testing.T, s *suite)
}

// Run runs the conformance suite against the adapter h describes. Each
// subtest uses its own stores and runs in parallel with the others.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("artifactstest: Harness.New is nil")
	}
	s := newSuite(t, h)
	tests := suiteTests()
	if len(h.Subtests) > 0 {
		var err error
		if tests, err = subset(tests, h.Subtests); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, s)
		})
	}
}

// suiteTests are the subtests of Run, in order.
func suiteTests() []test {
	return []test{
		{"Capabilities", testCapabilities},
		{"Facts", testFacts},
		{"NameRules", testNameRules},
		{"RoundTrip", testRoundTrip},
		{"DefaultMIMEType", testDefaultMIMEType},
		{"MetadataRoundTrip", testMetadataRoundTrip},
		{"Stat", testStat},
		{"GetRange", testGetRange},
		{"VersionsNeverReused", testVersionsNeverReused},
		{"ScopesAndNamesIsolated", testIsolation},
		{"LatestAfterDeletes", testLatestAfterDeletes},
		{"Delete", testDelete},
		{"DeleteExact", testDeleteExact},
		{"NotFound", testNotFound},
		{"ListNamesPaging", testListNamesPaging},
		{"ListVersionsPaging", testListVersionsPaging},
		{"ListNamesOrder", testListNamesOrder},
		{"Cursors", testCursors},
		{"Validation", testValidation},
		{"Deadlines", testDeadlines},
		{"TooLarge", testTooLarge},
		{"CorruptPayload", testCorruptPayload},
		{"CorruptRecord", testCorruptRecord},
		{"BrokenVersions", testBrokenVersions},
		{"Concurrency", testConcurrency},
		{"ListScopesAndWalk", testListScopesAndWalk},
	}
}

// subset returns the tests named in names, in the suite's order, or an
// error naming a name that is not a test of the suite.
func subset(tests []test, names []string) ([]test, error) {
	var out []test
	for _, tc := range tests {
		if slices.Contains(names, tc.name) {
			out = append(out, tc)
		}
	}
	for _, name := range names {
		if !slices.ContainsFunc(tests, func(tc test) bool { return tc.name == name }) {
			return nil, fmt.Errorf("artifactstest: Harness.Subtests names %q, not a subtest of the suite", name)
		}
	}
	return out, nil
}

// newStore returns a new store from the harness.
func (s *suite) newStore(t *testing.T) *artifacts.Store {
	t.Helper()
	d := s.h.New(t)
	if d == nil {
		t.Fatal("Harness.New returned nil")
	}
	return artifacts.NewStore(d)
}

// corruptPayload damages a payload through the harness or the store.
func (s *suite) corruptPayload(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, v int64) {
	t.Helper()
	if s.h.CorruptPayload != nil {
		s.h.CorruptPayload(t, st, scope, name, v)
		return
	}
	c, ok := corrupterOf(st)
	if !ok {
		t.Fatal("corruption detection is mandatory: set Harness.CorruptPayload or implement artifactstest.Corrupter")
	}
	if err := c.CorruptPayload(scope, name, v); err != nil {
		t.Fatalf("CorruptPayload(%s, %q, %d): %v", scope, name, v, err)
	}
}

// corruptRecord damages a record through the harness or the store.
func (s *suite) corruptRecord(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, v int64) {
	t.Helper()
	if s.h.CorruptRecord != nil {
		s.h.CorruptRecord(t, st, scope, name, v)
		return
	}
	c, ok := corrupterOf(st)
	if !ok {
		t.Fatal("corruption detection is mandatory: set Harness.CorruptRecord or implement artifactstest.Corrupter")
	}
	if err := c.CorruptRecord(scope, name, v); err != nil {
		t.Fatalf("CorruptRecord(%s, %q, %d): %v", scope, name, v, err)
	}
}

// data returns n deterministic pseudo-random bytes for seed (xorshift64*).
func data(n int, seed uint64) []byte {
	b := make([]byte, n)
	x := seed*0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D
	for i := range b {
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		b[i] = byte((x * 0x2545F4914F6CDD1D) >> 56)
	}
	return b
}

// chunky hides io.WriterTo and other fast paths and returns short reads,
// so that Put must stream.
type chunky struct{ r io.Reader }

func (c chunky) Read(p []byte) (int, error) {
	if len(p) > 4093 {
		p = p[:4093]
	}
	return c.r.Read(p)
}

func reader(b []byte) io.Reader { return chunky{bytes.NewReader(b)} }

// put stores b and fails the test on error.
func put(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, b []byte, opts artifacts.PutOptions) artifacts.Record {
	t.Helper()
	rec, err := st.Put(t.Context(), scope, name, reader(b), opts)
	if err != nil {
		t.Fatalf("Put(%s, %q, %d bytes): %v", scope, name, len(b), err)
	}
	return rec
}

// putN stores n versions with payloads data(size, seed+i) and returns
// their records.
func putN(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, n int, seed uint64) []artifacts.Record {
	t.Helper()
	recs := make([]artifacts.Record, n)
	for i := range recs {
		recs[i] = put(t, st, scope, name, data(100+i, seed+uint64(i)), artifacts.PutOptions{})
	}
	return recs
}

// readAll reads r to its end and closes it.
func readAll(r *artifacts.Reader) ([]byte, error) {
	defer r.Close()
	return io.ReadAll(r)
}

// get reads a version whole; the error is Get's or the reader's.
func get(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string, v int64) ([]byte, error) {
	r, err := st.Get(ctx, scope, name, v)
	if err != nil {
		return nil, err
	}
	return readAll(r)
}

// getRange reads a range whole; the error is GetRange's or the reader's.
func getRange(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string, v, off, n int64) ([]byte, error) {
	r, err := st.GetRange(ctx, scope, name, v, off, n)
	if err != nil {
		return nil, err
	}
	return readAll(r)
}

// mustGet reads a version and compares it with want.
func mustGet(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, v int64, want []byte) {
	t.Helper()
	got, err := get(t.Context(), st, scope, name, v)
	if err != nil {
		t.Fatalf("Get(%s, %q, %d): %v", scope, name, v, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%s, %q, %d) = %d bytes %s, want %d bytes %s", scope, name, v, len(got), short(got), len(want), short(want))
	}
}

func short(b []byte) string {
	if len(b) > 16 {
		return fmt.Sprintf("%x...", b[:16])
	}
	return fmt.Sprintf("%x", b)
}

// wantCode checks that err is an *artifacts.Error with code want.
func wantCode(t *testing.T, err error, want artifacts.Code, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	if err == nil {
		t.Errorf("%s: got no error, want code %s", what, want)
		return
	}
	var e *artifacts.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: got %T %v, want an *artifacts.Error with code %s", what, err, err, want)
		return
	}
	if got := artifacts.CodeOf(err); got != want {
		t.Errorf("%s: got code %s (%v), want %s", what, got, err, want)
	}
}

// sameRecord compares two records field by field, metadata by value.
func sameRecord(t *testing.T, got, want artifacts.Record, format string, args ...any) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	if got.Scope != want.Scope || got.Name != want.Name || got.Version != want.Version ||
		got.MIMEType != want.MIMEType || got.Digest != want.Digest || got.Size != want.Size ||
		got.CreatedAt != want.CreatedAt {
		t.Errorf("%s: record\n got  %+v\n want %+v", what, withoutMD(got), withoutMD(want))
	}
	if !metaEqual(want.Metadata, got.Metadata) {
		t.Errorf("%s: metadata\n got  %#v\n want %#v", what, got.Metadata, want.Metadata)
	}
}

func withoutMD(r artifacts.Record) artifacts.Record {
	r.Metadata = nil
	return r
}

// checkPut checks a record Put returned for payload b.
func (s *suite) checkPut(t *testing.T, rec artifacts.Record, scope artifacts.Scope, name string, version int64, mime string, b []byte) {
	t.Helper()
	if rec.Scope != scope || rec.Name != name || rec.Version != version || rec.MIMEType != mime ||
		rec.Size != int64(len(b)) || rec.Digest != s.digestOf(b) {
		t.Errorf("Put returned %+v, want scope %s, name %q, version %d, MIME %q, size %d, digest %q",
			withoutMD(rec), scope, name, version, mime, len(b), s.digestOf(b))
	}
	now := time.Now()
	if c := rec.Created(); c.Before(now.Add(-time.Hour)) || c.After(now.Add(time.Hour)) {
		t.Errorf("Put returned created_at %d (%s), not within an hour of now", rec.CreatedAt, c)
	}
}

func digest(b []byte) string {
	h := sha256.Sum256(b)
	return artifacts.DigestHex(h[:])
}

// metaEqual compares metadata the way a decoded record represents it:
// integers by value whatever their Go type (but never as floats), floats
// as float64, lists as []any and maps as map[string]any.
func metaEqual(want, got any) bool {
	if wi, ok := toBig(want); ok {
		gi, ok := toBig(got)
		return ok && wi.Cmp(gi) == 0
	}
	switch w := want.(type) {
	case nil:
		return got == nil
	case bool, string:
		return got == want
	case float32:
		g, ok := got.(float64)
		return ok && g == float64(w)
	case float64:
		g, ok := got.(float64)
		return ok && g == w
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !metaEqual(w[i], g[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok || !metaEqual(v, gv) {
				return false
			}
		}
		return true
	}
	return false
}

func toBig(v any) (*big.Int, bool) {
	switch x := v.(type) {
	case int:
		return big.NewInt(int64(x)), true
	case int8:
		return big.NewInt(int64(x)), true
	case int16:
		return big.NewInt(int64(x)), true
	case int32:
		return big.NewInt(int64(x)), true
	case int64:
		return big.NewInt(x), true
	case uint:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint8:
		return big.NewInt(int64(x)), true
	case uint16:
		return big.NewInt(int64(x)), true
	case uint32:
		return big.NewInt(int64(x)), true
	case uint64:
		return new(big.Int).SetUint64(x), true
	case *big.Int:
		return x, x != nil
	}
	return nil, false
}

// allNames pages through ListNames with limit and returns every entry.
func allNames(t *testing.T, st *artifacts.Store, scope artifacts.Scope, limit int) []artifacts.NameEntry {
	t.Helper()
	var out []artifacts.NameEntry
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100000 {
			t.Fatalf("ListNames(%s, limit %d) does not end", scope, limit)
		}
		page, err := st.ListNames(t.Context(), scope, artifacts.ListOptions{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListNames(%s, limit %d, cursor %q): %v", scope, limit, cursor, err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

// versionsOf lists every published version of a name, ascending.
func versionsOf(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string) []int64 {
	t.Helper()
	var out []int64
	cursor := ""
	for {
		page, err := st.ListVersions(t.Context(), scope, name, artifacts.ListOptions{Cursor: cursor})
		if artifacts.IsNotFound(err) && cursor == "" {
			return nil
		}
		if err != nil {
			t.Fatalf("ListVersions(%s, %q, cursor %q): %v", scope, name, cursor, err)
		}
		for _, r := range page.Items {
			out = append(out, r.Version)
		}
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

// nameCounts returns the scope's names with their published version
// counts, or an empty map when ListNames reports not_found.
func nameCounts(t *testing.T, st *artifacts.Store, scope artifacts.Scope) map[string]int {
	t.Helper()
	out := map[string]int{}
	page, err := st.ListNames(t.Context(), scope, artifacts.ListOptions{Limit: st.Capabilities().MaxPageLimit})
	if artifacts.IsNotFound(err) {
		return out
	}
	if err != nil {
		t.Fatalf("ListNames(%s): %v", scope, err)
	}
	for _, e := range page.Items {
		out[e.Name] = e.Versions
	}
	if page.NextCursor != "" {
		for _, e := range allNames(t, st, scope, 0) {
			out[e.Name] = e.Versions
		}
	}
	return out
}

// scopeSet lists the scopes a ScopeLister reports, or nil when the store
// does not implement it.
func scopeSet(t *testing.T, st *artifacts.Store) map[artifacts.Scope]bool {
	t.Helper()
	l, ok := st, canListScopes(st)
	if !ok {
		return nil
	}
	scopes, err := l.ListScopes(t.Context())
	if err != nil {
		t.Fatalf("ListScopes: %v", err)
	}
	set := map[artifacts.Scope]bool{}
	for _, sc := range scopes {
		if set[sc] {
			t.Errorf("ListScopes reports %s twice", sc)
		}
		set[sc] = true
	}
	return set
}

func equalSets[K comparable](a, b map[K]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// canListScopes reports whether the store's driver can list its scopes.
func canListScopes(st *artifacts.Store) bool {
	var l artifacts.ScopeLister
	return st.As(&l)
}

// corrupterOf returns the store's driver as a Corrupter, when it is one.
func corrupterOf(st *artifacts.Store) (Corrupter, bool) {
	var c Corrupter
	ok := st.As(&c)
	return c, ok
}
