package artifactstest

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

func testCapabilities(t *testing.T, s *suite) {
	st := s.newStore(t)
	c := st.Capabilities()
	if c.Name == "" {
		t.Error("Capabilities().Name is empty")
	}
	if c.MaxArtifactBytes <= 0 {
		t.Errorf("Capabilities().MaxArtifactBytes = %d, want > 0", c.MaxArtifactBytes)
	}
	if c.MaxPageLimit < 1 {
		t.Errorf("Capabilities().MaxPageLimit = %d, want >= 1", c.MaxPageLimit)
	}
	if c.MaxScanEntries < artifacts.MinMaxScanEntries {
		t.Errorf("Capabilities().MaxScanEntries = %d, want >= %d", c.MaxScanEntries, artifacts.MinMaxScanEntries)
	}
	if c.ScopeCapacity() < 1 || c.NameCapacity() < 1 || c.VersionCapacity() < 1 {
		t.Errorf("capacities %d scopes, %d names, %d versions: want each >= 1", c.ScopeCapacity(), c.NameCapacity(), c.VersionCapacity())
	}
	if c2 := st.Capabilities(); !reflect.DeepEqual(c2, c) {
		t.Errorf("Capabilities changed between calls: %+v then %+v", c, c2)
	}
	put(t, st, s.app, "x", []byte("x"), artifacts.PutOptions{})
	if c2 := st.Capabilities(); !reflect.DeepEqual(c2, c) {
		t.Errorf("Capabilities changed after a Put: %+v then %+v", c, c2)
	}
	if s.h.NewWithLimit == nil {
		t.Fatal("Harness.NewWithLimit is nil: the payload limit tests are mandatory")
	}
	small := artifacts.NewStore(s.h.NewWithLimit(t, 1234))
	if got := small.Capabilities().MaxArtifactBytes; got != 1234 {
		t.Errorf("NewWithLimit(1234).Capabilities().MaxArtifactBytes = %d", got)
	}
}

// Payload sizes around the verified reader's small-payload threshold.
var roundTripSizes = []struct {
	name string
	n    int
}{
	{"empty", 0},
	{"one byte", 1},
	{"1000 bytes", 1000},
	{"SmallPayloadBytes", artifacts.SmallPayloadBytes},
	{"SmallPayloadBytes+1", artifacts.SmallPayloadBytes + 1},
	{"3 MiB", 3 << 20},
}

func testRoundTrip(t *testing.T, s *suite) {
	st := s.newStore(t)
	for i, tc := range roundTripSizes {
		t.Run(tc.name, func(t *testing.T) {
			name := "round-trip/" + tc.name
			b := data(tc.n, uint64(i))
			md := artifacts.Metadata{"case": tc.name}
			rec := put(t, st, s.session, name, b, artifacts.PutOptions{MIMEType: "text/plain", Metadata: md})
			s.checkPut(t, rec, s.session, name, s.v(1), "text/plain", b)
			for _, v := range []int64{artifacts.Latest, s.v(1)} {
				mustGet(t, st, s.session, name, v, b)
				r, err := st.Get(t.Context(), s.session, name, v)
				if err != nil {
					t.Fatalf("Get(v%d): %v", v, err)
				}
				sameRecord(t, r.Record(), rec, "Get(v%d).Record()", v)
				r.Close()
			}
			got, err := st.Stat(t.Context(), s.session, name, s.v(1))
			if err != nil {
				t.Fatalf("Stat: %v", err)
			}
			sameRecord(t, got, rec, "Stat")
		})
	}
}

func testDefaultMIMEType(t *testing.T, s *suite) {
	st := s.newStore(t)
	rec := put(t, st, s.app, "no-mime", []byte("abc"), artifacts.PutOptions{})
	if rec.MIMEType != artifacts.DefaultMIMEType {
		t.Errorf("Put without a MIME type: got %q, want %q", rec.MIMEType, artifacts.DefaultMIMEType)
	}
	if len(rec.Metadata) != 0 {
		t.Errorf("Put with nil metadata: got %#v, want an empty map", rec.Metadata)
	}
	got, err := st.Stat(t.Context(), s.app, "no-mime", artifacts.Latest)
	if err != nil {
		t.Fatal(err)
	}
	if got.MIMEType != artifacts.DefaultMIMEType {
		t.Errorf("Stat: MIME type %q, want %q", got.MIMEType, artifacts.DefaultMIMEType)
	}
	if len(got.Metadata) != 0 {
		t.Errorf("Stat: metadata %#v, want an empty map", got.Metadata)
	}
}

