package quota

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// TestSnapshotUsage: a session's snapshot row counts its checkpoints,
// unreferenced packs and bytes against --ws-max-snapshots and
// --ws-max-store-bytes; with zip snapshots, a workspace.zip near the
// layout's largest payload or near its version ceiling warns, naming the
// way out; with auto (incremental above a size) it does not.
func TestSnapshotUsage(t *testing.T) {
	ctx := context.Background()
	fst, err := fsstore.Open(t.TempDir(), fsstore.Options{MaxArtifactBytes: 10_000, MaxScanEntries: 30})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(fst)
	big := artifacts.SessionScope("app", "u", "big-zip")
	many := artifacts.SessionScope("app", "u", "many-zips")
	inc := artifacts.SessionScope("app", "u", "incremental")
	put := func(s artifacts.Scope, name string, n int, md artifacts.Metadata) {
		t.Helper()
		if _, err := st.Put(ctx, s, name, strings.NewReader(strings.Repeat("z", n)), artifacts.PutOptions{Metadata: md}); err != nil {
			t.Fatal(err)
		}
	}
	put(big, workspace.SnapshotName, 9_000, nil)
	for range 9 {
		put(many, workspace.SnapshotName, 10, nil)
	}
	c, err := checkpoint.New(checkpoint.Options{Store: st, Scope: inc})
	if err != nil {
		t.Fatal(err)
	}
	snapBodies(t, c, "one", "two, longer")
	put(inc, checkpoint.PackName, 50, artifacts.Metadata{checkpoint.MetaKind: "pack/1"})
	put(inc, "report.csv", 100, nil)

	rows := func(r *Report) map[string]SnapshotUsage {
		out := map[string]SnapshotUsage{}
		for _, s := range r.Snapshots {
			out[s.Scope.Session] = s
		}
		return out
	}
	r := compute(t, st, Options{SnapshotFormat: workspace.FormatZip, MaxSnapshots: 5, MaxStoreBytes: 100_000})
	got := rows(r)
	if len(got) != 3 || r.SnapshotsTotal != 3 {
		t.Fatalf("snapshot rows %+v: want 3", r.Snapshots)
	}
	b := got["big-zip"]
	if b.Format != "zip" || b.BindingLimit != LimitPayload || b.UsagePercent != 90 || !b.Warn || !strings.Contains(b.Warning, "--snapshot-format incremental") {
		t.Errorf("big zip: %+v", b)
	}
	m := got["many-zips"]
	if m.BindingLimit != LimitReservations || m.ZipReservations != 9 || m.ReservationCapacity != 10 || !m.Warn || !strings.Contains(m.Warning, "9 of its 10 version numbers") {
		t.Errorf("many zips: %+v", m)
	}
	i := got["incremental"]
	if i.Format != "incremental" || i.Checkpoints != 2 || i.SnapshotHeadroom != 3 || i.UnreferencedPacks != 1 || i.UnreferencedBytes != 50 ||
		i.BindingLimit != LimitStoreBytes || i.Warn || i.Warning != "" || i.MaxStoreBytes != 100_000 || i.StoreHeadroom != 100_000-i.StoredBytes ||
		i.StoredBytes != i.CheckpointBytes+100 || i.LiveBytes <= 0 || i.DeadBytes < 50 {
		t.Errorf("incremental: %+v", i)
	}
	if r.Snapshots[0].Scope != big || r.Warnings < 2 {
		t.Errorf("order %v, %d warnings: want the big zip first and both zips warned", r.Snapshots, r.Warnings)
	}
	j, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"snapshots":[`, `"unreferenced_packs":1`, `"store_headroom":`, `"snapshot_headroom":3`, `"binding_limit":"payload"`} {
		if !strings.Contains(string(j), k) {
			t.Errorf("JSON lacks %s", k)
		}
	}

	// Auto: a zip stops nothing, the store-bytes ceiling binds.
	r = compute(t, st, Options{MaxStoreBytes: 10_000})
	for _, s := range r.Snapshots {
		if s.BindingLimit != LimitStoreBytes || (s.Warn != (s.UsagePercent >= 80)) {
			t.Errorf("auto: %+v", s)
		}
	}
	if got := rows(r)["big-zip"]; !got.Warn || !strings.Contains(got.Warning, "--ws-max-store-bytes") {
		t.Errorf("a session at 90%% of its store-bytes ceiling: %+v", got)
	}
	// No limit at all: nothing is judged.
	r = compute(t, st, Options{})
	for _, s := range r.Snapshots {
		if s.Warn || s.StoreHeadroom != -1 || s.MaxSnapshots != checkpoint.DefaultMaxSnapshots {
			t.Errorf("without limits: %+v", s)
		}
	}
}

// TestZipWorkspaceCeiling: with zip snapshots a workspace is measured
// against the layout's largest payload (a zip is one), not 4 GiB, unless
// --ws-max-bytes says otherwise; other formats keep the default.
func TestZipWorkspaceCeiling(t *testing.T) {
	ctx := context.Background()
	fst, err := fsstore.Open(t.TempDir(), fsstore.Options{MaxArtifactBytes: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(fst)
	scratch := t.TempDir()
	m, err := workspace.New(workspace.Options{Scratch: scratch})
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Open(ctx, artifacts.SessionScope("app", "u", "s"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "data.bin", []byte(strings.Repeat("x", 9_000))); err != nil {
		t.Fatal(err)
	}
	m.Close()
	r := compute(t, st, Options{Scratch: scratch, SnapshotFormat: workspace.FormatZip})
	if len(r.Workspaces) != 1 || r.Workspaces[0].MaxBytes != 10_000 || r.Workspaces[0].UsagePercent != 90 || !r.Workspaces[0].Warn {
		t.Errorf("zip: %+v", r.Workspaces)
	}
	r = compute(t, st, Options{Scratch: scratch, SnapshotFormat: workspace.FormatZip, WorkspaceLimits: WorkspaceLimits{MaxBytes: 1 << 20}})
	if r.Workspaces[0].MaxBytes != 1<<20 || r.Workspaces[0].Warn {
		t.Errorf("zip with --ws-max-bytes: %+v", r.Workspaces)
	}
	r = compute(t, st, Options{Scratch: scratch})
	if r.Workspaces[0].MaxBytes != DefaultWorkspaceLimits().MaxBytes || r.Workspaces[0].Warn {
		t.Errorf("auto: %+v", r.Workspaces)
	}
}
