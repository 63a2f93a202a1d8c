package gcsstore_test

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// fixtureStore loads every object of the Erlang ADK Cloud Storage fixture
// into an emulator bucket under its own name and opens a Store on it.
func fixtureStore(t *testing.T) (*gcsstore.Store, *fakestorage.Server) {
	t.Helper()
	objs, err := testfixtures.GCSObjectsList()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatal("the fixture has no objects")
	}
	srv := newEmulator(t)
	for _, o := range objs {
		srv.CreateObject(fakestorage.Object{
			ObjectAttrs: fakestorage.ObjectAttrs{BucketName: testBucket, Name: o.Name},
			Content:     o.Data,
		})
	}
	return openStore(t, newClient(t, srv.URL()), gcsstore.Options{}), srv
}

func scopeOf(e testfixtures.Expected) artifacts.Scope {
	return artifacts.Scope{Kind: artifacts.Kind(e.Kind), App: e.App, User: e.User, Session: e.Session}
}

func line(r artifacts.Record) string {
	return strings.Join([]string{r.Scope.String(), r.Name, strconv.FormatInt(r.Version, 10), strconv.FormatInt(r.Size, 10), r.Digest, r.MIMEType, strconv.FormatInt(r.CreatedAt, 10), strings.Join(r.MetadataKeys(), ",")}, "|")
}

// TestFixtureListsAsExpected checks that ListScopes, ListNames and
// ListVersions over the Erlang fixture reproduce its expected.tsv exactly,
// and that every payload verifies.
func TestFixtureListsAsExpected(t *testing.T) {
	s, _ := fixtureStore(t)
	ctx := context.Background()
	exp, err := testfixtures.ExpectedGCS()
	if err != nil {
		t.Fatal(err)
	}
	if len(exp) == 0 {
		t.Fatal("expected.tsv is empty")
	}
	var want []string
	scopes := map[artifacts.Scope]bool{}
	for _, e := range exp {
		scopes[scopeOf(e)] = true
		keys := slices.Clone(e.MetadataKeys)
		slices.Sort(keys)
		want = append(want, strings.Join([]string{scopeOf(e).String(), e.Name, strconv.FormatInt(e.Version, 10), strconv.FormatInt(e.Size, 10), e.Digest, e.MIMEType, strconv.FormatInt(e.CreatedAt, 10), strings.Join(keys, ",")}, "|"))
	}
	listed, err := s.ListScopes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gotScopes, wantScopes []string
	for _, sc := range listed {
		gotScopes = append(gotScopes, sc.String())
	}
	for sc := range scopes {
		wantScopes = append(wantScopes, sc.String())
	}
	slices.Sort(gotScopes)
	slices.Sort(wantScopes)
	if !slices.Equal(gotScopes, wantScopes) {
		t.Errorf("ListScopes = %q, want %q", gotScopes, wantScopes)
	}
	var got []string
	for _, sc := range listed {
		cursor := ""
		for {
			page, err := s.ListNames(ctx, sc, artifacts.ListOptions{Limit: 1, Cursor: cursor})
			if err != nil {
				t.Fatalf("ListNames %s: %v", sc, err)
			}
			for _, it := range page.Items {
				vc, n := "", 0
				for {
					vp, err := s.ListVersions(ctx, sc, it.Name, artifacts.ListOptions{Limit: 7, Cursor: vc})
					if err != nil {
						t.Fatalf("ListVersions %s %q: %v", sc, it.Name, err)
					}
					for _, r := range vp.Items {
						got = append(got, line(r))
						n++
						b, err := readAll(s.Get(ctx, sc, it.Name, r.Version))
						if err != nil || int64(len(b)) != r.Size {
							t.Errorf("Get %s %q v%d: %d bytes, %v", sc, it.Name, r.Version, len(b), err)
						}
					}
					if vp.NextCursor == "" {
						break
					}
					vc = vp.NextCursor
				}
				if n != it.Versions || it.Latest.Name != it.Name {
					t.Errorf("%s %q: ListNames says %d versions (latest %q), ListVersions gave %d", sc, it.Name, it.Versions, it.Latest.Name, n)
				}
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("missing: %s", w)
			}
		}
		for _, g := range got {
			if !slices.Contains(want, g) {
				t.Errorf("unexpected: %s", g)
			}
		}
	}
}

// TestFixtureDeletedVersion checks that the deleted v2 of
// reports/summary.txt (only its .reserve is left) stays invisible and that
// the next put is v4, next to the Erlang objects.
func TestFixtureDeletedVersion(t *testing.T) {
	s, srv := fixtureStore(t)
	ctx := context.Background()
	sc := artifacts.SessionScope("demo-a", "user-42", "session-7")
	const name = "reports/summary.txt"
	if !objectExists(t, s, s.ObjectName(sc, name, 2, gcsstore.SuffixReserve)) || objectExists(t, s, s.ObjectName(sc, name, 2, gcsstore.SuffixMeta)) {
		t.Fatal("the fixture should hold v2's .reserve and no .meta")
	}
	_, err := s.Stat(ctx, sc, name, 2)
	if artifacts.CodeOf(err) != artifacts.CodeNotFound {
		t.Errorf("Stat v2 = %v, want not_found", err)
	}
	if _, err := s.Get(ctx, sc, name, 2); artifacts.CodeOf(err) != artifacts.CodeNotFound {
		t.Errorf("Get v2 = %v, want not_found", err)
	}
	vp, err := s.ListVersions(ctx, sc, name, artifacts.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var vs []int64
	for _, r := range vp.Items {
		vs = append(vs, r.Version)
	}
	if !slices.Equal(vs, []int64{1, 3}) {
		t.Errorf("versions = %v, want [1 3]", vs)
	}
	latest, err := s.Stat(ctx, sc, name, artifacts.Latest)
	if err != nil || latest.Version != 3 {
		t.Errorf("Stat latest = v%d, %v; want v3", latest.Version, err)
	}
	rec, err := s.Put(ctx, sc, name, bytes.NewReader([]byte("new summary")), artifacts.PutOptions{MIMEType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != 4 {
		t.Errorf("Put after the fixture got v%d, want v4", rec.Version)
	}
	// The new record is written as the layout says: uncompressed ETF with
	// sorted keys, exactly what EncodeRecord gives, under the 20-digit name.
	want, err := artifacts.EncodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	o, err := srv.GetObject(testBucket, "adk-artifacts/v1/s/"+sc.Hash()+"/n/"+artifacts.NameHash(name)+"/v-00000000000000000004.meta")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(o.Content, want) {
		t.Errorf("the v4 record is not EncodeRecord's bytes")
	}
	if o.Metadata[gcsstore.TokenMetadataKey] == "" {
		t.Errorf("the v4 record carries no %s metadata", gcsstore.TokenMetadataKey)
	}
	b, err := readAll(s.Get(ctx, sc, name, artifacts.Latest))
	if err != nil || string(b) != "new summary" {
		t.Errorf("Get latest = %q, %v", b, err)
	}
}
