package fsstore_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

func fixtureStore(t *testing.T) (*fsstore.Store, string) {
	t.Helper()
	root, err := testfixtures.CopyFSStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}

func scopeOf(e testfixtures.Expected) artifacts.Scope {
	return artifacts.Scope{Kind: artifacts.Kind(e.Kind), App: e.App, User: e.User, Session: e.Session}
}

func line(r artifacts.Record) string {
	return strings.Join([]string{r.Scope.String(), r.Name, strconv.FormatInt(r.Version, 10), strconv.FormatInt(r.Size, 10), r.Digest, r.MIMEType, strconv.FormatInt(r.CreatedAt, 10), strings.Join(r.MetadataKeys(), ",")}, "|")
}

// TestFixtureListsAsExpected checks that every line of the Erlang fixture's
// expected.tsv is reproduced by ListNames and ListVersions, and nothing else.
func TestFixtureListsAsExpected(t *testing.T) {
	s, _ := fixtureStore(t)
	ctx := context.Background()
	exp, err := testfixtures.ExpectedFS()
	if err != nil {
		t.Fatal(err)
	}
	if len(exp) != 412 {
		t.Fatalf("expected.tsv has %d lines", len(exp))
	}
	var want []string
	scopes := map[artifacts.Scope]bool{}
	for _, e := range exp {
		sc := scopeOf(e)
		if sc.Hash() != e.ScopeHash || artifacts.NameHash(e.Name) != e.NameHash {
			t.Errorf("hash of %s %q: got %s/%s, fixture %s/%s", sc, e.Name, sc.Hash(), artifacts.NameHash(e.Name), e.ScopeHash, e.NameHash)
		}
		scopes[sc] = true
		keys := slices.Clone(e.MetadataKeys)
		slices.Sort(keys)
		want = append(want, strings.Join([]string{sc.String(), e.Name, strconv.FormatInt(e.Version, 10), strconv.FormatInt(e.Size, 10), e.Digest, e.MIMEType, strconv.FormatInt(e.CreatedAt, 10), strings.Join(keys, ",")}, "|"))
	}
	var got []string
	for sc := range scopes {
		cursor := ""
		for {
			page, err := s.ListNames(ctx, sc, artifacts.ListOptions{Limit: 7, Cursor: cursor})
			if err != nil {
				t.Fatalf("ListNames %s: %v", sc, err)
			}
			for _, it := range page.Items {
				vc := ""
				n := 0
				for {
					vp, err := s.ListVersions(ctx, sc, it.Name, artifacts.ListOptions{Limit: 13, Cursor: vc})
					if err != nil {
						t.Fatalf("ListVersions %s %q: %v", sc, it.Name, err)
					}
					for _, r := range vp.Items {
						got = append(got, line(r))
						n++
					}
					if vp.NextCursor == "" {
						break
					}
					vc = vp.NextCursor
				}
				if n != it.Versions {
					t.Errorf("%s %q: ListNames says %d versions, ListVersions gave %d", sc, it.Name, it.Versions, n)
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
	listed, err := s.ListScopes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(scopes) {
		t.Errorf("ListScopes gave %d scopes, want %d", len(listed), len(scopes))
	}
	for _, sc := range listed {
		if !scopes[sc] {
			t.Errorf("ListScopes gave unexpected %s", sc)
		}
	}
}

var damaged = artifacts.SessionScope("demo-a", "user-42", "session-damaged")

func TestFixtureCorruptNeverYieldsBytes(t *testing.T) {
	s, _ := fixtureStore(t)
	ctx := context.Background()
	for _, name := range []string{"flipped.bin", "lost-data.bin"} {
		r, err := s.Get(ctx, damaged, name, artifacts.Latest)
		if err == nil {
			b, rerr := io.ReadAll(r)
			r.Close()
			if len(b) != 0 {
				t.Errorf("%s: got %d bytes", name, len(b))
			}
			err = rerr
		}
		if artifacts.CodeOf(err) != artifacts.CodeCorrupt {
			t.Errorf("%s: got %v, want corrupt_artifact", name, err)
		}
		r, err = s.GetRange(ctx, damaged, name, 1, 0, 2)
		if err == nil {
			b, rerr := io.ReadAll(r)
			if len(b) != 0 {
				t.Errorf("%s range: got %d bytes", name, len(b))
			}
			err = rerr
		}
		if artifacts.CodeOf(err) != artifacts.CodeCorrupt {
			t.Errorf("%s range: got %v, want corrupt_artifact", name, err)
		}
	}
	// OpenPayload, given the records, judges the same.
	for _, name := range []string{"flipped.bin", "lost-data.bin"} {
		rec, err := s.Stat(ctx, damaged, name, 1)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.OpenPayload(ctx, rec)
		if err == nil {
			b, rerr := io.ReadAll(r)
			if len(b) != 0 {
				t.Errorf("%s OpenPayload: got %d bytes", name, len(b))
			}
			err = rerr
		}
		if artifacts.CodeOf(err) != artifacts.CodeCorrupt {
			t.Errorf("%s OpenPayload: got %v, want corrupt_artifact", name, err)
		}
	}
	// ok.bin v2 is intact.
	r, err := s.Get(ctx, damaged, "ok.bin", artifacts.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, err := io.ReadAll(r); err != nil || len(b) != 5 || r.Record().Version != 2 {
		t.Fatalf("ok.bin: %q %v v%d", b, err, r.Record().Version)
	}
}

func TestFixturePutAfterDamageGetsVersion6(t *testing.T) {
	s, root := fixtureStore(t)
	rec, err := s.Put(context.Background(), damaged, "ok.bin", strings.NewReader("six"), artifacts.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Version != 6 {
		t.Fatalf("put to ok.bin got v%d, want 6", rec.Version)
	}
	// The deleted v2 of reports/summary.txt is never reused either.
	sess := artifacts.SessionScope("demo-a", "user-42", "session-7")
	rec, err = s.Put(context.Background(), sess, "reports/summary.txt", strings.NewReader("v4"), artifacts.PutOptions{MIMEType: "text/plain"})
	if err != nil || rec.Version != 4 {
		t.Fatalf("put to reports/summary.txt: v%d %v, want v4", rec.Version, err)
	}
	_ = root
}

// inflate returns the uncompressed form of a record file.
func inflate(t *testing.T, b []byte) []byte {
	t.Helper()
	if len(b) > 1 && b[1] == 80 {
		size := binary.BigEndian.Uint32(b[2:6])
		zr, err := zlib.NewReader(bytes.NewReader(b[6:]))
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(zr)
		if err != nil || len(out) != int(size) {
			t.Fatalf("inflate: %v (%d of %d)", err, len(out), size)
		}
		return append([]byte{131}, out...)
	}
	return b
}

// TestRecordsMatchErlangBytes decodes every record of the fixture and
// encodes it again: the result must be the bytes Erlang wrote.
func TestRecordsMatchErlangBytes(t *testing.T) {
	_, root := fixtureStore(t)
	n := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(p, ".meta") {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rec, err := artifacts.DecodeRecord(raw)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		enc, err := artifacts.EncodeRecord(rec)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		if !bytes.Equal(enc, inflate(t, raw)) {
			t.Errorf("%s: our encoding differs from Erlang's", p)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 400 {
		t.Fatalf("checked only %d records", n)
	}
}

// TestSameLayoutAsErlang writes the fixture's intact artifacts into a new
// store and checks that the same directories and files appear.
func TestSameLayoutAsErlang(t *testing.T) {
	src, srcRoot := fixtureStore(t)
	ctx := context.Background()
	dstRoot := t.TempDir()
	dst, err := fsstore.Open(dstRoot, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess := artifacts.SessionScope("demo-a", "user-42", "session-7")
	app := artifacts.AppScope("demo-a")
	for _, c := range []struct {
		scope artifacts.Scope
		name  string
	}{{app, "config/settings.json"}, {sess, "reports/summary.txt"}} {
		vp, err := src.ListVersions(ctx, c.scope, c.name, artifacts.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range vp.Items {
			r, err := src.Get(ctx, c.scope, c.name, rec.Version)
			if err != nil {
				t.Fatal(err)
			}
			got, err := dst.Put(ctx, c.scope, c.name, r, artifacts.PutOptions{MIMEType: rec.MIMEType, Metadata: rec.Metadata})
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got.Digest != rec.Digest || got.Size != rec.Size {
				t.Fatalf("copy of %q v%d differs", c.name, rec.Version)
			}
		}
	}
	for _, c := range []struct {
		scope artifacts.Scope
		name  string
		files []string
	}{
		{app, "config/settings.json", []string{"v-1.data", "v-1.meta", "v-1.reserve", "v-2.data", "v-2.meta", "v-2.reserve"}},
		// v2 was deleted in the fixture; the copy numbers it 2 instead of 3.
		{sess, "reports/summary.txt", []string{"v-1.data", "v-1.meta", "v-1.reserve", "v-2.data", "v-2.meta", "v-2.reserve"}},
	} {
		rel, _ := filepath.Rel(srcRoot, src.NameDir(c.scope, c.name))
		if got := listDir(t, filepath.Join(dstRoot, rel)); !slices.Equal(got, c.files) {
			t.Errorf("%s: files %v, want %v", rel, got, c.files)
		}
	}
	// Scope and name slots hold the hashes, as Erlang's do.
	for _, rel := range []string{"v1/scopes/.adk-scope-slot-1.reserve", "v1/scopes/.adk-scope-slot-2.reserve"} {
		b, err := os.ReadFile(filepath.Join(dstRoot, rel))
		if err != nil || !fsstore.IsHash(string(b)) {
			t.Errorf("%s: %q %v", rel, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dstRoot, "v1/scopes", sess.Hash(), "names/.adk-name-slot-1.reserve")); err != nil {
		t.Error(err)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
