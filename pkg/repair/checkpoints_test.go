package repair_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/repair"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

var ckScope = artifacts.SessionScope("app", "user-1", "session-1")

// checkpointStore returns a filesystem store whose session ckScope holds
// one checkpoint of a.txt and d/b.txt, and that checkpoint.
func checkpointStore(t *testing.T) (*artifacts.Store, checkpoint.Result) {
	t.Helper()
	s, err := fsstore.Open(t.TempDir(), fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(s)
	dir := t.TempDir()
	for p, b := range map[string]string{"a.txt": "a", "d/b.txt": "b"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := checkpoint.New(checkpoint.Options{Store: st, Scope: ckScope})
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	res, err := c.Snapshot(context.Background(), root, checkpoint.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st, res
}

func deleteVersion(t *testing.T, st *artifacts.Store, ref checkpoint.Ref) {
	t.Helper()
	if _, err := st.Delete(context.Background(), ckScope, ref.Name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: ref.Version}); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyCheckpoints: a manifest naming a deleted pack is a broken
// checkpoint naming the manifest and the paths it breaks; intact ones
// are counted and not listed.
func TestVerifyCheckpoints(t *testing.T) {
	st, res := checkpointStore(t)
	ctx := context.Background()
	rep, err := repair.Verify(ctx, st, repair.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Checkpoints != 1 || rep.BrokenCheckpoints != 0 || rep.Corrupt != 0 {
		t.Fatalf("intact: %d checkpoints, %d broken, %d corrupt; want 1, 0, 0", rep.Checkpoints, rep.BrokenCheckpoints, rep.Corrupt)
	}
	pack := res.Manifest.Packs[0].Ref
	deleteVersion(t, st, pack)
	rep, err = repair.Verify(ctx, st, repair.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BrokenCheckpoints != 1 || len(rep.CheckpointItems) != 1 {
		t.Fatalf("broken checkpoints %d %+v: want 1", rep.BrokenCheckpoints, rep.CheckpointItems)
	}
	it := rep.CheckpointItems[0]
	if it.Scope != ckScope || it.Manifest != res.Ref || it.Pack == nil || *it.Pack != pack ||
		it.Code != artifacts.CodeCorrupt || !strings.Contains(it.Reason, "is missing") ||
		!slices.Equal(it.Paths, []string{"a.txt", "d/b.txt"}) {
		t.Errorf("item %+v: want %v naming missing %v and a.txt, d/b.txt", it, res.Ref, pack)
	}
	// A manifest that does not decode (its bytes match its record).
	if _, err := st.Put(ctx, ckScope, checkpoint.ManifestName, strings.NewReader("junk"), artifacts.PutOptions{
		Metadata: artifacts.Metadata{checkpoint.MetaKind: "manifest/1"}}); err != nil {
		t.Fatal(err)
	}
	rep, err = repair.Verify(ctx, st, repair.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BrokenCheckpoints != 2 || rep.CheckpointItems[1].Pack != nil || rep.Corrupt != 0 {
		t.Errorf("with an undecodable manifest: %+v", rep.CheckpointItems)
	}
}

// TestRepairUnreferencedPacks: a pack no manifest names is kept while
// younger than the grace period (and listed nowhere but the young count),
// removed past it, with the dry run listing it and changing nothing;
// packs a manifest names are never removed.
func TestRepairUnreferencedPacks(t *testing.T) {
	st, res := checkpointStore(t)
	ctx := context.Background()
	orphan, err := st.Put(ctx, ckScope, checkpoint.PackName, strings.NewReader("orphan"), artifacts.PutOptions{
		Metadata: artifacts.Metadata{checkpoint.MetaKind: "pack/1"}})
	if err != nil {
		t.Fatal(err)
	}
	orphanRef := checkpoint.Ref{Name: orphan.Name, Version: orphan.Version}
	exists := func(ref checkpoint.Ref) bool {
		_, err := st.Stat(ctx, ckScope, ref.Name, ref.Version)
		if err != nil && !artifacts.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	packItems := func(items []repair.Item) []string {
		var out []string
		for _, it := range items {
			if it.Reason == repair.ReasonUnreferencedPack {
				out = append(out, it.Path)
			}
		}
		return out
	}

	// Young: kept.
	rep, err := repair.Run(ctx, st, repair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := packItems(rep.RemovedItems); len(got) != 0 || rep.Young != 1 || !exists(orphanRef) {
		t.Fatalf("young orphan: removed %v, young %d; want it kept", got, rep.Young)
	}

	later := func() time.Time { return time.Now().Add(time.Hour) }
	// Old, dry run: listed, kept.
	rep, err = repair.Run(ctx, st, repair.Options{Now: later, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := packItems(rep.RemovedItems); !slices.Equal(got, []string{orphanRef.String()}) || !exists(orphanRef) {
		t.Fatalf("dry run: would remove %v, want %v, and nothing removed", got, orphanRef)
	}
	if it := rep.RemovedItems[0]; it.Scope == nil || *it.Scope != ckScope || it.Name != orphan.Name || it.Size != 6 {
		t.Errorf("dry-run item %+v", it)
	}
	// Old: removed; the checkpoint's own pack stays.
	rep, err = repair.Run(ctx, st, repair.Options{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if got := packItems(rep.RemovedItems); !slices.Equal(got, []string{orphanRef.String()}) || exists(orphanRef) {
		t.Fatalf("removed %v, want %v gone", got, orphanRef)
	}
	if !exists(res.Manifest.Packs[0].Ref) || !exists(res.Ref) {
		t.Fatalf("the checkpoint's manifest or pack was removed")
	}
	v, err := repair.Verify(ctx, st, repair.VerifyOptions{})
	if err != nil || v.BrokenCheckpoints != 0 || v.Corrupt != 0 {
		t.Fatalf("verify after repair: %+v, %v", v, err)
	}
}

// TestRepairUnreadableManifest: while a manifest of the scope does not
// decode, no pack of the scope is removed, and a note says why.
func TestRepairUnreadableManifest(t *testing.T) {
	st, _ := checkpointStore(t)
	ctx := context.Background()
	orphan, err := st.Put(ctx, ckScope, checkpoint.PackName, strings.NewReader("orphan"), artifacts.PutOptions{
		Metadata: artifacts.Metadata{checkpoint.MetaKind: "pack/1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, ckScope, checkpoint.ManifestName, strings.NewReader("junk"), artifacts.PutOptions{
		Metadata: artifacts.Metadata{checkpoint.MetaKind: "manifest/1"}}); err != nil {
		t.Fatal(err)
	}
	rep, err := repair.Run(ctx, st, repair.Options{Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, ckScope, orphan.Name, orphan.Version); err != nil {
		t.Fatalf("orphan pack removed with a manifest unread: %v", err)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "do not read") }) {
		t.Errorf("notes %q: want one saying the manifests do not read", rep.Notes)
	}
}