// sampleMetadata covers every value type and the integer encodings.
func sampleMetadata() artifacts.Metadata {
	big70 := new(big.Int).Lsh(big.NewInt(1), 70)
	return artifacts.Metadata{
		"string":       "hello",
		"empty string": "",
		"unicode":      "héllo, 日本, 😀",
		"":             "empty key",
		"int":          7,
		"zero":         int64(0),
		"minus one":    -1,
		"255":          255,
		"256":          256,
		"int32 max":    int64(math.MaxInt32),
		"2^31":         int64(1) << 31,
		"int32 min":    int64(math.MinInt32),
		"int32 min-1":  int64(math.MinInt32) - 1,
		"2^40":         int64(1) << 40,
		"int64 max":    int64(math.MaxInt64),
		"int64 min":    int64(math.MinInt64),
		"uint64 max":   uint64(math.MaxUint64),
		"2^70":         big70,
		"-2^70":        new(big.Int).Neg(big70),
		"float":        3.25,
		"tiny float":   -1.5e-300,
		"float zero":   0.0,
		"whole float":  2.0,
		"true":         true,
		"false":        false,
		"null":         nil,
		"bytes list":   []any{1, 2, 3},
		"list":         []any{int64(1), "two", 3.5, true, nil, []any{}, map[string]any{"k": "v"}, int64(1) << 40},
		"empty list":   []any{},
		"empty map":    map[string]any{},
		"nested": map[string]any{
			"a": map[string]any{"b": []any{map[string]any{"c": int64(1) << 33, "d": []any{false, 0.5}}}},
		},
	}
}

// stringMetadata is sampleMetadata for a layout whose metadata values are
// strings only (Capabilities.MetadataStrings): every key of it, each value
// as a string of its own.
func stringMetadata() artifacts.Metadata {
	md := artifacts.Metadata{}
	for k, v := range sampleMetadata() {
		if k == "" {
			continue // Cloud Storage keeps no empty key
		}
		md[k] = fmt.Sprint(v)
	}
	md["string"] = "hello"
	md["unicode"] = "héllo, 日本, 😀"
	md["spaces and: punctuation"] = " a = b; c "
	return md
}

// sample returns the metadata the round trips store: every value type,
// or only strings when the layout keeps only strings.
func (s *suite) sample() artifacts.Metadata {
	if s.caps.MetadataStrings {
		return stringMetadata()
	}
	return sampleMetadata()
}

func testMetadataRoundTrip(t *testing.T, s *suite) {
	st := s.newStore(t)
	md := s.sample()
	want := s.sample()
	name := s.n(s.user, "meta")
	rec := put(t, st, s.user, name, []byte("payload"), artifacts.PutOptions{Metadata: md})
	if !metaEqual(want, rec.Metadata) {
		t.Errorf("Put returned metadata %#v, want %#v", rec.Metadata, want)
	}
	// The store must not keep the caller's maps.
	md["string"] = "changed"
	if !s.caps.MetadataStrings {
		md["nested"].(map[string]any)["a"] = "changed"
		md["list"].([]any)[0] = "changed"
	}

	check := func(what string, got artifacts.Metadata) {
		t.Helper()
		if !metaEqual(want, got) {
			t.Errorf("%s: metadata\n got  %#v\n want %#v", what, got, want)
		}
	}
	got, err := st.Stat(t.Context(), s.user, name, s.v(1))
	if err != nil {
		t.Fatal(err)
	}
	check("Stat", got.Metadata)
	// Nor may a caller change the store through what it returned.
	got.Metadata["string"] = "changed"
	if !s.caps.MetadataStrings {
		got.Metadata["nested"].(map[string]any)["a"] = "changed"
	}
	r, err := st.Get(t.Context(), s.user, name, artifacts.Latest)
	if err != nil {
		t.Fatal(err)
	}
	check("Get().Record()", r.Record().Metadata)
	r.Close()
	vp, err := st.ListVersions(t.Context(), s.user, name, artifacts.ListOptions{})
	if err != nil || len(vp.Items) != 1 {
		t.Fatalf("ListVersions: %+v, %v", vp, err)
	}
	check("ListVersions", vp.Items[0].Metadata)
	np, err := st.ListNames(t.Context(), s.user, artifacts.ListOptions{})
	if err != nil || len(np.Items) != 1 {
		t.Fatalf("ListNames: %+v, %v", np, err)
	}
	check("ListNames", np.Items[0].Latest.Metadata)
}

