package artifactstest

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// testFacts checks each fact a driver declares in its Capabilities, so
// that a claim is tested rather than trusted: the scope kinds it holds
// (and refuses the others with CodeUnsupported, writing nothing), its first
// version number, whether records hold the payload's digest, its name
// length and its record size, and the rules of a layout that stores ids
// and names unescaped (see testNameRules).
func testFacts(t *testing.T, s *suite) {
	t.Run("scope kinds", func(t *testing.T) {
		st := s.newStore(t)
		c := st.Capabilities()
		for _, scope := range []artifacts.Scope{
			s.own(artifacts.AppScope("conformance-app")),
			s.own(artifacts.UserScope("conformance-app", "user-1")),
			s.own(artifacts.SessionScope("conformance-app", "user-1", "session-1")),
		} {
			_, err := st.Put(t.Context(), scope, s.n(scope, "kind"), reader([]byte("k")), artifacts.PutOptions{})
			if c.HasKind(scope.Kind) {
				if err != nil {
					t.Errorf("Put into a %s scope, which the store declares it holds: %v", scope.Kind, err)
				}
				continue
			}
			wantCode(t, err, artifacts.CodeUnsupported, "Put into a %s scope the store does not hold", scope.Kind)
			wantCode(t, errOf(st.ListNames(t.Context(), scope, artifacts.ListOptions{})), artifacts.CodeUnsupported, "ListNames of a %s scope", scope.Kind)
		}
		for sc := range scopeSet(t, st) {
			if !c.HasKind(sc.Kind) {
				t.Errorf("a refused put left the scope %s behind", sc)
			}
		}
	})
	t.Run("only app", func(t *testing.T) {
		st := s.newStore(t)
		c := st.Capabilities()
		other := artifacts.SessionScope("another-app", "user-1", "session-1")
		rec := put(t, st, s.session, "only-app", []byte("x"), artifacts.PutOptions{})
		_, err := st.Put(t.Context(), other, "only-app", reader([]byte("y")), artifacts.PutOptions{})
		if c.OnlyApp == "" {
			if err != nil {
				t.Errorf("Put into a second app, in a store that declares no OnlyApp: %v", err)
			}
			return
		}
		if other.App == c.OnlyApp {
			t.Fatalf("the suite's other app is the store's only app %q", c.OnlyApp)
		}
		wantCode(t, err, artifacts.CodeInvalidScope, "Put into app %q of a store whose OnlyApp is %q", other.App, c.OnlyApp)
		wantCode(t, errOf(st.ListNames(t.Context(), other, artifacts.ListOptions{})), artifacts.CodeNotFound, "ListNames of another app")
		wantCode(t, errOf(st.Stat(t.Context(), other, "only-app", artifacts.Latest)), artifacts.CodeNotFound, "Stat in another app")
		if got := scopeSet(t, st); got != nil && !equalSets(got, map[artifacts.Scope]bool{s.session: true}) {
			t.Errorf("ListScopes = %v, want only %s", got, s.session)
		}
		mustGet(t, st, s.session, "only-app", rec.Version, []byte("x"))
	})
	t.Run("first version", func(t *testing.T) {
		st := s.newStore(t)
		c := st.Capabilities()
		if c.FirstVersion < 0 {
			t.Fatalf("FirstVersion %d: want 0 or more", c.FirstVersion)
		}
		scope := s.app
		rec := put(t, st, scope, "first", []byte("1"), artifacts.PutOptions{})
		if rec.Version != c.FirstVersion {
			t.Errorf("first put got version %d, the store declares %d", rec.Version, c.FirstVersion)
		}
		got, err := st.Stat(t.Context(), scope, "first", rec.Version)
		if err != nil || got.Version != rec.Version {
			t.Errorf("Stat(v%d) = v%d, %v", rec.Version, got.Version, err)
		}
		// A number below the first can name no version: it is not_found,
		// never read as "the latest".
		for v := c.FirstVersion - 1; v >= 0; v-- {
			wantCode(t, errOf(st.Stat(t.Context(), scope, "first", v)), artifacts.CodeNotFound, "Stat(v%d) below the first version %d", v, c.FirstVersion)
			wantCode(t, errOf(st.Get(t.Context(), scope, "first", v)), artifacts.CodeNotFound, "Get(v%d) below the first version %d", v, c.FirstVersion)
		}
	})
	t.Run("digest", func(t *testing.T) {
		st := s.newStore(t)
		c := st.Capabilities()
		payload := data(3000, 77)
		rec := put(t, st, s.app, "digest", payload, artifacts.PutOptions{})
		sum := sha256.Sum256(payload)
		switch want := hex.EncodeToString(sum[:]); {
		case c.StoresDigest && rec.Digest != want:
			t.Errorf("record digest %q, want the payload's SHA-256 %s", rec.Digest, want)
		case !c.StoresDigest && rec.Digest != "":
			t.Errorf("the store declares it keeps no digest, but the record holds %q", rec.Digest)
		}
		if got, err := st.Stat(t.Context(), rec.Scope, rec.Name, rec.Version); err != nil || got.Digest != rec.Digest {
			t.Errorf("Stat digest %q, %v; want %q", got.Digest, err, rec.Digest)
		}
	})
	t.Run("name length", func(t *testing.T) {
		st := s.newStore(t)
		c := st.Capabilities()
		if c.MaxNameBytes < 1 || c.MaxNameBytes > artifacts.MaxNameBytes {
			t.Fatalf("MaxNameBytes %d: want 1..%d", c.MaxNameBytes, artifacts.MaxNameBytes)
		}
		scope := s.app
		long := s.longName(c.MaxNameBytes)
		put(t, st, scope, long, []byte("at the limit"), artifacts.PutOptions{})
		mustGet(t, st, scope, long, artifacts.Latest, []byte("at the limit"))
		wantCode(t, errOf(st.Put(t.Context(), scope, long+"n", reader([]byte("x")), artifacts.PutOptions{})), artifacts.CodeInvalidName, "Put of a name one byte past MaxNameBytes")
		wantCode(t, errOf(st.Stat(t.Context(), scope, long+"n", artifacts.Latest)), artifacts.CodeInvalidName, "Stat of a name one byte past MaxNameBytes")
	})
	t.Run("record size", func(t *testing.T) {
		st := s.newStore(t)
		c := st.Capabilities()
		if c.MaxRecordBytes < 1 {
			t.Fatalf("MaxRecordBytes %d: want at least 1", c.MaxRecordBytes)
		}
		// The largest metadata the rules allow: one string near 16,384
		// bytes encoded. Whether its record fits decides the outcome.
		md := artifacts.Metadata{"k": strings.Repeat("x", artifacts.MaxMetadataBytes-17)}
		if err := artifacts.ValidateMetadata(md); err != nil {
			t.Fatal(err)
		}
		scope := s.app
		rec := artifacts.Record{Scope: scope, Name: "big-record", Version: 1, MIMEType: artifacts.DefaultMIMEType, Digest: strings.Repeat("0", 64), Size: c.MaxArtifactBytes, CreatedAt: 1 << 42, Metadata: md}
		b, err := artifacts.EncodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.Put(t.Context(), scope, rec.Name, reader([]byte("x")), artifacts.PutOptions{Metadata: md})
		if len(b) > c.MaxRecordBytes {
			wantCode(t, err, artifacts.CodeInvalidMetadata, "Put of a %d-byte record past MaxRecordBytes %d", len(b), c.MaxRecordBytes)
			wantCode(t, errOf(st.Stat(t.Context(), scope, rec.Name, artifacts.Latest)), artifacts.CodeNotFound, "Stat after the refused put")
		} else if err != nil {
			t.Errorf("Put of a %d-byte record within MaxRecordBytes %d: %v", len(b), c.MaxRecordBytes, err)
		}
	})
}

