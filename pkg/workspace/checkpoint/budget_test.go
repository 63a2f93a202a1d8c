package checkpoint_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// usage returns the checkpoints' usage.
func usage(t *testing.T, c *checkpoint.Checkpoints) checkpoint.Usage {
	t.Helper()
	u, err := c.Usage(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestStoreBytesDropsOldest: under MaxStoredBytes, a snapshot that would
// pass the ceiling deletes the oldest checkpoints (as few as needed) and
// the store never holds more than the ceiling; the latest restores.
func TestStoreBytesDropsOldest(t *testing.T) {
	st := memStore(t, memstore.Options{})
	const ceiling = 50_000
	c := newCP(t, st, checkpoint.Options{MaxStoredBytes: ceiling})
	dir := t.TempDir()
	dropped := 0
	for i := range 6 {
		write(t, dir, map[string][]byte{"f": random(uint64(i), 20_000)}, past.Add(time.Duration(i)*time.Second))
		r := snap(t, c, dir)
		dropped += len(r.Removed)
		if u := usage(t, c); u.StoredBytes > ceiling {
			t.Fatalf("snapshot %d: %d bytes stored, over the ceiling of %d", i, u.StoredBytes, ceiling)
		}
		got, _ := restore(t, c, r.Manifest)
		sameTree(t, dir, got)
	}
	refs, err := c.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// Two checkpoints of 20 kB fit in 50 kB; a third does not.
	if len(refs) != 2 || dropped != 2*4 {
		t.Errorf("%d checkpoints left, %d versions dropped: want 2 left and 4 manifests with their packs dropped", len(refs), dropped)
	}
}

// TestStoreBytesRefused: a snapshot that cannot fit even with only the
// latest checkpoint kept is refused with CodeQuotaExceeded and the
// allowance left, before its pack is uploaded; no checkpoint is
// deleted for it, and the store is as it was.
func TestStoreBytesRefused(t *testing.T) {
	st := memStore(t, memstore.Options{})
	const ceiling = 50_000
	c := newCP(t, st, checkpoint.Options{MaxStoredBytes: ceiling})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"a": random(1, 10_000)})
	snap(t, c, dir)
	write(t, dir, map[string][]byte{"b": random(2, 10_000)})
	snap(t, c, dir)
	before := usage(t, c)
	write(t, dir, map[string][]byte{"a": random(3, 35_000)}, past.Add(time.Second))
	_, err := c.Snapshot(ctx(t), openRoot(t, dir), checkpoint.SnapshotOptions{})
	wantCode(t, err, artifacts.CodeQuotaExceeded)
	var ae *artifacts.Error
	if !errors.As(err, &ae) || ae.Remaining != ceiling-before.StoredBytes {
		t.Errorf("remaining: %v, want %d", err, ceiling-before.StoredBytes)
	}
	if !strings.Contains(err.Error(), "store-bytes ceiling of 50000") || !strings.Contains(err.Error(), "--ws-max-store-bytes") {
		t.Errorf("the refusal names neither the ceiling nor its setting: %v", err)
	}
	if after := usage(t, c); after != before {
		t.Errorf("usage %+v after the refusal, want %+v", after, before)
	}
	// The workspace shrinks: the next snapshot fits again.
	write(t, dir, map[string][]byte{"a": random(4, 5_000)}, past.Add(2*time.Second))
	r := snap(t, c, dir)
	got, _ := restore(t, c, r.Manifest)
	sameTree(t, dir, got)
}

// TestStoreBytesWithdrawsPacks: a snapshot of several packs refused at a
// later one deletes the packs it already stored: nothing is left of it.
func TestStoreBytesWithdrawsPacks(t *testing.T) {
	st := memStore(t, memstore.Options{})
	c := newCP(t, st, checkpoint.Options{MaxStoredBytes: 45_000, PackBytes: 16_000})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"seed": random(0, 1_000)})
	snap(t, c, dir)
	before := usage(t, c)
	files := map[string][]byte{}
	for i := range 6 {
		files[fmt.Sprintf("f%d", i)] = random(uint64(10+i), 10_000)
	}
	write(t, dir, files)
	_, err := c.Snapshot(ctx(t), openRoot(t, dir), checkpoint.SnapshotOptions{})
	wantCode(t, err, artifacts.CodeQuotaExceeded)
	if after := usage(t, c); after != before {
		t.Errorf("usage %+v after the refusal, want %+v: the packs stored before it were not deleted", after, before)
	}
}