func testStat(t *testing.T, s *suite) {
	st := s.newStore(t)
	b1, b2 := data(10, 1), data(20, 2)
	r1 := put(t, st, s.app, "stat", b1, artifacts.PutOptions{MIMEType: "a/b", Metadata: artifacts.Metadata{"v": "1"}})
	r2 := put(t, st, s.app, "stat", b2, artifacts.PutOptions{MIMEType: "image/png", Metadata: artifacts.Metadata{"v": "2"}})
	s.checkPut(t, r1, s.app, "stat", s.v(1), "a/b", b1)
	s.checkPut(t, r2, s.app, "stat", s.v(2), "image/png", b2)
	for _, tc := range []struct {
		v    int64
		want artifacts.Record
	}{{s.v(1), r1}, {s.v(2), r2}, {artifacts.Latest, r2}} {
		got, err := st.Stat(t.Context(), s.app, "stat", tc.v)
		if err != nil {
			t.Fatalf("Stat(v%d): %v", tc.v, err)
		}
		sameRecord(t, got, tc.want, "Stat(v%d)", tc.v)
	}
}

func testGetRange(t *testing.T, s *suite) {
	st := s.newStore(t)
	for _, size := range []int{1000, 3 << 20} {
		name := "range"
		if size > artifacts.SmallPayloadBytes {
			name = "range-large"
		}
		b := data(size, uint64(size))
		rec := put(t, st, s.app, name, b, artifacts.PutOptions{})
		n := int64(size)
		cases := []struct {
			name          string
			off, length   int64
			wantOff, want int64 // expected slice b[wantOff:wantOff+want]
		}{
			{"start", 0, 10, 0, 10},
			{"middle", n / 2, 17, n / 2, 17},
			{"end", n - 10, 10, n - 10, 10},
			{"across end", n - 10, 100, n - 10, 10},
			{"empty", 5, 0, 5, 0},
			{"empty at start", 0, 0, 0, 0},
			{"whole", 0, -1, 0, n},
			{"whole explicit", 0, n, 0, n},
			{"tail", n / 3, -1, n / 3, n - n/3},
			{"last byte", n - 1, -1, n - 1, 1},
			{"offset at end", n, 10, n, 0},
			{"offset past end", n + 100, 10, n, 0},
			{"offset past end to end", n + 1, -1, n, 0},
		}
		for _, tc := range cases {
			t.Run(fmtSize(size)+"/"+tc.name, func(t *testing.T) {
				for _, v := range []int64{artifacts.Latest, rec.Version} {
					got, err := getRange(t.Context(), st, s.app, name, v, tc.off, tc.length)
					if err != nil {
						t.Fatalf("GetRange(v%d, %d, %d): %v", v, tc.off, tc.length, err)
					}
					want := b[tc.wantOff : tc.wantOff+tc.want]
					if !bytes.Equal(got, want) {
						t.Errorf("GetRange(v%d, %d, %d) = %d bytes %s, want %d bytes %s", v, tc.off, tc.length, len(got), short(got), len(want), short(want))
					}
				}
			})
		}
		t.Run(fmtSize(size)+"/invalid", func(t *testing.T) {
			for _, tc := range []struct{ off, length int64 }{{-1, 5}, {-1, -1}, {0, -2}, {5, math.MinInt64}, {math.MinInt64, 1}} {
				_, err := st.GetRange(t.Context(), s.app, name, artifacts.Latest, tc.off, tc.length)
				wantCode(t, err, artifacts.CodeInvalidArgument, "GetRange(%d, %d)", tc.off, tc.length)
			}
		})
	}
	t.Run("empty payload", func(t *testing.T) {
		put(t, st, s.app, "range-empty", nil, artifacts.PutOptions{})
		for _, tc := range []struct{ off, length int64 }{{0, -1}, {0, 0}, {0, 10}, {3, -1}} {
			got, err := getRange(t.Context(), st, s.app, "range-empty", s.v(1), tc.off, tc.length)
			if err != nil || len(got) != 0 {
				t.Errorf("GetRange(%d, %d) of an empty payload = %d bytes, %v; want none", tc.off, tc.length, len(got), err)
			}
		}
	})
}

func fmtSize(n int) string {
	if n >= 1<<20 {
		return "large"
	}
	return "small"
}