// testVersionsReused checks the claim of a driver whose numbers are
// reused after a delete (ReusesVersions): a put takes one more than the
// highest version the name has, so deleting the highest hands its number
// out again, deleting a lower one changes nothing, and a name whose
// versions are all deleted starts again at FirstVersion. Numbering stays
// ascending among the published versions.
func testVersionsReused(t *testing.T, s *suite) {
	for _, tc := range []struct {
		name string
		sel  artifacts.Selector
		gone int // ordinal deleted
		next int // ordinal of the next put's number
	}{
		{"delete latest", artifacts.Selector{Kind: artifacts.SelectLatest}, 3, 3},
		{"delete latest by number", artifacts.Selector{Kind: artifacts.SelectVersion, Version: s.v(3)}, 3, 3},
		{"delete middle", artifacts.Selector{Kind: artifacts.SelectVersion, Version: s.v(2)}, 2, 4},
		{"delete first", artifacts.Selector{Kind: artifacts.SelectVersion, Version: s.v(1)}, 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := s.newStore(t)
			recs := putN(t, st, s.app, "v", 3, 10)
			for i, r := range recs {
				if r.Version != s.v(i+1) {
					t.Fatalf("put %d got version %d, want %d", i+1, r.Version, s.v(i+1))
				}
			}
			deleteOK(t, st, s.app, "v", tc.sel, recs[tc.gone-1])
			b := []byte("again " + tc.name)
			rec := put(t, st, s.app, "v", b, artifacts.PutOptions{})
			if rec.Version != s.v(tc.next) {
				t.Fatalf("put after deleting v%d got v%d, want v%d: one more than the highest left", s.v(tc.gone), rec.Version, s.v(tc.next))
			}
			mustGet(t, st, s.app, "v", rec.Version, b)
			mustGet(t, st, s.app, "v", artifacts.Latest, b)
			var want []int64
			for i := 1; i <= 3; i++ {
				if i != tc.gone {
					want = append(want, s.v(i))
				}
			}
			if tc.next > 3 || tc.gone == 3 {
				want = append(want, rec.Version)
			}
			if got := versionsOf(t, st, s.app, "v"); !slices.Equal(got, want) {
				t.Errorf("versions = %v, want %v", got, want)
			}
		})
	}
	t.Run("delete all", func(t *testing.T) {
		st := s.newStore(t)
		recs := putN(t, st, s.app, "v", 3, 10)
		deleteOK(t, st, s.app, "v", artifacts.Selector{Kind: artifacts.SelectAll}, recs...)
		for i := 1; i <= 2; i++ {
			if rec := put(t, st, s.app, "v", []byte("anew"), artifacts.PutOptions{}); rec.Version != s.v(i) {
				t.Errorf("put %d after deleting every version got v%d, want v%d", i, rec.Version, s.v(i))
			}
		}
	})
}

