package workspace

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
)

// TestHydrateInPlaceOrCopied: a snapshot the store holds in memory (small)
// or in a file that cannot change (the filesystem store) is verified and
// then extracted in place; one the store can only stream (a large payload
// of the memory store) is copied to the temporary archive as it is
// verified. Either way the hydration holds a locked file in the scratch
// root while it runs (empty when in place), restores the tree exactly,
// and leaves nothing behind; a payload whose bytes do not match its record
// is refused before anything is replaced.
func TestHydrateInPlaceOrCopied(t *testing.T) {
	ctx := context.Background()
	large := make([]byte, artifacts.SmallPayloadBytes+(256<<10)) // stored: incompressible
	if _, err := rand.Read(large); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		mem     bool
		big     bool
		corrupt bool
		inPlace bool
	}{
		{name: "fs, small", inPlace: true},
		{name: "fs, large", big: true, inPlace: true},
		{name: "fs, large, corrupt", big: true, corrupt: true},
		{name: "fs, small, corrupt", corrupt: true},
		{name: "memory, small", mem: true, inPlace: true},
		{name: "memory, large", mem: true, big: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var st *artifacts.Store
			var fs *fsstore.Store
			if c.mem {
				ms, err := memstore.New(memstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				st = artifacts.NewStore(ms)
			} else {
				fs = newStore(t, fsstore.Options{})
				st = artifacts.NewStore(fs)
			}
			m := newManager(t, st, Options{Policy: SnapshotManual})
			scope := sessionScope("inplace")
			w := mustOpen(t, m, scope)
			mustWriteFile(t, filepath.Join(w.Path(), "a", "text.md"), "# text\n", 0o600)
			if c.big {
				mustWriteFile(t, filepath.Join(w.Path(), "blob.bin"), string(large), 0o600)
			}
			snap, err := w.Snapshot(ctx, SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if big := snap.Record.Size > artifacts.SmallPayloadBytes; big != c.big {
				t.Fatalf("snapshot of %d bytes: large %v, want %v", snap.Record.Size, big, c.big)
			}
			want := readTree(t, w.Path())
			mustWriteFile(t, filepath.Join(w.Path(), "a", "text.md"), "# changed since\n", 0o600)
			if c.corrupt {
				p := filepath.Join(fs.NameDir(scope, SnapshotName), fsstore.VersionFile(snap.Version, "data"))
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)/2] ^= 1 // same size, other bytes
				if err := os.WriteFile(p, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := scratchNames(t, m.Scratch())
			beforeTree := readTree(t, w.Path())
			archives := 0
			res, err := w.Hydrate(ctx, snap.Version, HydrateOptions{Force: true, Progress: func(int, int64) {
				if archives > 0 {
					return
				}
				ents, err := os.ReadDir(m.Scratch())
				if err != nil {
					t.Error(err)
					return
				}
				for _, e := range ents {
					if dir, kind, ok := debrisOf(e.Name()); ok && kind == DebrisArchive {
						archives++
						if dir != w.Dir() || !m.archiveHeld(e.Name()) {
							t.Errorf("archive %s: directory %q, held %v", e.Name(), dir, m.archiveHeld(e.Name()))
						}
						fi, err := e.Info()
						if err != nil {
							t.Fatal(err)
						}
						if got := fi.Size() == 0; got != c.inPlace {
							t.Errorf("archive of %d bytes: in place %v, want %v", fi.Size(), got, c.inPlace)
						}
					}
				}
			}})
			if c.corrupt {
				wantCode(t, err, artifacts.CodeCorrupt)
				if after := scratchNames(t, m.Scratch()); !reflect.DeepEqual(after, before) {
					t.Fatalf("a refused hydration changed the scratch root: %q, was %q", after, before)
				}
				if got := readTree(t, w.Path()); !reflect.DeepEqual(got, beforeTree) {
					t.Fatal("a refused hydration changed the workspace")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if archives != 1 {
				t.Errorf("saw %d archives in the scratch root while extracting, want 1", archives)
			}
			if res.Version != snap.Version || res.Record.Digest != snap.Record.Digest {
				t.Errorf("hydrated v%d %s, want v%d %s", res.Version, res.Record.Digest, snap.Version, snap.Record.Digest)
			}
			if got := readTree(t, w.Path()); !reflect.DeepEqual(got, want) {
				t.Fatalf("hydrated tree %v, want %v", keys(got), keys(want))
			}
			if after := scratchNames(t, m.Scratch()); !reflect.DeepEqual(after, before) {
				t.Fatalf("the scratch root holds %q after the hydration, %q before", after, before)
			}
		})
	}
}

// scratchNames lists the names in the scratch root.
func scratchNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
