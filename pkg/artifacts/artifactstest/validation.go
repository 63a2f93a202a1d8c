package artifactstest

import (
	"fmt"
	"maps"
	"math"
	"math/big"
	"strings"
	"testing"
	"unicode"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// baseline is a store holding one known version, and what it should list.
type baseline struct {
	s      *suite
	st     *artifacts.Store
	names  map[string]int           // names of s.app and their versions
	scopes map[artifacts.Scope]bool // every scope with a version
}

const baselineName = "baseline"

func newBaseline(t *testing.T, s *suite) *baseline {
	st := s.newStore(t)
	put(t, st, s.app, baselineName, []byte("baseline"), artifacts.PutOptions{})
	return &baseline{s: s, st: st, names: map[string]int{baselineName: 1}, scopes: map[artifacts.Scope]bool{s.app: true}}
}

// unchanged checks that the store lists exactly what b expects.
func (b *baseline) unchanged(t *testing.T, after string) {
	t.Helper()
	if got := nameCounts(t, b.st, b.s.app); !maps.Equal(got, b.names) {
		t.Errorf("after %s: scope lists %v, want %v", after, got, b.names)
	}
	if got := scopeSet(t, b.st); got != nil && !equalSets(got, b.scopes) {
		t.Errorf("after %s: ListScopes = %v, want %v", after, got, b.scopes)
	}
}

// okPut puts and records what the store should now list.
func (b *baseline) okPut(t *testing.T, scope artifacts.Scope, name string, opts artifacts.PutOptions) {
	t.Helper()
	payload := []byte(name + "|" + scope.String())
	rec, err := b.st.Put(t.Context(), scope, name, reader(payload), opts)
	if err != nil {
		t.Errorf("Put(%s, %.40q) at the edge of a limit: %v", scope, name, err)
		return
	}
	mime := opts.MIMEType
	if mime == "" {
		mime = artifacts.DefaultMIMEType
	}
	got, err := b.st.Stat(t.Context(), scope, name, rec.Version)
	if err != nil {
		t.Errorf("Stat after an edge Put: %v", err)
		return
	}
	md := opts.Metadata
	if md == nil {
		md = artifacts.Metadata{}
	}
	if got.MIMEType != mime || got.Name != name || got.Scope != scope || !metaEqual(md, got.Metadata) {
		t.Errorf("Stat after an edge Put returned %+v (metadata %.200v)", withoutMD(got), got.Metadata)
	}
	mustGet(t, b.st, scope, name, rec.Version, payload)
	b.scopes[scope] = true
	if scope == b.s.app {
		b.names[name]++
	}
}

// badPut puts and expects code, with nothing new visible.
func (b *baseline) badPut(t *testing.T, code artifacts.Code, scope artifacts.Scope, name string, opts artifacts.PutOptions, what string) {
	t.Helper()
	_, err := b.st.Put(t.Context(), scope, name, reader([]byte("bad")), opts)
	wantCode(t, err, code, "Put with %s", what)
	b.unchanged(t, "Put with "+what)
}

func testValidation(t *testing.T, s *suite) {
	t.Run("scope", func(t *testing.T) { testScopeValidation(t, s) })
	t.Run("name", func(t *testing.T) { testNameValidation(t, s) })
	t.Run("mime type", func(t *testing.T) { testMIMEValidation(t, s) })
	t.Run("metadata", func(t *testing.T) { testMetadataValidation(t, s) })
	t.Run("version arguments", func(t *testing.T) {
		b := newBaseline(t, s)
		ctx := t.Context()
		for _, v := range []int64{-2, math.MinInt64} {
			wantCode(t, errOf(b.st.Stat(ctx, s.app, baselineName, v)), artifacts.CodeInvalidArgument, "Stat(v%d)", v)
			wantCode(t, errOf(b.st.Get(ctx, s.app, baselineName, v)), artifacts.CodeInvalidArgument, "Get(v%d)", v)
			wantCode(t, errOf(b.st.GetRange(ctx, s.app, baselineName, v, 0, 1)), artifacts.CodeInvalidArgument, "GetRange(v%d)", v)
		}
	})
}

var (
	part256 = strings.Repeat("p", artifacts.MaxScopePartBytes)
	part257 = part256 + "p"
)

func testScopeValidation(t *testing.T, s *suite) {
	b := newBaseline(t, s)
	for _, sc := range []artifacts.Scope{
		artifacts.AppScope(part256),
		artifacts.UserScope("edge", part256),
		artifacts.SessionScope("edge", "u", part256),
		artifacts.SessionScope(part256, part256, part256),
		artifacts.AppScope(strings.Repeat("é", artifacts.MaxScopePartBytes/2)),
		artifacts.SessionScope("edge", strings.Repeat("é", artifacts.MaxScopePartBytes/2), "s"),
		artifacts.AppScope("x"),
		artifacts.UserScope("a/b", "../.."),
		artifacts.SessionScope("a/b", "../..", ".."),
		artifacts.SessionScope(" ", "日本", "😀"),
	} {
		sc = b.s.own(sc)
		if b.s.holds(sc) {
			b.okPut(t, sc, b.s.n(sc, "ok"), artifacts.PutOptions{})
			continue
		}
		// Valid, but past a rule the layout declares: refused, for the
		// fact that says so.
		code := artifacts.CodeInvalidScope
		if !b.s.caps.HasKind(sc.Kind) {
			code = artifacts.CodeUnsupported
		}
		b.badPut(t, code, sc, b.s.n(sc, "ok"), artifacts.PutOptions{}, fmt.Sprintf("scope %.60s, which the layout's facts exclude", sc))
	}
	b.unchanged(t, "the edge puts")
	bad := []struct {
		what  string
		scope artifacts.Scope
	}{
		{"app part of 257 bytes", artifacts.AppScope(part257)},
		{"user part of 257 bytes", artifacts.UserScope("edge", part257)},
		{"session part of 257 bytes", artifacts.SessionScope("edge", "u", part257)},
		{"multi-byte app part of 258 bytes", artifacts.AppScope(strings.Repeat("é", 129))},
		{"empty app", artifacts.AppScope("")},
		{"empty user", artifacts.UserScope("edge", "")},
		{"empty session", artifacts.SessionScope("edge", "u", "")},
		{"empty app of a session", artifacts.SessionScope("", "u", "s")},
		{"NUL in app", artifacts.AppScope("a\x00b")},
		{"NUL in user", artifacts.UserScope("edge", "\x00")},
		{"NUL in session", artifacts.SessionScope("edge", "u", "s\x00")},
		{"invalid UTF-8 in app", artifacts.AppScope("a\xffb")},
		{"invalid UTF-8 in user", artifacts.UserScope("edge", "\xc3")},
		{"invalid UTF-8 in session", artifacts.SessionScope("edge", "u", "\xed\xa0\x80")},
		{"unknown kind", artifacts.Scope{Kind: "org", App: "edge"}},
		{"empty kind", artifacts.Scope{App: "edge"}},
		{"app scope with a user", artifacts.Scope{Kind: artifacts.KindApp, App: "edge", User: "u"}},
		{"user scope with a session", artifacts.Scope{Kind: artifacts.KindUser, App: "edge", User: "u", Session: "s"}},
	}
	for _, tc := range bad {
		t.Run(tc.what, func(t *testing.T) {
			b.badPut(t, artifacts.CodeInvalidScope, tc.scope, "x", artifacts.PutOptions{}, tc.what)
			ctx := t.Context()
			wantCode(t, errOf(b.st.Stat(ctx, tc.scope, "x", artifacts.Latest)), artifacts.CodeInvalidScope, "Stat")
			wantCode(t, errOf(b.st.Get(ctx, tc.scope, "x", artifacts.Latest)), artifacts.CodeInvalidScope, "Get")
			wantCode(t, errOf(b.st.GetRange(ctx, tc.scope, "x", artifacts.Latest, 0, 1)), artifacts.CodeInvalidScope, "GetRange")
			wantCode(t, errOf(b.st.ListNames(ctx, tc.scope, artifacts.ListOptions{})), artifacts.CodeInvalidScope, "ListNames")
			wantCode(t, errOf(b.st.ListVersions(ctx, tc.scope, "x", artifacts.ListOptions{})), artifacts.CodeInvalidScope, "ListVersions")
			wantCode(t, errOf(b.st.Delete(ctx, tc.scope, "x", artifacts.Selector{Kind: artifacts.SelectAll})), artifacts.CodeInvalidScope, "Delete")
		})
	}
}

func testNameValidation(t *testing.T, s *suite) {
	b := newBaseline(t, s)
	for _, n := range []string{
		strings.Repeat("n", artifacts.MaxNameBytes),
		strings.Repeat("a/", artifacts.MaxNameBytes/2-1) + "ab",
		strings.Repeat("é", artifacts.MaxNameBytes/2),
		"x", "..a", "a..", ".a/b.", "a/.../b", "...", ".hidden", "a\\b", "a:b", "a\tb", " ", "a b/c d",
	} {
		if s.takes(n) {
			b.okPut(t, s.app, n, artifacts.PutOptions{})
			continue
		}
		b.badPut(t, artifacts.CodeInvalidName, s.app, n, artifacts.PutOptions{}, fmt.Sprintf("name %.60q, which the layout's facts exclude", n))
	}
	b.unchanged(t, "the edge puts")
	for _, tc := range []struct{ what, name string }{
		{"1025 bytes", strings.Repeat("n", artifacts.MaxNameBytes+1)},
		{"1025 bytes with slashes", strings.Repeat("a/", artifacts.MaxNameBytes/2) + "a"},
		{"1026 multi-byte bytes", strings.Repeat("é", artifacts.MaxNameBytes/2+1)},
		{"empty", ""},
		{"dot", "."},
		{"dot dot", ".."},
		{"dot dot segment", "a/../b"},
		{"leading dot dot", "../a"},
		{"trailing dot dot", "a/.."},
		{"dot segment", "a/./b"},
		{"trailing dot", "a/."},
		{"doubled slash", "a//b"},
		{"leading slash", "/a"},
		{"trailing slash", "a/"},
		{"slash", "/"},
		{"NUL", "a\x00b"},
		{"only NUL", "\x00"},
		{"invalid UTF-8", "a\xffb"},
		{"truncated UTF-8", "a\xc3"},
		{"surrogate", "\xed\xa0\x80"},
		{"baseline with a trailing slash", baselineName + "/"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			b.badPut(t, artifacts.CodeInvalidName, s.app, tc.name, artifacts.PutOptions{}, "name "+tc.what)
			ctx := t.Context()
			wantCode(t, errOf(b.st.Stat(ctx, s.app, tc.name, artifacts.Latest)), artifacts.CodeInvalidName, "Stat")
			wantCode(t, errOf(b.st.Get(ctx, s.app, tc.name, artifacts.Latest)), artifacts.CodeInvalidName, "Get")
			wantCode(t, errOf(b.st.GetRange(ctx, s.app, tc.name, artifacts.Latest, 0, 1)), artifacts.CodeInvalidName, "GetRange")
			wantCode(t, errOf(b.st.ListVersions(ctx, s.app, tc.name, artifacts.ListOptions{})), artifacts.CodeInvalidName, "ListVersions")
			wantCode(t, errOf(b.st.Delete(ctx, s.app, tc.name, artifacts.Selector{Kind: artifacts.SelectAll})), artifacts.CodeInvalidName, "Delete")
		})
	}
}

