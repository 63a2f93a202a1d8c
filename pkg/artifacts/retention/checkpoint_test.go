package retention_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/retention"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// TestPlanKeepsCheckpoints: a policy that prunes everything but the
// latest version of each name keeps every checkpoint manifest and every
// pack, each with its reason, and still prunes the other names.
func TestPlanKeepsCheckpoints(t *testing.T) {
	ctx := context.Background()
	s, err := fsstore.Open(t.TempDir(), fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(s)
	scope := artifacts.SessionScope("app", "u", "s")
	c, err := checkpoint.New(checkpoint.Options{Store: st, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	past := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var manifests []checkpoint.Ref
	for i, f := range []string{"a.txt", "b.txt", "c.txt"} {
		p := filepath.Join(dir, f)
		if err := os.WriteFile(p, []byte(strings.Repeat(f, i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Snapshot(ctx, root, checkpoint.SnapshotOptions{})
		root.Close()
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, res.Ref)
	}
	orphan, err := st.Put(ctx, scope, checkpoint.PackName, strings.NewReader("orphan"), artifacts.PutOptions{
		Metadata: artifacts.Metadata{checkpoint.MetaKind: "pack/1"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := st.Put(ctx, scope, "notes.txt", strings.NewReader("n"), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	p, err := retention.ComputePlan(ctx, st, retention.Options{Store: "/s", Policy: retention.Policy{KeepLast: 1}, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[int64]string{} // name: version: reason ("PRUNED" when pruned)
	for _, n := range p.Names {
		got[n.Name] = map[int64]string{}
		for _, v := range n.Kept {
			got[n.Name][v.Version] = v.Reason
		}
		for _, v := range n.Pruned {
			got[n.Name][v.Version] = "PRUNED"
		}
	}
	for _, m := range manifests {
		if r := got[m.Name][m.Version]; r != retention.ReasonCheckpointManifest {
			t.Errorf("manifest %v: %q, want kept as a checkpoint manifest", m, r)
		}
	}
	packs := got[checkpoint.PackName]
	if len(packs) != 4 {
		t.Fatalf("packs %v: want the 3 snapshots' and the orphan", packs)
	}
	// The first pack (a.txt) is used by all three manifests.
	if r := packs[1]; !strings.HasPrefix(r, retention.ReasonCheckpointPackUsed) || !strings.Contains(r, manifests[0].String()) || !strings.Contains(r, manifests[2].String()) {
		t.Errorf("pack 1: %q, want used by %v to %v", r, manifests[0], manifests[2])
	}
	if r := packs[orphan.Version]; r != retention.ReasonCheckpointPackUnused {
		t.Errorf("orphan pack: %q", r)
	}
	if got["notes.txt"][1] != "PRUNED" {
		t.Errorf("notes.txt v1: %q, want pruned (the policy still applies to other names)", got["notes.txt"][1])
	}
	for _, n := range p.Body().Prune {
		if checkpoint.IsFormatName(n.Name) {
			t.Errorf("the plan prunes %s %v", n.Name, n.Versions)
		}
	}
}
