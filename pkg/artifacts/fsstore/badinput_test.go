package fsstore_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// TestBadInputNeverWrites puts with each kind of invalid input into an
// empty store: each fails with its code and the store directory stays empty.
func TestBadInputNeverWrites(t *testing.T) {
	ok := artifacts.AppScope("app")
	deep := artifacts.Metadata{}
	m := deep
	for range 8 {
		n := artifacts.Metadata{}
		m["k"] = n
		m = n
	}
	many := artifacts.Metadata{}
	for i := range 129 {
		many[strings.Repeat("k", i+1)] = int64(i)
	}
	cases := []struct {
		name  string
		scope artifacts.Scope
		aname string
		opts  artifacts.PutOptions
		code  artifacts.Code
	}{
		{"empty app", artifacts.AppScope(""), "n", artifacts.PutOptions{}, artifacts.CodeInvalidScope},
		{"NUL in user", artifacts.UserScope("a", "u\x00"), "n", artifacts.PutOptions{}, artifacts.CodeInvalidScope},
		{"257-byte session", artifacts.SessionScope("a", "u", strings.Repeat("s", 257)), "n", artifacts.PutOptions{}, artifacts.CodeInvalidScope},
		{"invalid UTF-8 app", artifacts.AppScope("\xff"), "n", artifacts.PutOptions{}, artifacts.CodeInvalidScope},
		{"unknown kind", artifacts.Scope{Kind: "org", App: "a"}, "n", artifacts.PutOptions{}, artifacts.CodeInvalidScope},
		{"dot-dot name", ok, "..", artifacts.PutOptions{}, artifacts.CodeInvalidName},
		{"dot-dot segment", ok, "a/../b", artifacts.PutOptions{}, artifacts.CodeInvalidName},
		{"doubled slash", ok, "a//b", artifacts.PutOptions{}, artifacts.CodeInvalidName},
		{"leading slash", ok, "/a", artifacts.PutOptions{}, artifacts.CodeInvalidName},
		{"NUL name", ok, "a\x00b", artifacts.PutOptions{}, artifacts.CodeInvalidName},
		{"1025-byte name", ok, strings.Repeat("n", 1025), artifacts.PutOptions{}, artifacts.CodeInvalidName},
		{"invalid UTF-8 name", ok, "a\xc3", artifacts.PutOptions{}, artifacts.CodeInvalidName},
		{"empty name", ok, "", artifacts.PutOptions{}, artifacts.CodeInvalidName},
		{"short MIME", ok, "n", artifacts.PutOptions{MIMEType: "a/"}, artifacts.CodeInvalidMIMEType},
		{"MIME without slash", ok, "n", artifacts.PutOptions{MIMEType: "textplain"}, artifacts.CodeInvalidMIMEType},
		{"MIME with LF", ok, "n", artifacts.PutOptions{MIMEType: "text/pl\nain"}, artifacts.CodeInvalidMIMEType},
		{"256-byte MIME", ok, "n", artifacts.PutOptions{MIMEType: "a/" + strings.Repeat("b", 254)}, artifacts.CodeInvalidMIMEType},
		{"metadata too deep", ok, "n", artifacts.PutOptions{Metadata: deep}, artifacts.CodeInvalidMetadata},
		{"metadata too many", ok, "n", artifacts.PutOptions{Metadata: many}, artifacts.CodeInvalidMetadata},
		{"metadata too big", ok, "n", artifacts.PutOptions{Metadata: artifacts.Metadata{"k": strings.Repeat("x", 16400)}}, artifacts.CodeInvalidMetadata},
		{"metadata NaN", ok, "n", artifacts.PutOptions{Metadata: artifacts.Metadata{"k": math.NaN()}}, artifacts.CodeInvalidMetadata},
		{"metadata struct", ok, "n", artifacts.PutOptions{Metadata: artifacts.Metadata{"k": struct{}{}}}, artifacts.CodeInvalidMetadata},
		{"metadata bad key", ok, "n", artifacts.PutOptions{Metadata: artifacts.Metadata{"\xff": 1}}, artifacts.CodeInvalidMetadata},
	}
	root := t.TempDir()
	d, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := artifacts.NewStore(d)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Put(context.Background(), c.scope, c.aname, strings.NewReader("x"), c.opts)
			if got := artifacts.CodeOf(err); got != c.code {
				t.Fatalf("got %v (%s), want %s", err, got, c.code)
			}
			entries, _ := os.ReadDir(root)
			if len(entries) != 0 {
				t.Fatalf("store is no longer empty: %v", entries)
			}
		})
	}
}

