package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// TestDeleteSessionCheckpoints: --with-artifacts deletes the manifests
// and packs of every generation of the session's checkpoints, manifests
// first (an interrupted delete never leaves a manifest naming a deleted
// pack), and nothing of another session's.
func TestDeleteSessionCheckpoints(t *testing.T) {
	ctx := context.Background()
	// 10 version numbers per name: 25 snapshots use three generations.
	d, err := memstore.New(memstore.Options{MaxScanEntries: 30})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(d)
	scope, other := scopeN(1), scopeN(2)
	dir := t.TempDir()
	past := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, sc := range []artifacts.Scope{scope, other} {
		c, err := checkpoint.New(checkpoint.Options{Store: st, Scope: sc})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 25 {
			p := filepath.Join(dir, "f")
			if err := os.WriteFile(p, []byte{byte(i), 1, 2}, 0o644); err != nil {
				t.Fatal(err)
			}
			at := past.Add(time.Duration(i) * time.Second)
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
			root, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Snapshot(ctx, root, checkpoint.SnapshotOptions{})
			root.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	o := SessionOptions{Scratch: t.TempDir(), Store: st, StoreURI: "memory:", Scope: scope, Now: fixedNow, WithArtifacts: true, AllowNumberReuse: true}
	rep, err := DeleteSession(ctx, o)
	var ce *ConfirmationError
	if !errors.As(err, &ce) {
		t.Fatalf("plan: %v", err)
	}
	var names []string
	for _, a := range rep.Plan.Artifacts {
		names = append(names, a.Name)
	}
	for _, want := range []string{"workspace.manifest.3", "workspace.pack.3"} {
		if !slices.Contains(names, want) {
			t.Fatalf("plan names %v: want every generation, %s among them", names, want)
		}
	}
	lastManifest := -1
	for i, n := range names {
		if _, ok := checkpoint.ParseGen(n, checkpoint.ManifestName); ok {
			lastManifest = i
		}
	}
	firstPack := slices.IndexFunc(names, func(n string) bool { _, ok := checkpoint.ParseGen(n, checkpoint.PackName); return ok })
	if firstPack < lastManifest {
		t.Errorf("plan order %v: a pack is deleted before a manifest", names)
	}
	o.Confirm = &SessionConfirmation{PlanID: rep.Plan.PlanID}
	if _, err := DeleteSession(ctx, o); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ListNames(ctx, scope, artifacts.ListOptions{}); !artifacts.IsNotFound(err) {
		t.Fatalf("artifacts left: %v", err)
	}
	c, err := checkpoint.New(checkpoint.Options{Store: st, Scope: other})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := c.Usage(ctx); err != nil || u.Manifests == 0 || u.Packs == 0 {
		t.Fatalf("the other session's checkpoints: %+v, %v", u, err)
	}
}