// deleteOK deletes and checks that exactly the wanted versions came back.
func deleteOK(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, sel artifacts.Selector, want ...artifacts.Record) {
	t.Helper()
	got, err := st.Delete(t.Context(), scope, name, sel)
	if err != nil {
		t.Fatalf("Delete(%s, %q, %+v): %v", scope, name, sel, err)
	}
	slices.SortFunc(got, func(a, b artifacts.Record) int { return int(a.Version - b.Version) })
	if len(got) != len(want) {
		t.Fatalf("Delete(%+v) returned %d records, want %d", sel, len(got), len(want))
	}
	for i := range want {
		sameRecord(t, got[i], want[i], "Delete(%+v) record %d", sel, i)
	}
}

// testVersionsNeverReused checks the numbering of a layout that never
// reuses a number (or, for one that declares ReusesVersions, the numbering
// it declares instead: see testVersionsReused). The cases are written
// with ordinals (1 is a name's first version), which s.v maps to the
// layout's numbers.
func testVersionsNeverReused(t *testing.T, s *suite) {
	if s.caps.ReusesVersions {
		testVersionsReused(t, s)
		return
	}
	type step struct {
		sel  artifacts.Selector
		gone []int // indexes (ordinal-1) the delete removes
	}
	sel := func(kind artifacts.SelectorKind, ordinal int) artifacts.Selector {
		if kind != artifacts.SelectVersion {
			return artifacts.Selector{Kind: kind}
		}
		return artifacts.Selector{Kind: kind, Version: s.v(ordinal)}
	}
	cases := []struct {
		name  string
		steps []step
		left  []int // ordinals published before the last put
	}{
		{"sequential", nil, []int{1, 2, 3}},
		{"delete latest", []step{{sel(artifacts.SelectLatest, 0), []int{2}}}, []int{1, 2}},
		{"delete latest by number", []step{{sel(artifacts.SelectVersion, 3), []int{2}}}, []int{1, 2}},
		{"delete middle", []step{{sel(artifacts.SelectVersion, 2), []int{1}}}, []int{1, 3}},
		{"delete first", []step{{sel(artifacts.SelectVersion, 1), []int{0}}}, []int{2, 3}},
		{"delete all", []step{{sel(artifacts.SelectAll, 0), []int{0, 1, 2}}}, nil},
		{"delete each latest", []step{
			{sel(artifacts.SelectLatest, 0), []int{2}},
			{sel(artifacts.SelectLatest, 0), []int{1}},
			{sel(artifacts.SelectLatest, 0), []int{0}},
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := s.newStore(t)
			recs := putN(t, st, s.app, "v", 3, 10)
			for i, r := range recs {
				if r.Version != s.v(i+1) {
					t.Fatalf("put %d got version %d, want %d", i+1, r.Version, s.v(i+1))
				}
			}
			for _, sp := range tc.steps {
				var want []artifacts.Record
				for _, i := range sp.gone {
					want = append(want, recs[i])
				}
				deleteOK(t, st, s.app, "v", sp.sel, want...)
			}
			left := s.vs(tc.left...)
			if got := versionsOf(t, st, s.app, "v"); !slices.Equal(got, left) {
				t.Fatalf("versions after deletes = %v, want %v", got, left)
			}
			for _, i := range []int{4, 5} {
				b := data(7, uint64(i))
				r := put(t, st, s.app, "v", b, artifacts.PutOptions{})
				if r.Version != s.v(i) {
					t.Fatalf("put after deletes got version %d, want %d", r.Version, s.v(i))
				}
				mustGet(t, st, s.app, "v", s.v(i), b)
				mustGet(t, st, s.app, "v", artifacts.Latest, b)
			}
			if got, want := versionsOf(t, st, s.app, "v"), append(slices.Clone(left), s.vs(4, 5)...); !slices.Equal(got, want) {
				t.Errorf("versions at the end = %v, want %v", got, want)
			}
			// Deleted versions stay gone.
			for i := 1; i <= 3; i++ {
				if slices.Contains(tc.left, i) {
					continue
				}
				_, err := st.Stat(t.Context(), s.app, "v", s.v(i))
				wantCode(t, err, artifacts.CodeNotFound, "Stat of deleted v%d", s.v(i))
			}
		})
	}
}

// vs maps ordinals to the layout's version numbers.
func (s *suite) vs(ordinals ...int) []int64 {
	out := make([]int64, len(ordinals))
	for i, o := range ordinals {
		out[i] = s.v(o)
	}
	return out
}