func TestSymlinkRefused(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := fsstore.Open(link, fsstore.Options{}); artifacts.CodeOf(err) != artifacts.CodeUnsafeStore {
		t.Fatalf("root symlink: %v", err)
	}
	// v1 a symlink
	root := t.TempDir()
	if err := os.Symlink(real, filepath.Join(root, "v1")); err != nil {
		t.Fatal(err)
	}
	if _, err := fsstore.Open(root, fsstore.Options{}); artifacts.CodeOf(err) != artifacts.CodeUnsafeStore {
		t.Fatalf("v1 symlink: %v", err)
	}
	// a scope directory swapped for a symlink after open
	root = t.TempDir()
	s, _ := fsstore.Open(root, fsstore.Options{})
	sc := artifacts.AppScope("a")
	ctx := context.Background()
	if _, err := s.Put(ctx, sc, "n", strings.NewReader("x"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := s.ScopeDir(sc)
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir+".moved", dir); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, sc, "n", artifacts.Latest); artifacts.CodeOf(err) != artifacts.CodeUnsafeStore {
		t.Fatalf("get through a symlinked scope: %v", err)
	}
	if _, err := s.Put(ctx, sc, "n", strings.NewReader("x"), artifacts.PutOptions{}); artifacts.CodeOf(err) != artifacts.CodeUnsafeStore {
		t.Fatalf("put through a symlinked scope: %v", err)
	}
	if _, err := s.ListNames(ctx, sc, artifacts.ListOptions{}); artifacts.CodeOf(err) != artifacts.CodeUnsafeStore {
		t.Fatalf("list through a symlinked scope: %v", err)
	}
	if _, err := fsstore.Open(filepath.Join(t.TempDir(), "missing"), fsstore.Options{}); artifacts.CodeOf(err) != artifacts.CodeNotFound {
		t.Fatalf("missing root: %v", err)
	}
}

