package quota

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// TestCheckpointUsage: a session scope with checkpoints reports their
// manifests, packs, stored, live and dead bytes (a pack no manifest names
// is dead); other scopes report none; a latest manifest that does not
// read is said, and its packs counted as dead.
func TestCheckpointUsage(t *testing.T) {
	ctx := context.Background()
	st := artifacts.NewStore(openFS(t, t.TempDir()))
	scope := artifacts.SessionScope("app", "u", "s")
	other := artifacts.SessionScope("app", "u", "t")
	if _, err := st.Put(ctx, other, "notes.txt", strings.NewReader("n"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := checkpoint.New(checkpoint.Options{Store: st, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	last := snapBodies(t, c, "first version", "second, longer version")
	if _, err := st.Put(ctx, scope, checkpoint.PackName, strings.NewReader("orphan"), artifacts.PutOptions{
		Metadata: artifacts.Metadata{checkpoint.MetaKind: "pack/1"}}); err != nil {
		t.Fatal(err)
	}
	row := func(r *Report, s artifacts.Scope) ScopeUsage {
		for _, sc := range r.Scopes {
			if sc.Scope != nil && *sc.Scope == s {
				return sc
			}
		}
		t.Fatalf("no row of %s", s)
		return ScopeUsage{}
	}

	r := compute(t, st, Options{})
	cu := row(r, scope).Checkpoints
	if cu == nil {
		t.Fatal("no checkpoint usage")
	}
	var live int64
	for _, b := range last.Manifest.Blobs {
		live += b.Length
	}
	if cu.Manifests != 2 || cu.Packs != 3 || cu.LiveBytes != live || cu.DeadBytes != cu.PackBytes-live ||
		cu.StoredBytes != cu.ManifestBytes+cu.PackBytes || cu.DeadBytes < int64(len("orphan")+len("first version")) {
		t.Errorf("usage %+v: want 2 manifests, 3 packs, %d live bytes and the orphan and first version dead", cu, live)
	}
	if sc := row(r, other); sc.Checkpoints != nil {
		t.Errorf("a scope without checkpoints reports %+v", sc.Checkpoints)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"checkpoints":{"manifests":2,"packs":3,`) {
		t.Errorf("JSON %s: want the checkpoints of the scope", b)
	}

	// A latest manifest that does not decode.
	if _, err := st.Put(ctx, scope, checkpoint.ManifestName, strings.NewReader("junk"), artifacts.PutOptions{
		Metadata: artifacts.Metadata{checkpoint.MetaKind: "manifest/1"}}); err != nil {
		t.Fatal(err)
	}
	r = compute(t, st, Options{})
	sc := row(r, scope)
	if sc.Checkpoints == nil || sc.Checkpoints.Manifests != 3 || sc.Checkpoints.LiveBytes != 0 ||
		sc.Checkpoints.DeadBytes != sc.Checkpoints.PackBytes || !strings.Contains(sc.CheckpointsProblem, "do not read") {
		t.Errorf("with a broken latest manifest: %+v, %q", sc.Checkpoints, sc.CheckpointsProblem)
	}
}

// snapBodies snapshots a tree of one file, f.txt, holding each body in
// turn (an hour apart, long in the past) and returns the last result.
func snapBodies(t *testing.T, c *checkpoint.Checkpoints, bodies ...string) checkpoint.Result {
	t.Helper()
	dir := t.TempDir()
	past := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var last checkpoint.Result
	for i, body := range bodies {
		p := filepath.Join(dir, "f.txt")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		at := past.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		last, err = c.Snapshot(context.Background(), root, checkpoint.SnapshotOptions{})
		root.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return last
}
