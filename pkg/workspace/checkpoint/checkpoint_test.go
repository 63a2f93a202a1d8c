package checkpoint_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// TestConformance runs the format over every layout: a first snapshot
// of a tree with small, empty, executable and chunked files, an empty
// directory and a symbolic link (omitted); an unchanged snapshot that
// writes nothing; a change that reads one file and stores its blobs
// only; a restore of each that gives the tree back.
func TestConformance(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.name, func(t *testing.T) {
			st := d.new(t)
			c := newCP(t, st, checkpoint.Options{})
			dir := t.TempDir()
			big := random(1, 3<<20)
			write(t, dir, map[string][]byte{
				"a.txt":         []byte("hello"),
				"empty":         nil,
				"sub/deep/b.md": []byte("# b\n"),
				"sub/big.bin":   big,
			})
			if err := os.Mkdir(filepath.Join(dir, "nothing"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			r1 := snap(t, c, dir)
			if r1.Unchanged || r1.ReadFiles != 4 || r1.Manifest.Seq != 1 || r1.Manifest.Parent != nil {
				t.Fatalf("first snapshot: %+v", r1)
			}
			if want := []checkpoint.Omission{{Path: "link", Kind: "symlink"}}; !slices.Equal(r1.Manifest.Omitted, want) {
				t.Errorf("omitted %v, want %v", r1.Manifest.Omitted, want)
			}
			for _, e := range r1.Manifest.Entries {
				if e.Path == "sub/big.bin" && len(e.Blobs) < 2 {
					t.Errorf("the 3 MiB file is %d blob: not chunked", len(e.Blobs))
				}
			}
			got, _ := restore(t, c, r1.Manifest)
			sameTree(t, dir, got)

			r2 := snap(t, c, dir)
			if !r2.Unchanged || r2.Ref != r1.Ref || r2.ReadFiles != 0 {
				t.Fatalf("second snapshot of an unchanged tree: %+v", r2)
			}
			refs, err := c.List(ctx(t))
			if err != nil || len(refs) != 1 {
				t.Fatalf("List = %v, %v; want one manifest", refs, err)
			}

			write(t, dir, map[string][]byte{"sub/deep/b.md": []byte("# b, changed\n")})
			r3 := snap(t, c, dir)
			if r3.Unchanged || r3.ReadFiles != 1 || r3.Manifest.Seq != 2 || *r3.Manifest.Parent != r1.Ref {
				t.Fatalf("third snapshot: %+v", r3)
			}
			if r3.AddedBytes <= 0 || r3.AddedBytes > 1024 {
				t.Errorf("a 13-byte change stored %d bytes", r3.AddedBytes)
			}
			ref, m, err := c.Latest(ctx(t))
			if err != nil || ref != r3.Ref {
				t.Fatalf("Latest = %v, %v; want %v", ref, err, r3.Ref)
			}
			got, _ = restore(t, c, m)
			sameTree(t, dir, got)
			// The first checkpoint still restores as it was.
			m1, err := c.Load(ctx(t), r1.Ref)
			if err != nil {
				t.Fatal(err)
			}
			got, _ = restore(t, c, m1, "sub/deep")
			if tr := tree(t, got); string(tr["sub/deep/b.md"]) != "# b\n" || len(tr) != 3 {
				t.Errorf("restore of sub/deep from the first checkpoint: %v", tr)
			}
		})
	}
}

// TestAppend: a file that grew keeps its parent's blobs and stores only
// what follows them; many tiny appends are merged again.
func TestAppend(t *testing.T) {
	st := memStore(t, memstore.Options{})
	c := newCP(t, st, checkpoint.Options{MaxSnapshots: 1000})
	dir := t.TempDir()
	content := random(2, 1<<20)
	write(t, dir, map[string][]byte{"log": content})
	snap(t, c, dir)
	for i := range 40 {
		content = append(content, byte(i))
		write(t, dir, map[string][]byte{"log": content}, past.Add(time.Duration(i+1)*time.Second))
		r := snap(t, c, dir)
		if r.AddedBytes > 64<<10 {
			t.Fatalf("append %d stored %d bytes", i, r.AddedBytes)
		}
		if n := len(r.Manifest.Entries[0].Blobs); n > 2+32 {
			t.Fatalf("append %d: the file is %d blobs: tiny blobs are not merged", i, n)
		}
	}
	u, err := c.Usage(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if u.PackBytes > 1<<20+256<<10 {
		t.Errorf("40 one-byte appends to a 1 MiB file: packs hold %d bytes", u.PackBytes)
	}
	_, m, err := c.Latest(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := restore(t, c, m)
	sameTree(t, dir, got)
}

// TestRollover: on a layout with small lifetime ceilings, manifests and
// packs move to new generations before their names run out, and after a
// name another writer filled (CodeVersionCapacity).
func TestRollover(t *testing.T) {
	// 15 names per scope, 10 version numbers per name.
	st := memStore(t, memstore.Options{MaxScanEntries: 30})
	c := newCP(t, st, checkpoint.Options{MaxSnapshots: 5})
	// Another writer fills the first pack name but one number.
	for range 9 {
		if _, err := st.Put(ctx(t), scope, checkpoint.PackName, bytes.NewReader(nil), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	for i := range 25 {
		write(t, dir, map[string][]byte{"f": random(uint64(i), 100)}, past.Add(time.Duration(i)*time.Second))
		r := snap(t, c, dir)
		if r.Manifest.Seq != int64(i+1) {
			t.Fatalf("snapshot %d has seq %d", i, r.Manifest.Seq)
		}
	}
	refs, err := c.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 5 || refs[4].Name != checkpoint.GenName(checkpoint.ManifestName, 3) {
		t.Fatalf("manifests %v: want the 5 newest, the last in generation 3", refs)
	}
	_, m, err := c.Latest(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := checkpoint.ParseGen(m.Packs[0].Name, checkpoint.PackName); g != 4 {
		t.Errorf("the latest pack is %s: want generation 4 (1 filled by another writer, 2 and 3 by 25 snapshots)", m.Packs[0].Ref)
	}
	got, _ := restore(t, c, m)
	sameTree(t, dir, got)
	// Every pack left is one a kept manifest uses.
	u, err := c.Usage(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if u.Manifests != 5 || u.Packs != 5 {
		t.Errorf("usage %+v: want 5 manifests and their 5 packs", u)
	}
}

// TestRolloverOnCapacityError: a pack name another writer filled to the
// last number is left for the next generation when Put says so.
func TestRolloverOnCapacityError(t *testing.T) {
	st := memStore(t, memstore.Options{MaxScanEntries: 30})
	for range 10 {
		if _, err := st.Put(ctx(t), scope, checkpoint.PackName, bytes.NewReader(nil), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c := newCP(t, st, checkpoint.Options{})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"f": []byte("x")})
	r := snap(t, c, dir)
	if r.Manifest.Packs[0].Name != checkpoint.PackName+".2" {
		t.Fatalf("pack %v: want generation 2", r.Manifest.Packs[0].Ref)
	}
}
