package fsstore_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// brokenStore makes a name with five versions: v1 whose record does not
// decode, v2 without its payload, v3 whose payload is a byte short, v4
// healthy, v5 whose record belongs to another name.
func brokenStore(t *testing.T) (*artifacts.Store, *fsstore.Store, artifacts.Scope, string) {
	t.Helper()
	fs, err := fsstore.Open(t.TempDir(), fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(fs)
	sc := artifacts.SessionScope("app", "u", "s")
	for i := range 5 {
		if _, err := st.Put(t.Context(), sc, "n", strings.NewReader(strings.Repeat("x", i+1)), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Put(t.Context(), sc, "other", strings.NewReader("o"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := fs.NameDir(sc, "n")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "v-1.meta"), []byte("not a record"), 0o600))
	must(os.Remove(filepath.Join(dir, "v-2.data")))
	must(os.Truncate(filepath.Join(dir, "v-3.data"), 2))
	other, err := os.ReadFile(filepath.Join(fs.NameDir(sc, "other"), "v-1.meta"))
	must(err)
	must(os.WriteFile(filepath.Join(dir, "v-5.meta"), other, 0o600))
	return st, fs, sc, dir
}

func TestListVersionsIncludeBroken(t *testing.T) {
	st, _, sc, _ := brokenStore(t)
	ctx := t.Context()
	// Without IncludeBroken the listing still fails on the first bad record.
	if _, err := st.ListVersions(ctx, sc, "n", artifacts.ListOptions{}); artifacts.CodeOf(err) != artifacts.CodeCorrupt {
		t.Fatalf("ListVersions without IncludeBroken = %v, want corrupt_artifact", err)
	}
	cases := []struct {
		name       string
		opts       artifacts.ListOptions
		items      []int64
		broken     map[int64]string // version -> start of reason
		nextCursor string
	}{
		{"whole name", artifacts.ListOptions{IncludeBroken: true}, []int64{2, 3, 4},
			map[int64]string{1: "record does not decode", 2: "payload is missing", 3: "payload has 2 bytes, record says 3", 5: "record"}, ""},
		{"page of 2", artifacts.ListOptions{IncludeBroken: true, Limit: 2}, []int64{2},
			map[int64]string{1: "record does not decode", 2: "payload is missing"}, "2"},
		{"page after 2", artifacts.ListOptions{IncludeBroken: true, Limit: 2, Cursor: "2"}, []int64{3, 4},
			map[int64]string{3: "payload has"}, "4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			page, err := st.ListVersions(ctx, sc, "n", c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range page.Items {
				got = append(got, r.Version)
			}
			if !slices.Equal(got, c.items) || page.NextCursor != c.nextCursor {
				t.Errorf("items %v cursor %q, want %v %q", got, page.NextCursor, c.items, c.nextCursor)
			}
			if len(page.Broken) != len(c.broken) {
				t.Fatalf("broken %+v, want %v", page.Broken, c.broken)
			}
			for _, b := range page.Broken {
				want, ok := c.broken[b.Problem.Version]
				if !ok || !strings.HasPrefix(b.Problem.Reason, want) || b.Problem.Code != artifacts.CodeCorrupt {
					t.Errorf("broken v%d: %+v, want reason %q", b.Problem.Version, b.Problem, want)
				}
				undecodable := b.Problem.Version == 1 || b.Problem.Version == 5
				if undecodable != (b.Record == nil) || undecodable != artifacts.IsBrokenRef(b.Ref) {
					t.Errorf("broken v%d: record %v, ref %+v", b.Problem.Version, b.Record, b.Ref)
				}
			}
		})
	}
	b, err := st.BrokenVersionAt(ctx, sc, "n", 1)
	if err != nil || b.Record != nil || b.Ref.Version != 1 || b.Ref.Size != int64(len("not a record")) || len(b.Ref.Digest) != 64 {
		t.Fatalf("BrokenVersionAt(1) = %+v, %v", b, err)
	}
	if _, err := st.BrokenVersionAt(ctx, sc, "n", 4); !artifacts.IsNotFound(err) {
		t.Errorf("BrokenVersionAt of a healthy version = %v, want not_found", err)
	}
}

func TestDeleteBroken(t *testing.T) {
	st, _, sc, dir := brokenStore(t)
	ctx := t.Context()
	b, err := st.BrokenVersionAt(ctx, sc, "n", 1)
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := st.Stat(ctx, sc, "n", 4)
	if err != nil {
		t.Fatal(err)
	}
	exists := func(f string) bool { _, err := os.Lstat(filepath.Join(dir, f)); return err == nil }
	changedDigest := b.Ref
	changedDigest.Digest = strings.Repeat("0", 64)
	changedToken := b.Ref
	changedToken.Token += "x"
	for _, c := range []struct {
		name string
		ref  artifacts.VersionRef
		code artifacts.Code
	}{
		{"another digest", changedDigest, artifacts.CodeConflict},
		{"another token", changedToken, artifacts.CodeConflict},
		{"a healthy version's ref", healthy.Ref(), artifacts.CodeInvalidArgument},
		{"a version that does not exist", artifacts.VersionRef{Version: 9, Token: artifacts.BrokenTokenPrefix}, artifacts.CodeNotFound},
	} {
		if err := st.DeleteBroken(ctx, sc, "n", c.ref); artifacts.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
		if !exists("v-1.meta") || !exists("v-1.data") || !exists("v-4.meta") {
			t.Fatalf("%s: files removed", c.name)
		}
	}
	// The payload rewritten (a restore from backup) makes the ref stale.
	if err := os.WriteFile(filepath.Join(dir, "v-1.data"), []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); artifacts.CodeOf(err) != artifacts.CodeConflict || !exists("v-1.meta") {
		t.Fatalf("after the payload changed: %v", err)
	}
	b, err = st.BrokenVersionAt(ctx, sc, "n", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); err != nil {
		t.Fatal(err)
	}
	if exists("v-1.meta") || exists("v-1.data") || !exists("v-1.reserve") {
		t.Error("DeleteBroken left the record or payload, or removed the reservation")
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); !artifacts.IsNotFound(err) {
		t.Errorf("second DeleteBroken = %v, want not_found", err)
	}
}
