package fsstore_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// TestListNamesCacheFollowsChanges lists a scope whose directories are old
// enough to be remembered, then changes it through another Store (as
// another process would) and lists again through the first.
func TestListNamesCacheFollowsChanges(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	a, _ := fsstore.Open(root, fsstore.Options{})
	b, _ := fsstore.Open(root, fsstore.Options{})
	sc := artifacts.AppScope("cache")
	for _, n := range []string{"x", "y", "z"} {
		if _, err := a.Put(ctx, sc, n, strings.NewReader(n), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	age := func() {
		for _, n := range []string{"x", "y", "z"} {
			if err := os.Chtimes(a.NameDir(sc, n), old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	age()
	versions := func() map[string]int {
		page, err := a.ListNames(ctx, sc, artifacts.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, it := range page.Items {
			m[it.Name] = it.Versions
			if it.Latest.Version == 0 || it.Latest.Name != it.Name {
				t.Fatalf("bad latest record %+v", it.Latest)
			}
		}
		return m
	}
	if got := versions(); len(got) != 3 || got["x"] != 1 {
		t.Fatalf("first listing %v", got)
	}
	versions() // served from what was remembered
	if _, err := b.Put(ctx, sc, "x", strings.NewReader("x2"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Delete(ctx, sc, "y", artifacts.Selector{Kind: artifacts.SelectAll}); err != nil {
		t.Fatal(err)
	}
	got := versions()
	if len(got) != 2 || got["x"] != 2 || got["y"] != 0 {
		t.Fatalf("after a put and a delete elsewhere: %v", got)
	}
	page, _ := a.ListNames(ctx, sc, artifacts.ListOptions{})
	if page.Items[0].Latest.Version != 2 {
		t.Fatalf("latest of x is v%d", page.Items[0].Latest.Version)
	}
	// Metadata handed out is a copy.
	page.Items[0].Latest.Metadata["mutated"] = true
	page, _ = a.ListNames(ctx, sc, artifacts.ListOptions{})
	if _, ok := page.Items[0].Latest.Metadata["mutated"]; ok {
		t.Fatal("a caller's change to a listed record reached the store")
	}
}