// TestOrphanSlotReused: a crash between claiming a slot and making the
// directory leaves an orphan slot; the next put of that scope reuses it.
func TestOrphanSlotReused(t *testing.T) {
	root := t.TempDir()
	s, _ := fsstore.Open(root, fsstore.Options{MaxScanEntries: 6}) // 3 scopes, 3 names, 2 versions
	ctx := context.Background()
	sc := artifacts.AppScope("orphan")
	if err := os.MkdirAll(s.ScopesPath(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.ScopesPath(), ".adk-scope-slot-1.reserve"), []byte(sc.Hash()), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, sc, "n", strings.NewReader("x"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.ScopesPath(), ".adk-scope-slot-2.reserve")); !os.IsNotExist(err) {
		t.Fatalf("a second slot was taken: %v", err)
	}
	for _, app := range []string{"b", "c"} {
		if _, err := s.Put(ctx, artifacts.AppScope(app), "n", strings.NewReader("x"), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Put(ctx, artifacts.AppScope("d"), "n", strings.NewReader("x"), artifacts.PutOptions{}); artifacts.CodeOf(err) != artifacts.CodeScopeCapacity {
		t.Fatalf("fourth scope: %v", err)
	}
	for _, n := range []string{"n2", "n3"} {
		if _, err := s.Put(ctx, sc, n, strings.NewReader("x"), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Put(ctx, sc, "n4", strings.NewReader("x"), artifacts.PutOptions{}); artifacts.CodeOf(err) != artifacts.CodeNameCapacity {
		t.Fatalf("fourth name: %v", err)
	}
	if _, err := s.Put(ctx, sc, "n", strings.NewReader("x"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, sc, "n", artifacts.Selector{Kind: artifacts.SelectAll}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, sc, "n", strings.NewReader("x"), artifacts.PutOptions{}); artifacts.CodeOf(err) != artifacts.CodeVersionCapacity {
		t.Fatalf("third version: %v", err)
	}
}

// TestOrphanSlotAfterFastPath: a Store that has learnt a scope's slots
// claims new ones without listing; an orphan slot left later by another
// process (a crash between its slot and its directory) must still be found
// and reused, and another name must not take its number.
func TestOrphanSlotAfterFastPath(t *testing.T) {
	root := t.TempDir()
	s, _ := fsstore.Open(root, fsstore.Options{})
	ctx := context.Background()
	sc := artifacts.AppScope("fast")
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.Put(ctx, sc, n, strings.NewReader(n), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	names := filepath.Join(s.ScopeDir(sc), "names")
	slot := func(k int) string { return filepath.Join(names, fmt.Sprintf(".adk-name-slot-%d.reserve", k)) }
	// Another process claimed slot 4 for "orphan" and died.
	if err := os.WriteFile(slot(4), []byte(artifacts.NameHash("orphan")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, sc, "d", strings.NewReader("d"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(slot(5)); string(b) != artifacts.NameHash("d") {
		t.Fatalf("d took slot 5? it holds %q", b)
	}
	if _, err := s.Put(ctx, sc, "orphan", strings.NewReader("o"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(slot(6)); !os.IsNotExist(err) {
		t.Fatalf("the orphan's name took a new slot instead of its own: %v", err)
	}
	if _, err := s.Put(ctx, sc, "e", strings.NewReader("e"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(slot(6)); string(b) != artifacts.NameHash("e") {
		t.Fatalf("e should take slot 6, which holds %q", b)
	}
}

// TestOversizeAndGarbageRecords: a record file past the layout's 65,536
// bytes, or one that is not a record, is corrupt_artifact for every reader
// and never yields bytes; the listing of the scope reports it too.
func TestOversizeAndGarbageRecords(t *testing.T) {
	root := t.TempDir()
	s, _ := fsstore.Open(root, fsstore.Options{})
	ctx := context.Background()
	sc := artifacts.AppScope("records")
	for _, c := range []struct {
		name string
		meta []byte
	}{
		{"oversize", append([]byte{131}, make([]byte, 70000)...)},
		{"garbage", []byte("not a record")},
	} {
		if _, err := s.Put(ctx, sc, c.name, strings.NewReader("payload"), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.NameDir(sc, c.name), "v-1.meta"), c.meta, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(ctx, sc, c.name, artifacts.Latest); artifacts.CodeOf(err) != artifacts.CodeCorrupt {
			t.Errorf("%s: Stat: %v", c.name, err)
		}
		if _, err := s.Get(ctx, sc, c.name, 1); artifacts.CodeOf(err) != artifacts.CodeCorrupt {
			t.Errorf("%s: Get: %v", c.name, err)
		}
		if _, err := s.ListVersions(ctx, sc, c.name, artifacts.ListOptions{}); artifacts.CodeOf(err) != artifacts.CodeCorrupt {
			t.Errorf("%s: ListVersions: %v", c.name, err)
		}
		if _, err := s.Delete(ctx, sc, c.name, artifacts.Selector{Kind: artifacts.SelectLatest}); artifacts.CodeOf(err) != artifacts.CodeCorrupt {
			t.Errorf("%s: Delete: %v", c.name, err)
		}
	}
	if _, err := s.ListNames(ctx, sc, artifacts.ListOptions{}); artifacts.CodeOf(err) != artifacts.CodeCorrupt {
		t.Errorf("ListNames: %v", err)
	}
}
