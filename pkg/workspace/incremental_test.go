package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// clock is a settable clock for the store's records.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func clockStore(t *testing.T) (*artifacts.Store, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}
	d, err := memstore.New(memstore.Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return artifacts.NewStore(d), c
}

// TestIncrementalSnapshot: a workspace snapshotted incrementally says
// so, records the manifest in its index, writes nothing when unchanged,
// and a fresh scratch root hydrates it on first touch.
func TestIncrementalSnapshot(t *testing.T) {
	ctx := context.Background()
	st, _ := clockStore(t)
	scope := sessionScope("s1")
	m := newManager(t, st, Options{SnapshotFormat: FormatIncremental})
	w := mustOpen(t, m, scope)
	if err := w.Write(ctx, "a/b.txt", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "c.txt", []byte("world")); err != nil {
		t.Fatal(err)
	}
	r1, err := w.Snapshot(ctx, SnapshotOptions{Turn: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Format != FormatIncremental || r1.Checkpoint.Name != checkpoint.ManifestName || r1.Files != 2 || r1.Unchanged {
		t.Fatalf("first snapshot: %+v", r1)
	}
	if ix := w.Index(); ix.SnapshotFormat() != FormatIncremental || ix.SnapshotName != checkpoint.ManifestName || ix.SnapshotVersion != r1.Version {
		t.Errorf("index %+v", ix)
	}
	r2, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil || !r2.Unchanged || r2.Checkpoint != r1.Checkpoint {
		t.Fatalf("second snapshot: %+v, %v", r2, err)
	}
	if _, err := st.Stat(ctx, scope, SnapshotName, artifacts.Latest); !artifacts.IsNotFound(err) {
		t.Errorf("a zip was written: %v", err)
	}
	m2 := newManager(t, st, Options{})
	w2 := mustOpen(t, m2, scope)
	got := readTree(t, w2.Path())
	if got["a/b.txt"].Data != "hello" || got["c.txt"].Data != "world" || len(got) != 3 {
		t.Errorf("hydrated tree %v", got)
	}
	if ix := w2.Index(); ix.SnapshotFormat() != FormatIncremental || ix.SnapshotVersion != r1.Version {
		t.Errorf("hydrated index %+v", ix)
	}
}

// TestHydrateNewestFormat: hydration takes the newer of the latest zip
// and the latest manifest, by their records' times, and says which.
func TestHydrateNewestFormat(t *testing.T) {
	ctx := context.Background()
	st, clk := clockStore(t)
	scope := sessionScope("s1")
	m := newManager(t, st, Options{})
	w := mustOpen(t, m, scope)
	steps := []struct {
		format SnapshotFormat
		data   string
	}{
		{FormatZip, "zip 1"},
		{FormatIncremental, "incremental 2"},
		{FormatZip, "zip 3"},
	}
	for _, s := range steps {
		if err := w.Write(ctx, "f", []byte(s.data)); err != nil {
			t.Fatal(err)
		}
		res, err := w.Snapshot(ctx, SnapshotOptions{Format: s.format})
		if err != nil || res.Format != s.format {
			t.Fatalf("snapshot %s: %+v, %v", s.format, res, err)
		}
		clk.add(time.Second)
		dir := filepath.Join(t.TempDir(), "h")
		h, err := m.HydrateTo(ctx, scope, artifacts.Latest, dir, HydrateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if h.Format != s.format {
			t.Errorf("after a %s snapshot, hydration read %s", s.format, h.Format)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != s.data {
			t.Errorf("after a %s snapshot, hydrated %q", s.format, b)
		}
	}
}

// TestAutoFormat: auto writes a zip below the threshold and incremental
// snapshots from it on.
func TestAutoFormat(t *testing.T) {
	ctx := context.Background()
	st, _ := clockStore(t)
	m := newManager(t, st, Options{SnapshotFormat: FormatAuto, AutoThreshold: 100})
	w := mustOpen(t, m, sessionScope("s1"))
	w.Write(ctx, "small", make([]byte, 99))
	if r, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil || r.Format != FormatZip {
		t.Fatalf("99 bytes: %+v, %v", r, err)
	}
	w.Write(ctx, "more", make([]byte, 1))
	if r, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil || r.Format != FormatIncremental {
		t.Fatalf("100 bytes: %+v, %v", r, err)
	}
	if _, err := w.Snapshot(ctx, SnapshotOptions{Format: "tar"}); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Errorf("format tar: %v", err)
	}
}

// TestHydrateIncrementalOverwrite: hydrating an incremental snapshot over
// work no snapshot holds is refused (nothing changed) unless forced.
func TestHydrateIncrementalOverwrite(t *testing.T) {
	ctx := context.Background()
	st, _ := clockStore(t)
	scope := sessionScope("s1")
	m := newManager(t, st, Options{SnapshotFormat: FormatIncremental})
	w := mustOpen(t, m, scope)
	w.Write(ctx, "f", []byte("saved"))
	if _, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	// The snapshot's own tree hydrates without Force.
	if _, err := w.Hydrate(ctx, artifacts.Latest, HydrateOptions{}); err != nil {
		t.Fatalf("hydrate of the saved tree: %v", err)
	}
	w.Write(ctx, "f", []byte("unsaved"))
	w.Write(ctx, "g", []byte("new"))
	_, err := w.Hydrate(ctx, artifacts.Latest, HydrateOptions{})
	var oe *OverwriteError
	if !errors.As(err, &oe) || oe.Total != 2 {
		t.Fatalf("hydrate over unsaved work: %v", err)
	}
	if got := readTree(t, w.Path()); got["f"].Data != "unsaved" || got["g"].Data != "new" {
		t.Errorf("the refused hydration changed the tree: %v", got)
	}
	res, err := w.Hydrate(ctx, artifacts.Latest, HydrateOptions{Force: true})
	if err != nil || res.Format != FormatIncremental {
		t.Fatalf("forced: %+v, %v", res, err)
	}
	if got := readTree(t, w.Path()); got["f"].Data != "saved" || len(got) != 1 {
		t.Errorf("forced hydration: %v", got)
	}
}

// TestCheckpointAPI: history, a diff against the workspace on disk, and
// chosen paths of an older checkpoint restored into a new directory.
func TestCheckpointAPI(t *testing.T) {
	ctx := context.Background()
	st, _ := clockStore(t)
	scope := sessionScope("s1")
	m := newManager(t, st, Options{SnapshotFormat: FormatIncremental})
	w := mustOpen(t, m, scope)
	w.Write(ctx, "a/one", []byte("1"))
	w.Write(ctx, "b", []byte("b"))
	r1, err := w.Snapshot(ctx, SnapshotOptions{Turn: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(ctx, "a/one", []byte("one"))
	if _, err := w.Snapshot(ctx, SnapshotOptions{Turn: "t2"}); err != nil {
		t.Fatal(err)
	}
	w.Write(ctx, "c", []byte("unsaved"))
	cp, err := m.Checkpoints(scope)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := cp.History(ctx)
	if err != nil || len(hist) != 2 || hist[0].Turn != "t1" || hist[1].Changed != 1 {
		t.Fatalf("history %+v, %v", hist, err)
	}
	changes, err := m.DiffCheckpoint(ctx, scope, checkpoint.Ref{})
	if err != nil || len(changes) != 1 || changes[0].Path != "c" || changes[0].Kind != checkpoint.Added {
		t.Fatalf("diff against the workspace: %+v, %v", changes, err)
	}
	dir := filepath.Join(t.TempDir(), "old")
	res, err := m.HydrateTo(ctx, scope, artifacts.Latest, dir, HydrateOptions{Checkpoint: r1.Checkpoint, Paths: []string{"a/one"}})
	if err != nil || res.Format != FormatIncremental || res.Checkpoint != r1.Checkpoint {
		t.Fatalf("restore of a/one at %v: %+v, %v", r1.Checkpoint, res, err)
	}
	if got := readTree(t, dir); len(got) != 2 || got["a/one"].Data != "1" {
		t.Errorf("restored %v", got)
	}
	_, err = w.Hydrate(ctx, artifacts.Latest, HydrateOptions{Paths: []string{"a"}, Force: true})
	wantCode(t, err, artifacts.CodeInvalidArgument)
	if _, err := m.HydrateTo(ctx, scope, artifacts.Latest, filepath.Join(t.TempDir(), "x"), HydrateOptions{Checkpoint: r1.Checkpoint, Paths: []string{"nope"}}); artifacts.CodeOf(err) != artifacts.CodeNotFound {
		t.Errorf("restore of a missing path: %v", err)
	}
}

// TestZipPathsRefused: a zip snapshot is never restored in part, and a
// call asking for chosen paths from one is refused, not served whole.
func TestZipPathsRefused(t *testing.T) {
	ctx := context.Background()
	st, _ := clockStore(t)
	scope := sessionScope("s1")
	m := newManager(t, st, Options{})
	w := mustOpen(t, m, scope)
	w.Write(ctx, "a", []byte("a"))
	if _, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "x")
	_, err := m.HydrateTo(ctx, scope, artifacts.Latest, dir, HydrateOptions{Paths: []string{"a"}})
	wantCode(t, err, artifacts.CodeInvalidArgument)
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused call made %s", dir)
	}
}

// TestAutoFormatPastZipCeiling: once the zip's name has used the last of
// its layout's version numbers (VERSION_CAPACITY; 3,333 on erlang-fs, 10
// here), auto writes incremental snapshots of a small tree instead of
// failing every snapshot from then on, and hydration reads the newest.
// An explicit zip snapshot still says VERSION_CAPACITY.
func TestAutoFormatPastZipCeiling(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}
	d, err := memstore.New(memstore.Options{Now: clk.now, MaxScanEntries: 30})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(d)
	capacity := st.Capabilities().VersionCapacity()
	scope := sessionScope("s1")
	m := newManager(t, st, Options{SnapshotFormat: FormatAuto})
	w := mustOpen(t, m, scope)
	for i := range capacity + 5 {
		data := fmt.Sprintf("write %d", i)
		if err := w.Write(ctx, "f", []byte(data)); err != nil {
			t.Fatal(err)
		}
		res, err := w.Snapshot(ctx, SnapshotOptions{})
		if err != nil {
			t.Fatalf("snapshot %d (the zip holds %d versions at most): %v", i+1, capacity, err)
		}
		want := FormatZip
		if i >= capacity {
			want = FormatIncremental
		}
		if res.Format != want {
			t.Fatalf("snapshot %d: format %s, want %s", i+1, res.Format, want)
		}
		clk.add(time.Second)
		dir := filepath.Join(t.TempDir(), "h")
		h, err := m.HydrateTo(ctx, scope, artifacts.Latest, dir, HydrateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != data || h.Format != want {
			t.Fatalf("after snapshot %d, hydration read %q from a %s snapshot", i+1, b, h.Format)
		}
	}
	w.Write(ctx, "f", []byte("explicit zip"))
	_, err = w.Snapshot(ctx, SnapshotOptions{Format: FormatZip})
	wantCode(t, err, artifacts.CodeVersionCapacity)
}