// TestStoreBytesOtherBytes: the scope's other artifacts are charged.
func TestStoreBytesOtherBytes(t *testing.T) {
	st := memStore(t, memstore.Options{})
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"a": random(1, 10_000)})
	c := newCP(t, st, checkpoint.Options{MaxStoredBytes: 20_000, OtherBytes: 15_000})
	_, err := c.Snapshot(ctx(t), openRoot(t, dir), checkpoint.SnapshotOptions{})
	wantCode(t, err, artifacts.CodeQuotaExceeded)
	if !strings.Contains(err.Error(), "15000 of them other artifacts") {
		t.Errorf("the refusal does not say what the other artifacts hold: %v", err)
	}
	if u := usage(t, c); u.Packs != 0 || u.Manifests != 0 {
		t.Errorf("usage %+v after the refusal", u)
	}
	c = newCP(t, st, checkpoint.Options{MaxStoredBytes: 20_000, OtherBytes: 5_000})
	snap(t, c, dir)
}

// TestStoreBytesOrphanPacks: a pack no manifest names (a crashed
// writer's) is deleted to make room once it is past the repair grace
// period, never before.
func TestStoreBytesOrphanPacks(t *testing.T) {
	st := memStore(t, memstore.Options{})
	orphan, err := st.Put(ctx(t), scope, checkpoint.PackName, bytes.NewReader(random(99, 30_000)), artifacts.PutOptions{
		Metadata: artifacts.Metadata{checkpoint.MetaKind: "pack/1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, map[string][]byte{"a": random(1, 15_000)})
	young := newCP(t, st, checkpoint.Options{MaxStoredBytes: 40_000})
	_, err = young.Snapshot(ctx(t), openRoot(t, dir), checkpoint.SnapshotOptions{})
	wantCode(t, err, artifacts.CodeQuotaExceeded)
	if u := usage(t, young); u.Packs != 1 {
		t.Fatalf("usage %+v: the young orphan pack was deleted", u)
	}
	later := func() time.Time { return time.Now().Add(artifacts.DefaultRepairGrace + time.Minute) }
	old := newCP(t, st, checkpoint.Options{MaxStoredBytes: 40_000, Now: later})
	r := snap(t, old, dir)
	if !slicesContain(r.Removed, checkpoint.Ref{Name: orphan.Name, Version: orphan.Version}) {
		t.Errorf("removed %v: want the orphan pack %s v%d", r.Removed, orphan.Name, orphan.Version)
	}
	if u := usage(t, old); u.StoredBytes > 40_000 || u.Packs != 1 {
		t.Errorf("usage %+v", u)
	}
}

// TestStoreBytesSkipsCompaction: compaction that would pass the ceiling
// is skipped, not refused: the snapshot fits without it.
func TestStoreBytesSkipsCompaction(t *testing.T) {
	st := memStore(t, memstore.Options{})
	c := newCP(t, st, checkpoint.Options{MaxStoredBytes: 105_000})
	dir := t.TempDir()
	files := map[string][]byte{}
	for i := range 10 {
		files[fmt.Sprintf("f%d", i)] = random(uint64(i), 10_000)
	}
	write(t, dir, files)
	snap(t, c, dir)
	// 4 of 10 live: compaction would copy 40 kB, which does not fit.
	for i := range 6 {
		if err := os.Remove(filepath.Join(dir, fmt.Sprintf("f%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	r := snap(t, c, dir)
	if r.Compacted != 0 {
		t.Errorf("compacted %d packs past the ceiling", r.Compacted)
	}
	if u := usage(t, c); u.StoredBytes > 105_000 {
		t.Errorf("usage %+v over the ceiling", u)
	}
}
