package checkpoint_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// TestRestorePaths restores chosen files and directories with the
// directories above them, and refuses a path the snapshot lacks.
func TestRestorePaths(t *testing.T) {
	c := newCP(t, memStore(t, memstore.Options{}), checkpoint.Options{})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"a/b/c.txt": []byte("c"), "a/d.txt": []byte("d"), "e/f.txt": []byte("f"), "g": []byte("g")})
	r := snap(t, c, dir)
	cases := []struct {
		paths []string
		want  []string
	}{
		{[]string{"a/b/c.txt"}, []string{"a/", "a/b/", "a/b/c.txt"}},
		{[]string{"a"}, []string{"a/", "a/b/", "a/b/c.txt", "a/d.txt"}},
		{[]string{"g", "e/"}, []string{"e/", "e/f.txt", "g"}},
	}
	for _, tc := range cases {
		got, st := restore(t, c, r.Manifest, tc.paths...)
		var names []string
		for p := range tree(t, got) {
			names = append(names, p)
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.want) {
			t.Errorf("restore %v: %v, want %v", tc.paths, names, tc.want)
		}
		if st.Reads != 1 || st.Packs != 1 {
			t.Errorf("restore %v: %d reads of %d packs, want 1 of 1", tc.paths, st.Reads, st.Packs)
		}
	}
	for _, bad := range []string{"nope", "../g", "/g"} {
		dst := t.TempDir()
		_, err := c.Restore(ctx(t), r.Manifest, openRoot(t, dst), checkpoint.RestoreOptions{Paths: []string{bad}})
		wantCode(t, err, artifacts.CodeNotFound)
		if ents, _ := os.ReadDir(dst); len(ents) != 0 {
			t.Errorf("restore of %q wrote %v", bad, ents)
		}
	}
}

// TestRestoreCorruptBlob: a pack whose bytes no longer match the blob
// ids (on a layout that keeps no digest of its payloads) is refused
// before any byte of the blob is written.
func TestRestoreCorruptBlob(t *testing.T) {
	root := t.TempDir()
	s, err := adkfile.Open(root, adkfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newCP(t, artifacts.NewStore(s), checkpoint.Options{})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"x": []byte("precious content")})
	r := snap(t, c, dir)
	// Damage the pack in place, keeping its size, as a fault below the
	// store would.
	var packFile string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(p)))) == checkpoint.PackName {
			packFile = p
		}
		return nil
	})
	if packFile == "" {
		t.Fatal("no pack file found")
	}
	b, err := os.ReadFile(packFile)
	if err != nil {
		t.Fatal(err)
	}
	b[0] ^= 1
	if err := os.WriteFile(packFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	_, err = c.Restore(ctx(t), r.Manifest, openRoot(t, dst), checkpoint.RestoreOptions{})
	wantCode(t, err, artifacts.CodeCorrupt)
	if got, err := os.ReadFile(filepath.Join(dst, "x")); err == nil && len(got) != 0 {
		t.Errorf("the damaged blob landed: %q", got)
	}
}

// TestHistoryDiff: one history row per snapshot with what changed, and
// diffs between manifests and against a tree on disk.
func TestHistoryDiff(t *testing.T) {
	c := newCP(t, memStore(t, memstore.Options{}), checkpoint.Options{})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"a": []byte("1"), "b": []byte("22")})
	r1, err := c.Snapshot(ctx(t), openRoot(t, dir), checkpoint.SnapshotOptions{Turn: "turn-1"})
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, map[string][]byte{"b": []byte("333"), "c/d": []byte("4444")}, past.Add(time.Hour))
	os.Remove(filepath.Join(dir, "a"))
	r2, err := c.Snapshot(ctx(t), openRoot(t, dir), checkpoint.SnapshotOptions{Turn: "turn-2"})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := c.History(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 {
		t.Fatalf("history %+v", hist)
	}
	h1, h2 := hist[0], hist[1]
	if h1.Ref != r1.Ref || h1.Turn != "turn-1" || h1.Added != 2 || h1.Files != 2 || h1.Bytes != 3 || h1.AddedBytes <= 0 {
		t.Errorf("row 1: %+v", h1)
	}
	if h2.Ref != r2.Ref || h2.Turn != "turn-2" || h2.Added != 2 || h2.Changed != 1 || h2.Removed != 1 || *h2.Parent != r1.Ref {
		t.Errorf("row 2: %+v", h2)
	}
	want := []checkpoint.Change{
		{Path: "a", Kind: checkpoint.Removed, Type: checkpoint.TypeFile, OldSize: 1},
		{Path: "b", Kind: checkpoint.Modified, Type: checkpoint.TypeFile, OldSize: 2, NewSize: 3},
		{Path: "c", Kind: checkpoint.Added, Type: checkpoint.TypeDir},
		{Path: "c/d", Kind: checkpoint.Added, Type: checkpoint.TypeFile, NewSize: 4},
	}
	if got := checkpoint.Diff(r1.Manifest, r2.Manifest); !slices.Equal(got, want) {
		t.Errorf("Diff = %+v\nwant %+v", got, want)
	}
	// Against the tree: the same content with a new time is no change; a
	// new content of the same size is.
	write(t, dir, map[string][]byte{"b": []byte("333")}, past.Add(2*time.Hour))
	write(t, dir, map[string][]byte{"c/d": []byte("5555")}, past.Add(2*time.Hour))
	got, err := c.DiffTree(ctx(t), r2.Manifest, openRoot(t, dir), checkpoint.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []checkpoint.Change{{Path: "c/d", Kind: checkpoint.Modified, Type: checkpoint.TypeFile, OldSize: 4, NewSize: 4}}; !slices.Equal(got, want) {
		t.Errorf("DiffTree = %+v, want %+v", got, want)
	}
	// DiffTree stored nothing.
	if u, _ := c.Usage(ctx(t)); u.Packs != 2 {
		t.Errorf("DiffTree stored packs: %+v", u)
	}
}

// TestExclude: what Exclude leaves out is neither stored nor listed.
func TestExclude(t *testing.T) {
	c := newCP(t, memStore(t, memstore.Options{}), checkpoint.Options{})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{".index": []byte("mine"), "a": []byte("agent's")})
	r, err := c.Snapshot(ctx(t), openRoot(t, dir), checkpoint.SnapshotOptions{Exclude: func(rel string, _ os.DirEntry) bool { return rel == ".index" }})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Manifest.Entries) != 1 || r.Manifest.Entries[0].Path != "a" || len(r.Manifest.Omitted) != 0 {
		t.Errorf("entries %+v, omitted %v", r.Manifest.Entries, r.Manifest.Omitted)
	}
}

// TestTreeLimits: a tree past the limits is refused before anything is
// published.
func TestTreeLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts checkpoint.Options
	}{
		{"entries", checkpoint.Options{Limits: zipLimits(2, 0)}},
		{"bytes", checkpoint.Options{Limits: zipLimits(0, 5)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCP(t, memStore(t, memstore.Options{}), tc.opts)
			dir := t.TempDir()
			write(t, dir, map[string][]byte{"a": []byte("123"), "b": []byte("456"), "c": []byte("789")})
			_, err := c.Snapshot(ctx(t), openRoot(t, dir), checkpoint.SnapshotOptions{})
			wantCode(t, err, artifacts.CodeQuotaExceeded)
			if u, _ := c.Usage(ctx(t)); u.Manifests != 0 {
				t.Errorf("a manifest was published: %+v", u)
			}
		})
	}
}