func testMIMEValidation(t *testing.T, s *suite) {
	b := newBaseline(t, s)
	mime255 := "application/" + strings.Repeat("x", artifacts.MaxMIMETypeBytes-len("application/"))
	edge := []string{"a/b", mime255, "text/plain; charset=utf-8", "text/é", "/ab", "ab/", "a/b/c", "x/\t", " a/b"}
	if s.caps.HeaderMIMETypes {
		edge = append(edge, "a/b\x01c")
	}
	for i, m := range edge {
		if s.caps.HeaderMIMETypes && (strings.TrimSpace(m) != m || strings.ContainsFunc(m, unicode.IsControl)) {
			b.badPut(t, artifacts.CodeInvalidMIMEType, s.app, fmt.Sprintf("mime-%d", i), artifacts.PutOptions{MIMEType: m}, fmt.Sprintf("MIME type %q, which a header (HeaderMIMETypes) cannot keep", m))
			continue
		}
		b.okPut(t, s.app, fmt.Sprintf("mime-%d", i), artifacts.PutOptions{MIMEType: m})
	}
	b.unchanged(t, "the edge puts")
	for _, tc := range []struct{ what, mime string }{
		{"2 bytes", "a/"},
		{"1 byte", "/"},
		{"256 bytes", mime255 + "x"},
		{"no slash", "textplain"},
		{"3 bytes without slash", "abc"},
		{"CR", "text/plain\r"},
		{"LF", "text/\nplain"},
		{"CRLF header injection", "text/plain\r\nX-Evil: 1"},
		{"NUL", "text/pl\x00ain"},
		{"invalid UTF-8", "text/\xff"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			// An existing name: a bad put must not add a version to it.
			b.badPut(t, artifacts.CodeInvalidMIMEType, s.app, baselineName, artifacts.PutOptions{MIMEType: tc.mime}, "MIME type "+tc.what)
			b.badPut(t, artifacts.CodeInvalidMIMEType, s.app, "new-name", artifacts.PutOptions{MIMEType: tc.mime}, "MIME type "+tc.what)
		})
	}
	// A good put after the bad ones takes the next version: bad puts
	// reserved nothing.
	rec := put(t, b.st, s.app, baselineName, []byte("after"), artifacts.PutOptions{})
	if rec.Version != s.v(2) {
		t.Errorf("Put after rejected puts got version %d, want %d", rec.Version, s.v(2))
	}
}

