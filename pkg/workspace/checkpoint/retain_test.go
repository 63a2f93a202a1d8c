package checkpoint_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// packRefs returns the packs the store holds.
func packRefs(t *testing.T, c *checkpoint.Checkpoints, m ...*checkpoint.Manifest) map[checkpoint.Ref]bool {
	t.Helper()
	out := map[checkpoint.Ref]bool{}
	for _, mm := range m {
		for _, p := range mm.Packs {
			out[p.Ref] = true
		}
	}
	return out
}

// TestRetention: only the newest MaxSnapshots manifests stay, with the
// packs they use; packs no manifest ever named are left alone.
func TestRetention(t *testing.T) {
	st := memStore(t, memstore.Options{})
	c := newCP(t, st, checkpoint.Options{MaxSnapshots: 3})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"keep": random(9, 1000)})
	for i := range 8 {
		write(t, dir, map[string][]byte{"f": random(uint64(i), 1000)}, past.Add(time.Duration(i)*time.Second))
		r := snap(t, c, dir)
		// The first pack holds "keep" too: it stays.
		if want := map[bool]int{true: 1, false: 2}[i == 3]; i >= 3 && len(r.Removed) != want {
			t.Errorf("snapshot %d removed %v: want %d (a manifest, and its pack unless in use)", i, r.Removed, want)
		}
	}
	refs, err := c.List(ctx(t))
	if err != nil || len(refs) != 3 {
		t.Fatalf("manifests %v, %v: want 3", refs, err)
	}
	var kept []*checkpoint.Manifest
	for _, r := range refs {
		m, err := c.Load(ctx(t), r)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, m)
		got, _ := restore(t, c, m)
		if len(tree(t, got)) != 2 {
			t.Errorf("%v does not restore", r)
		}
	}
	want := packRefs(t, c, kept...)
	u, err := c.Usage(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if u.Packs != len(want) || u.Manifests != 3 {
		t.Errorf("usage %+v: want 3 manifests and the %d packs they use", u, len(want))
	}
	if u.LiveBytes <= 0 || u.DeadBytes < 0 || u.StoredBytes != u.ManifestBytes+u.PackBytes {
		t.Errorf("usage %+v", u)
	}
}

// TestCompaction: when most of an older pack is dead, the next snapshot
// copies its live blobs forward; once the manifests that used the old
// pack age out, it is deleted, and the tree still restores.
func TestCompaction(t *testing.T) {
	st := memStore(t, memstore.Options{})
	c := newCP(t, st, checkpoint.Options{MaxSnapshots: 2})
	dir := t.TempDir()
	files := map[string][]byte{}
	for i := range 10 {
		files[fmt.Sprintf("f%d", i)] = random(uint64(i), 10_000)
	}
	write(t, dir, files)
	first := snap(t, c, dir)
	// 6 of 10 go: the first pack is 40% live.
	for i := range 6 {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("f%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	r := snap(t, c, dir)
	if r.Compacted != 1 || len(r.Manifest.Packs) != 1 || r.Manifest.Packs[0].Ref == first.Manifest.Packs[0].Ref {
		t.Fatalf("compaction: %+v, packs %v", r, r.Manifest.Packs)
	}
	if r.Manifest.Totals.DeadBytes != 0 {
		t.Errorf("dead bytes %d after compaction", r.Manifest.Totals.DeadBytes)
	}
	write(t, dir, map[string][]byte{"new": []byte("x")})
	r = snap(t, c, dir)
	if !slicesContain(r.Removed, first.Manifest.Packs[0].Ref) {
		t.Errorf("removed %v: the compacted pack %v should be gone", r.Removed, first.Manifest.Packs[0].Ref)
	}
	got, _ := restore(t, c, r.Manifest)
	sameTree(t, dir, got)
}

// TestNoCompaction: a negative CompactBelow keeps old packs in use.
func TestNoCompaction(t *testing.T) {
	st := memStore(t, memstore.Options{})
	c := newCP(t, st, checkpoint.Options{CompactBelow: -1})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"a": random(1, 10_000), "b": random(2, 10_000), "c": random(3, 10_000)})
	first := snap(t, c, dir)
	os.Remove(filepath.Join(dir, "a"))
	os.Remove(filepath.Join(dir, "b"))
	r := snap(t, c, dir)
	if r.Compacted != 0 || r.Manifest.Packs[0].Ref != first.Manifest.Packs[0].Ref || r.Manifest.Totals.DeadBytes == 0 {
		t.Fatalf("%+v, packs %v", r, r.Manifest.Packs)
	}
}

func slicesContain(refs []checkpoint.Ref, r checkpoint.Ref) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}
