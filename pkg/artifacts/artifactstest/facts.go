package artifactstest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// testFacts checks each fact a driver declares in its Capabilities, so
// that a claim is tested rather than trusted: the scope kinds it holds
// (and refuses the others with CodeUnsupported, writing nothing), its first
// version number, whether records hold the payload's digest, its name
// length and its record size.
func testFacts(t *testing.T, s *suite) {
	t.Run("scope kinds", func(t *testing.T) {
		st := s.newStore(t)
		c := st.Capabilities()
		for _, scope := range []artifacts.Scope{scopeApp, scopeUser, scopeSession} {
			_, err := st.Put(t.Context(), scope, "kind", reader([]byte("k")), artifacts.PutOptions{})
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
	t.Run("first version", func(t *testing.T) {
		st := s.newStore(t)
		c := st.Capabilities()
		if c.FirstVersion < 0 {
			t.Fatalf("FirstVersion %d: want 0 or more", c.FirstVersion)
		}
		scope := anyScope(t, c)
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
		rec := put(t, st, anyScope(t, c), "digest", payload, artifacts.PutOptions{})
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
		scope := anyScope(t, c)
		long := strings.Repeat("n", c.MaxNameBytes)
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
		scope := anyScope(t, c)
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

// testVersionsReused checks the claim of a driver whose numbers may be
// reused after a delete: numbering stays ascending among the published
// versions, and a put after deleting the latest takes a number no higher
// than the deleted one's successor.
func testVersionsReused(t *testing.T, s *suite) {
	st := s.newStore(t)
	scope := anyScope(t, st.Capabilities())
	recs := putN(t, st, scope, "v", 3, 10)
	deleteOK(t, st, scope, "v", artifacts.Selector{Kind: artifacts.SelectLatest}, recs[2])
	rec := put(t, st, scope, "v", []byte("again"), artifacts.PutOptions{})
	if rec.Version <= recs[1].Version || rec.Version > recs[2].Version+1 {
		t.Errorf("put after deleting v%d got v%d, want above v%d", recs[2].Version, rec.Version, recs[1].Version)
	}
}

// anyScope returns a scope of a kind the store holds.
func anyScope(t *testing.T, c artifacts.Capabilities) artifacts.Scope {
	t.Helper()
	for _, sc := range []artifacts.Scope{scopeApp, scopeUser, scopeSession} {
		if c.HasKind(sc.Kind) {
			return sc
		}
	}
	t.Fatalf("the store declares no scope kind it holds: %v", c.ScopeKinds)
	return artifacts.Scope{}
}
