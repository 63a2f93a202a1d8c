package checkpoint_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// putManifest publishes m as a new manifest version, as a writer would.
func putManifest(t *testing.T, st *artifacts.Store, m *checkpoint.Manifest) checkpoint.Ref {
	t.Helper()
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.Put(ctx(t), scope, checkpoint.ManifestName, bytes.NewReader(b), artifacts.PutOptions{
		MIMEType: checkpoint.ManifestMIMEType, Metadata: artifacts.Metadata{checkpoint.MetaKind: "manifest/1"}})
	if err != nil {
		t.Fatal(err)
	}
	return checkpoint.Ref{Name: rec.Name, Version: rec.Version}
}

// TestVerifyRefs: a manifest naming a deleted pack, one recording the
// wrong size of its pack and one that does not decode are findings naming
// the manifest and the files they break; intact checkpoints are not.
func TestVerifyRefs(t *testing.T) {
	st := memStore(t, memstore.Options{})
	c := newCP(t, st, checkpoint.Options{})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"a.txt": []byte("a"), "d/b.txt": []byte("b")})
	r1 := snap(t, c, dir)
	refs, err := checkpoint.ReadRefs(ctx(t), st, scope, zipsafe.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if f, err := refs.Verify(ctx(t), st); err != nil || len(f) != 0 {
		t.Fatalf("intact checkpoints: findings %+v, %v", f, err)
	}

	// A manifest recording a pack 10 bytes longer than it is.
	long := *r1.Manifest
	long.Packs = slices.Clone(long.Packs)
	long.Packs[0].Size += 10
	longRef := putManifest(t, st, &long)
	// A manifest that does not decode.
	garbage, err := st.Put(ctx(t), scope, checkpoint.ManifestName, strings.NewReader("not zstd"), artifacts.PutOptions{
		Metadata: artifacts.Metadata{checkpoint.MetaKind: "manifest/1"}})
	if err != nil {
		t.Fatal(err)
	}
	// The first snapshot's pack deleted.
	pack := r1.Manifest.Packs[0].Ref
	if _, err := st.Delete(ctx(t), scope, pack.Name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: pack.Version}); err != nil {
		t.Fatal(err)
	}

	refs, err = checkpoint.ReadRefs(ctx(t), st, scope, zipsafe.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs.Manifests) != 3 || len(refs.Loaded) != 2 || len(refs.Unread) != 1 {
		t.Fatalf("refs: %d manifests, %d loaded, %d unread; want 3, 2, 1", len(refs.Manifests), len(refs.Loaded), len(refs.Unread))
	}
	if u := refs.Unreferenced(); u != nil {
		t.Errorf("unreferenced packs %v with a manifest unread: want none known", u)
	}
	got, err := refs.Verify(ctx(t), st)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		manifest checkpoint.Ref
		pack     bool
		reason   string
	}{
		{r1.Ref, true, "pack " + pack.String() + " is missing"},
		{longRef, true, "pack " + pack.String() + " is missing"},
		{checkpoint.Ref{Name: garbage.Name, Version: garbage.Version}, false, "the manifest does not read"},
	}
	if len(got) != len(want) {
		t.Fatalf("findings %+v: want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Manifest != w.manifest || (g.Pack != nil) != w.pack || !strings.HasPrefix(g.Reason, w.reason) || g.Code != artifacts.CodeCorrupt {
			t.Errorf("finding %d: %+v, want manifest %v, a pack %v, reason %q", i, g, w.manifest, w.pack, w.reason)
		}
		if w.pack && (!slices.Equal(g.Paths, []string{"a.txt", "d/b.txt"}) || g.PathCount != 2) {
			t.Errorf("finding %d: paths %v (%d), want a.txt and d/b.txt", i, g.Paths, g.PathCount)
		}
	}

	// A size mismatch alone, on a store whose pack is there.
	st2 := memStore(t, memstore.Options{})
	c2 := newCP(t, st2, checkpoint.Options{})
	r2 := snap(t, c2, dir)
	long2 := *r2.Manifest
	long2.Packs = slices.Clone(long2.Packs)
	long2.Packs[0].Size += 10
	putManifest(t, st2, &long2)
	refs2, err := checkpoint.ReadRefs(ctx(t), st2, scope, zipsafe.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, err = refs2.Verify(ctx(t), st2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(got[0].Reason, "the manifest recorded") || got[0].PathCount != 2 {
		t.Fatalf("findings %+v: want one size mismatch breaking 2 files", got)
	}
}

// TestUnreferenced: a pack no manifest names (a crashed writer's) is
// unreferenced; the packs of manifests are not.
func TestUnreferenced(t *testing.T) {
	st := memStore(t, memstore.Options{})
	c := newCP(t, st, checkpoint.Options{})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"a.txt": []byte("a")})
	r := snap(t, c, dir)
	orphan, err := st.Put(ctx(t), scope, checkpoint.PackName, strings.NewReader("orphan"), artifacts.PutOptions{
		Metadata: artifacts.Metadata{checkpoint.MetaKind: "pack/1"}})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := checkpoint.ReadRefs(ctx(t), st, scope, zipsafe.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	u := refs.Unreferenced()
	if len(u) != 1 || u[0].Version != orphan.Version {
		t.Fatalf("unreferenced %v: want only version %d", u, orphan.Version)
	}
	if users := refs.Users(r.Manifest.Packs[0].Ref); !slices.Equal(users, []checkpoint.Ref{r.Ref}) {
		t.Errorf("users of %v: %v, want %v", r.Manifest.Packs[0].Ref, users, r.Ref)
	}
}