// testNameRules checks the facts of a layout that stores ids and names
// unescaped: each rule it declares is enforced exactly at its edge (a
// scope part or name segment of MaxSegmentBytes is taken, one byte more
// is refused; a ScopePartForbidden or NameForbidden byte is refused; a
// user-scope name must begin with UserNamePrefix and no other may), and
// nothing refused is written. A layout that declares no such rule is
// checked to take what the rule would refuse.
func testNameRules(t *testing.T, s *suite) {
	b := newBaseline(t, s)
	c := s.caps
	seg := c.MaxSegmentBytes
	if seg <= 0 {
		seg = artifacts.MaxScopePartBytes // every layout takes this much
	}
	long := strings.Repeat("s", seg)
	b.okPut(t, s.own(artifacts.SessionScope("rules", "u", long)), "at-the-segment-limit", artifacts.PutOptions{})
	b.okPut(t, s.own(artifacts.SessionScope("rules", long, "s")), "x", artifacts.PutOptions{})
	b.okPut(t, s.app, strings.Repeat("n", seg), artifacts.PutOptions{})
	b.okPut(t, s.app, "dir/"+strings.Repeat("n", seg)+"/x", artifacts.PutOptions{})
	if c.MaxSegmentBytes > 0 {
		b.badPut(t, artifacts.CodeInvalidScope, s.own(artifacts.SessionScope("rules", "u", long+"s")), "x", artifacts.PutOptions{}, "a scope part one byte past MaxSegmentBytes")
		b.badPut(t, artifacts.CodeInvalidName, s.app, strings.Repeat("n", seg+1), artifacts.PutOptions{}, "a name segment one byte past MaxSegmentBytes")
		b.badPut(t, artifacts.CodeInvalidName, s.app, "dir/"+strings.Repeat("n", seg+1)+"/x", artifacts.PutOptions{}, "an inner name segment one byte past MaxSegmentBytes")
	}
	for _, ch := range []string{"/", "\\", ":", "@", " "} {
		sc := s.own(artifacts.SessionScope("rules", "u"+ch+"1", "s"))
		if strings.Contains(c.ScopePartForbidden, ch) {
			b.badPut(t, artifacts.CodeInvalidScope, sc, "x", artifacts.PutOptions{}, "a scope part holding "+strconv.Quote(ch)+", which ScopePartForbidden lists")
			wantCode(t, errOf(b.st.ListNames(t.Context(), sc, artifacts.ListOptions{})), artifacts.CodeInvalidScope, "ListNames of a scope part holding %q", ch)
		} else {
			b.okPut(t, sc, "x", artifacts.PutOptions{})
		}
		name := "a" + ch + "b"
		switch {
		case ch == "/":
			// A separator in every layout: a name's segments.
		case strings.Contains(c.NameForbidden, ch):
			b.badPut(t, artifacts.CodeInvalidName, s.app, name, artifacts.PutOptions{}, "a name holding "+strconv.Quote(ch)+", which NameForbidden lists")
			wantCode(t, errOf(b.st.Stat(t.Context(), s.app, name, artifacts.Latest)), artifacts.CodeInvalidName, "Stat of a name holding %q", ch)
		default:
			b.okPut(t, s.app, name, artifacts.PutOptions{})
		}
	}
	for _, r := range c.ReservedSegments {
		b.badPut(t, artifacts.CodeInvalidName, s.app, r, artifacts.PutOptions{}, "the reserved segment "+strconv.Quote(r)+" as a name")
		b.badPut(t, artifacts.CodeInvalidName, s.app, "dir/"+r, artifacts.PutOptions{}, "a name ending in the reserved segment "+strconv.Quote(r))
		b.okPut(t, s.app, "dir/"+r+"-not", artifacts.PutOptions{})
	}
	p := c.UserNamePrefix
	if p == "" {
		if c.HasKind(artifacts.KindUser) {
			b.okPut(t, s.own(artifacts.UserScope("rules", "u")), "plain", artifacts.PutOptions{})
		}
		return
	}
	if !c.HasKind(artifacts.KindUser) {
		t.Fatalf("UserNamePrefix %q is declared, but the store holds no user scopes", p)
	}
	us := s.own(artifacts.UserScope("rules", "u"))
	b.okPut(t, us, p+"prefs.json", artifacts.PutOptions{})
	b.okPut(t, us, p+"dir/cfg.yaml", artifacts.PutOptions{})
	b.badPut(t, artifacts.CodeInvalidName, us, "prefs.json", artifacts.PutOptions{}, "a user-scope name without UserNamePrefix")
	b.badPut(t, artifacts.CodeInvalidName, us, p, artifacts.PutOptions{}, "a user-scope name that is only UserNamePrefix")
	b.badPut(t, artifacts.CodeInvalidName, s.session, p+"prefs.json", artifacts.PutOptions{}, "a session-scope name beginning with UserNamePrefix")
	wantCode(t, errOf(b.st.Stat(t.Context(), us, "prefs.json", artifacts.Latest)), artifacts.CodeInvalidName, "Stat of a user-scope name without UserNamePrefix")
	np, err := b.st.ListNames(t.Context(), us, artifacts.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range np.Items {
		names = append(names, e.Name)
	}
	if want := []string{p + "dir/cfg.yaml", p + "prefs.json"}; !slices.Equal(names, want) {
		t.Errorf("ListNames of the user scope = %q, want %q (names as the layout's API gives them)", names, want)
	}
}

// anyScope returns a scope of a kind the store holds.
func anyScope(s *suite) artifacts.Scope { return s.app }