func testIsolation(t *testing.T, s *suite) {
	st := s.newStore(t)
	// Scopes that share parts, and names that share prefixes, are distinct.
	// A layout that stores scope parts unescaped cannot hold parts with its
	// separators (ScopePartForbidden): those scopes are refused.
	all := []artifacts.Scope{
		s.own(artifacts.AppScope("iso")),
		s.own(artifacts.UserScope("iso", "u")),
		s.own(artifacts.SessionScope("iso", "u", "s")),
		s.own(artifacts.AppScope("iso/u")),
		s.own(artifacts.UserScope("iso", "u/s")),
		s.own(artifacts.SessionScope("iso", "u", "t")),
		s.own(artifacts.SessionScope("iso", "u/s", "t")),
		s.own(artifacts.SessionScope("iso", "v", "s")),
		s.own(artifacts.UserScope("iso", "v")),
	}
	var scopes []artifacts.Scope
	for _, sc := range all {
		if s.holds(sc) {
			scopes = append(scopes, sc)
			continue
		}
		_, err := st.Put(t.Context(), sc, s.n(sc, "n"), reader([]byte("x")), artifacts.PutOptions{})
		if s.caps.HasKind(sc.Kind) {
			wantCode(t, err, artifacts.CodeInvalidScope, "Put into %s, whose parts hold a byte of ScopePartForbidden %q", sc, s.caps.ScopePartForbidden)
		} else {
			wantCode(t, err, artifacts.CodeUnsupported, "Put into %s, of a kind the store does not hold", sc)
		}
	}
	names := []string{"n", "n/a", "n/a/b", "na"}
	type key struct {
		sc artifacts.Scope
		n  string
	}
	payloads := map[key][]byte{}
	for i, sc := range scopes {
		for j, n := range names {
			n = s.n(sc, n)
			for v := 1; v <= j+1; v++ {
				b := data(30+i, uint64(100*i+10*j)+uint64(v))
				r := put(t, st, sc, n, b, artifacts.PutOptions{})
				if r.Version != s.v(v) {
					t.Fatalf("Put(%s, %q) got version %d, want %d", sc, n, r.Version, s.v(v))
				}
				payloads[key{sc, n}] = b
			}
		}
	}
	for i, sc := range scopes {
		for j, n := range names {
			n = s.n(sc, n)
			mustGet(t, st, sc, n, artifacts.Latest, payloads[key{sc, n}])
			rec, err := st.Stat(t.Context(), sc, n, artifacts.Latest)
			if err != nil || rec.Version != s.v(j+1) || rec.Scope != sc || rec.Name != n {
				t.Errorf("Stat(%s, %q) = %+v, %v; want version %d", sc, n, withoutMD(rec), err, s.v(j+1))
			}
			if got := versionsOf(t, st, sc, n); !slices.Equal(got, s.vs(ordinals(j+1)...)) {
				t.Errorf("ListVersions(%s, %q) = %v, want %v", sc, n, got, s.vs(ordinals(j+1)...))
			}
		}
		got := nameCounts(t, st, sc)
		if len(got) != len(names) {
			t.Errorf("scope %d %s lists names %v, want %v", i, sc, got, names)
		}
		for j, n := range names {
			if got[s.n(sc, n)] != j+1 {
				t.Errorf("scope %s lists %q with %d versions, want %d", sc, s.n(sc, n), got[s.n(sc, n)], j+1)
			}
		}
	}
}