// nest returns metadata whose containers nest depth deep (the top map is
// 1); with list, the innermost container is an empty list instead of a map.
func nest(depth int, list bool) artifacts.Metadata {
	var inner any = map[string]any{}
	if list {
		inner = []any{}
	}
	for d := depth; d > 1; d-- {
		inner = map[string]any{fmt.Sprintf("d%d", d): inner}
	}
	if m, ok := inner.(map[string]any); ok {
		return m
	}
	return artifacts.Metadata{"list": inner}
}

// entries returns a flat map of n entries.
func entries(n int) artifacts.Metadata {
	md := artifacts.Metadata{}
	for i := range n {
		md[fmt.Sprintf("k%03d", i)] = int64(i)
	}
	return md
}

// listEntries returns one key holding a list of n-1 elements: n entries.
func listEntries(n int) artifacts.Metadata {
	l := make([]any, n-1)
	for i := range l {
		l[i] = int64(i) + 1000
	}
	return artifacts.Metadata{"l": l}
}

// sized returns metadata that encodes to exactly n bytes as ETF: the map
// header (6 bytes with the version byte), the key "k" as a binary (6) and a
// binary value (5 + len).
func sized(n int) artifacts.Metadata {
	return artifacts.Metadata{"k": strings.Repeat("x", n-17)}
}