// ordinals returns 1..n.
func ordinals(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// testLatestAfterDeletes checks that the latest is always the highest
// published version, whatever was deleted. After deleting the highest, a
// put takes the next number never given (or, with ReusesVersions, one
// more than the highest left: the deleted number again).
func testLatestAfterDeletes(t *testing.T, s *suite) {
	st := s.newStore(t)
	name := s.n(s.user, "latest")
	var bs [][]byte
	var recs []artifacts.Record
	for i := range 3 {
		b := data(50+i, uint64(i))
		bs = append(bs, b)
		recs = append(recs, put(t, st, s.user, name, b, artifacts.PutOptions{}))
	}
	latestIs := func(v int64, b []byte) {
		t.Helper()
		rec, err := st.Stat(t.Context(), s.user, name, artifacts.Latest)
		if err != nil || rec.Version != v {
			t.Fatalf("Stat(latest) = v%d, %v; want v%d", rec.Version, err, v)
		}
		mustGet(t, st, s.user, name, artifacts.Latest, b)
		got, err := getRange(t.Context(), st, s.user, name, artifacts.Latest, 1, -1)
		if err != nil || !bytes.Equal(got, b[1:]) {
			t.Fatalf("GetRange(latest, 1, -1) = %s, %v; want %s", short(got), err, short(b[1:]))
		}
		np, err := st.ListNames(t.Context(), s.user, artifacts.ListOptions{})
		if err != nil || len(np.Items) != 1 || np.Items[0].Latest.Version != v {
			t.Fatalf("ListNames latest = %+v, %v; want v%d", np, err, v)
		}
	}
	latestIs(s.v(3), bs[2])
	deleteOK(t, st, s.user, name, artifacts.Selector{Kind: artifacts.SelectLatest}, recs[2])
	latestIs(s.v(2), bs[1])
	deleteOK(t, st, s.user, name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: s.v(1)}, recs[0])
	latestIs(s.v(2), bs[1])
	b4 := data(9, 4)
	r4 := put(t, st, s.user, name, b4, artifacts.PutOptions{})
	want4 := s.v(4)
	if s.caps.ReusesVersions {
		want4 = s.v(3) // the highest left is the 2nd: its successor, again
	}
	if r4.Version != want4 {
		t.Fatalf("put after deletes = v%d, want v%d (ReusesVersions %t)", r4.Version, want4, s.caps.ReusesVersions)
	}
	latestIs(want4, b4)
	mustGet(t, st, s.user, name, want4, b4)
	deleteOK(t, st, s.user, name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: want4}, r4)
	latestIs(s.v(2), bs[1])
	deleteOK(t, st, s.user, name, artifacts.Selector{Kind: artifacts.SelectLatest}, recs[1])
	_, err := st.Stat(t.Context(), s.user, name, artifacts.Latest)
	wantCode(t, err, artifacts.CodeNotFound, "Stat(latest) with nothing left")
	_, err = st.Get(t.Context(), s.user, name, artifacts.Latest)
	wantCode(t, err, artifacts.CodeNotFound, "Get(latest) with nothing left")
	_, err = st.ListVersions(t.Context(), s.user, name, artifacts.ListOptions{})
	wantCode(t, err, artifacts.CodeNotFound, "ListVersions with nothing left")
	_, err = st.ListNames(t.Context(), s.user, artifacts.ListOptions{})
	wantCode(t, err, artifacts.CodeNotFound, "ListNames of a scope with nothing left")
}