// stringEntries returns a flat map of n string entries.
func stringEntries(n int) artifacts.Metadata {
	md := artifacts.Metadata{}
	for i := range n {
		md[fmt.Sprintf("k%03d", i)] = fmt.Sprint(i)
	}
	return md
}

// fits reports whether a record holding md fits the layout's
// MaxRecordBytes, as Store measures it.
func (s *suite) fits(t *testing.T, md artifacts.Metadata) bool {
	t.Helper()
	b, err := artifacts.EncodeRecord(artifacts.Record{Scope: s.app, Name: "md-00", Version: 1 << 31, MIMEType: artifacts.DefaultMIMEType, Digest: strings.Repeat("0", 64), Size: s.caps.MaxArtifactBytes, CreatedAt: 1 << 42, Metadata: md})
	if err != nil {
		t.Fatal(err)
	}
	return len(b) <= s.caps.MaxRecordBytes
}

func testMetadataValidation(t *testing.T, s *suite) {
	b := newBaseline(t, s)
	type mdCase struct {
		what string
		md   artifacts.Metadata
	}
	// At the edge of every limit, of every type.
	edge := []mdCase{
		{"depth 8", nest(artifacts.MaxMetadataDepth, false)},
		{"depth 8 ending in a list", nest(artifacts.MaxMetadataDepth, true)},
		{"128 entries", entries(artifacts.MaxMetadataEntries)},
		{"128 entries with a list", listEntries(artifacts.MaxMetadataEntries)},
		{"16384 bytes", sized(artifacts.MaxMetadataBytes)},
		{"every type", sampleMetadata()},
	}
	var ok, notTaken []mdCase
	if s.caps.MetadataStrings {
		// Only strings: every other type is refused, and the edges are
		// those of strings.
		notTaken = edge[:4]
		notTaken = append(notTaken, mdCase{"every type", sampleMetadata()}, mdCase{"an integer", artifacts.Metadata{"n": 1}}, mdCase{"a bool", artifacts.Metadata{"b": true}}, mdCase{"null", artifacts.Metadata{"z": nil}})
		ok = []mdCase{{"128 string entries", stringEntries(artifacts.MaxMetadataEntries)}, {"every type as strings", stringMetadata()}}
		edge = edge[4:5]
	}
	for _, tc := range edge {
		if s.fits(t, tc.md) {
			ok = append(ok, tc)
		} else {
			notTaken = append(notTaken, tc)
		}
	}
	for i, tc := range ok {
		t.Run("ok/"+tc.what, func(t *testing.T) {
			b.okPut(t, s.app, fmt.Sprintf("md-%d", i), artifacts.PutOptions{Metadata: tc.md})
		})
	}
	b.unchanged(t, "the edge puts")
	for _, tc := range notTaken {
		t.Run("not taken/"+tc.what, func(t *testing.T) {
			b.badPut(t, artifacts.CodeInvalidMetadata, s.app, baselineName, artifacts.PutOptions{Metadata: tc.md}, "metadata "+tc.what+", which the layout's facts exclude")
		})
	}
	badKey := map[string]any{"a\xffb": 1}
	for _, tc := range []struct {
		what string
		md   artifacts.Metadata
	}{
		{"depth 9", nest(artifacts.MaxMetadataDepth+1, false)},
		{"depth 9 ending in a list", nest(artifacts.MaxMetadataDepth+1, true)},
		{"129 entries", entries(artifacts.MaxMetadataEntries + 1)},
		{"129 entries with a list", listEntries(artifacts.MaxMetadataEntries + 1)},
		{"16385 bytes", sized(artifacts.MaxMetadataBytes + 1)},
		{"a megabyte", artifacts.Metadata{"k": strings.Repeat("x", 1<<20)}},
		{"struct", artifacts.Metadata{"v": struct{}{}}},
		{"func", artifacts.Metadata{"v": func() {}}},
		{"channel", artifacts.Metadata{"v": make(chan int)}},
		{"pointer", artifacts.Metadata{"v": new(int)}},
		{"byte slice", artifacts.Metadata{"v": []byte("x")}},
		{"string slice", artifacts.Metadata{"v": []string{"x"}}},
		{"map of strings", artifacts.Metadata{"v": map[string]string{"a": "b"}}},
		{"map with int keys", artifacts.Metadata{"v": map[int]any{1: "b"}}},
		{"nil big.Int", artifacts.Metadata{"v": (*big.Int)(nil)}},
		{"NaN", artifacts.Metadata{"v": math.NaN()}},
		{"+Inf", artifacts.Metadata{"v": math.Inf(1)}},
		{"-Inf", artifacts.Metadata{"v": math.Inf(-1)}},
		{"float32 NaN", artifacts.Metadata{"v": float32(math.NaN())}},
		{"NaN in a list", artifacts.Metadata{"v": []any{1, math.NaN()}}},
		{"struct deep inside", artifacts.Metadata{"a": map[string]any{"b": []any{map[string]any{"c": struct{}{}}}}}},
		{"invalid UTF-8 value", artifacts.Metadata{"v": "a\xffb"}},
		{"invalid UTF-8 key", badKey},
		{"invalid UTF-8 nested key", artifacts.Metadata{"v": badKey}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			b.badPut(t, artifacts.CodeInvalidMetadata, s.app, baselineName, artifacts.PutOptions{Metadata: tc.md}, "metadata "+tc.what)
			b.badPut(t, artifacts.CodeInvalidMetadata, s.app, "new-name", artifacts.PutOptions{Metadata: tc.md}, "metadata "+tc.what)
		})
	}
	rec := put(t, b.st, s.app, baselineName, []byte("after"), artifacts.PutOptions{})
	if rec.Version != s.v(2) {
		t.Errorf("Put after rejected puts got version %d, want %d", rec.Version, s.v(2))
	}
}