func testDelete(t *testing.T, s *suite) {
	st := s.newStore(t)
	recs := putN(t, st, s.session, "del", 4, 40)
	other := put(t, st, s.session, "keep", []byte("keep"), artifacts.PutOptions{})

	t.Run("invalid selectors remove nothing", func(t *testing.T) {
		for _, sel := range []artifacts.Selector{
			{Kind: artifacts.SelectVersion, Version: -1},
			{Kind: artifacts.SelectVersion, Version: math.MinInt64},
			{Kind: "bogus"},
			{Kind: ""},
		} {
			_, err := st.Delete(t.Context(), s.session, "del", sel)
			wantCode(t, err, artifacts.CodeInvalidArgument, "Delete(%+v)", sel)
		}
		if got := versionsOf(t, st, s.session, "del"); !slices.Equal(got, s.vs(1, 2, 3, 4)) {
			t.Fatalf("versions after invalid deletes = %v", got)
		}
	})
	t.Run("version", func(t *testing.T) {
		deleteOK(t, st, s.session, "del", artifacts.Selector{Kind: artifacts.SelectVersion, Version: s.v(2)}, recs[1])
		_, err := st.Delete(t.Context(), s.session, "del", artifacts.Selector{Kind: artifacts.SelectVersion, Version: s.v(2)})
		wantCode(t, err, artifacts.CodeNotFound, "Delete of an already deleted version")
		_, err = st.Delete(t.Context(), s.session, "del", artifacts.Selector{Kind: artifacts.SelectVersion, Version: s.v(99)})
		wantCode(t, err, artifacts.CodeNotFound, "Delete of a version never made")
		for _, call := range []struct {
			name string
			err  error
		}{
			{"Stat", errOf(st.Stat(t.Context(), s.session, "del", s.v(2)))},
			{"Get", errOf(st.Get(t.Context(), s.session, "del", s.v(2)))},
			{"GetRange", errOf(st.GetRange(t.Context(), s.session, "del", s.v(2), 0, 1))},
		} {
			wantCode(t, call.err, artifacts.CodeNotFound, "%s of a deleted version", call.name)
		}
	})
	t.Run("all", func(t *testing.T) {
		deleteOK(t, st, s.session, "del", artifacts.Selector{Kind: artifacts.SelectAll}, recs[0], recs[2], recs[3])
		for _, sel := range []artifacts.Selector{
			{Kind: artifacts.SelectAll},
			{Kind: artifacts.SelectLatest},
			{Kind: artifacts.SelectVersion, Version: s.v(1)},
		} {
			_, err := st.Delete(t.Context(), s.session, "del", sel)
			wantCode(t, err, artifacts.CodeNotFound, "Delete(%+v) of a name with no versions left", sel)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		for _, sel := range []artifacts.Selector{{Kind: artifacts.SelectAll}, {Kind: artifacts.SelectLatest}, {Kind: artifacts.SelectVersion, Version: s.v(1)}} {
			_, err := st.Delete(t.Context(), s.session, "never", sel)
			wantCode(t, err, artifacts.CodeNotFound, "Delete(%+v) of an unknown name", sel)
			_, err = st.Delete(t.Context(), s.scopeOf(artifacts.KindApp, "never", "", ""), "del", sel)
			wantCode(t, err, artifacts.CodeNotFound, "Delete(%+v) in an unknown scope", sel)
		}
	})
	// The other name is untouched.
	got, err := st.Stat(t.Context(), s.session, "keep", artifacts.Latest)
	if err != nil {
		t.Fatal(err)
	}
	sameRecord(t, got, other, "Stat of an untouched name")
	if nc := nameCounts(t, st, s.session); len(nc) != 1 || nc["keep"] != 1 {
		t.Errorf("names after deletes = %v, want only keep", nc)
	}
}

func errOf[T any](_ T, err error) error { return err }

func testNotFound(t *testing.T, s *suite) {
	st := s.newStore(t)
	put(t, st, s.app, "known", []byte("known"), artifacts.PutOptions{})
	type target struct {
		what  string
		scope artifacts.Scope
		name  string
		v     int64
	}
	other := s.scopeOf(artifacts.KindUser, "conformance-app", "known", "")
	if other == s.app {
		other = s.own(artifacts.SessionScope("conformance-app", "known", "known"))
	}
	targets := []target{
		{"unknown scope", s.scopeOf(artifacts.KindApp, "unknown", "", ""), "known", artifacts.Latest},
		{"scope of another kind", other, s.n(other, "known"), artifacts.Latest},
		{"unknown name", s.app, "unknown", artifacts.Latest},
		{"name prefix", s.app, "know", artifacts.Latest},
		{"unknown version", s.app, "known", s.v(2)},
		{"huge version", s.app, "known", math.MaxInt64},
	}
	ctx := t.Context()
	for _, tg := range targets {
		t.Run(tg.what, func(t *testing.T) {
			wantCode(t, errOf(st.Stat(ctx, tg.scope, tg.name, tg.v)), artifacts.CodeNotFound, "Stat")
			wantCode(t, errOf(st.Get(ctx, tg.scope, tg.name, tg.v)), artifacts.CodeNotFound, "Get")
			wantCode(t, errOf(st.GetRange(ctx, tg.scope, tg.name, tg.v, 0, 1)), artifacts.CodeNotFound, "GetRange")
			if tg.v == artifacts.Latest {
				wantCode(t, errOf(st.ListVersions(ctx, tg.scope, tg.name, artifacts.ListOptions{})), artifacts.CodeNotFound, "ListVersions")
				wantCode(t, errOf(st.Delete(ctx, tg.scope, tg.name, artifacts.Selector{Kind: artifacts.SelectAll})), artifacts.CodeNotFound, "Delete(all)")
			} else {
				wantCode(t, errOf(st.Delete(ctx, tg.scope, tg.name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: tg.v})), artifacts.CodeNotFound, "Delete(version)")
			}
			if tg.scope != s.app {
				wantCode(t, errOf(st.ListNames(ctx, tg.scope, artifacts.ListOptions{})), artifacts.CodeNotFound, "ListNames")
			}
		})
	}
	// Nothing above changed the store.
	mustGet(t, st, s.app, "known", s.v(1), []byte("known"))
}
