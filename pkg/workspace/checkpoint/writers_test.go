package checkpoint_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// hooked is a real driver with a function run before each Put of a
// manifest: the point where another writer can get in.
type hooked struct {
	artifacts.Driver
	mu        sync.Mutex
	beforePut func()
	// afterPutRec runs once after a manifest Put, with its record.
	afterPutRec func(artifacts.Record)
	// hidden versions are left out of listings: reserved, not yet
	// published.
	hidden map[checkpoint.Ref]bool
}

func (h *hooked) ListVersions(ctx context.Context, s artifacts.Scope, name string, o artifacts.ListOptions) (artifacts.VersionPage, error) {
	p, err := h.Driver.ListVersions(ctx, s, name, o)
	h.mu.Lock()
	defer h.mu.Unlock()
	p.Items = slices.DeleteFunc(p.Items, func(r artifacts.Record) bool { return h.hidden[checkpoint.Ref{Name: r.Name, Version: r.Version}] })
	return p, err
}

func (h *hooked) Put(ctx context.Context, s artifacts.Scope, name string, r io.Reader, o artifacts.PutOptions) (artifacts.Record, error) {
	var before func()
	var after func(artifacts.Record)
	if _, ok := checkpoint.ParseGen(name, checkpoint.ManifestName); ok {
		h.mu.Lock()
		before, after = h.beforePut, h.afterPutRec
		h.beforePut, h.afterPutRec = nil, nil
		h.mu.Unlock()
	}
	if before != nil {
		before()
	}
	rec, err := h.Driver.Put(ctx, s, name, r, o)
	if after != nil && err == nil {
		after(rec)
	}
	return rec, err
}

// TestConflict: a writer whose parent was overtaken while it worked (the
// other writer published in between) gets CodeConflict, its manifest is
// withdrawn, its packs are left for repair, and the other's snapshot is
// the latest.
func TestConflict(t *testing.T) {
	d, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &hooked{Driver: d}
	st := artifacts.NewStore(h)
	a := newCP(t, st, checkpoint.Options{})
	b := newCP(t, st, checkpoint.Options{})
	dirA, dirB := t.TempDir(), t.TempDir()
	write(t, dirA, map[string][]byte{"f": []byte("base")})
	base := snap(t, a, dirA)
	write(t, dirA, map[string][]byte{"f": []byte("from A")}, past.Add(time.Hour))
	write(t, dirB, map[string][]byte{"f": []byte("from B, longer")})

	var bres checkpoint.Result
	var berr error
	h.beforePut = func() { bres, berr = b.Snapshot(ctx(t), openRoot(t, dirB), checkpoint.SnapshotOptions{}) }
	_, err = a.Snapshot(ctx(t), openRoot(t, dirA), checkpoint.SnapshotOptions{})
	wantCode(t, err, artifacts.CodeConflict)
	if berr != nil || *bres.Manifest.Parent != base.Ref {
		t.Fatalf("the writer that got in first: %+v, %v", bres, berr)
	}
	refs, err := a.List(ctx(t))
	if err != nil || len(refs) != 2 || refs[1] != bres.Ref {
		t.Fatalf("manifests %v, %v: want the base and B's", refs, err)
	}
	// A's pack is still there (repair's after its grace period).
	u, err := a.Usage(ctx(t))
	if err != nil || u.Packs != 3 {
		t.Fatalf("usage %+v, %v: want 3 packs (base, A's, B's)", u, err)
	}
	// A tries again, on B's snapshot, and succeeds.
	r := snap(t, a, dirA)
	if *r.Manifest.Parent != bres.Ref {
		t.Fatalf("retry's parent %v, want %v", r.Manifest.Parent, bres.Ref)
	}
}

// TestConflictSibling: a writer whose manifest took its number first but
// became visible only after another writer on the same parent published
// and checked (as a layout that reserves a number before it publishes
// the record allows) is refused: it sees a sibling. Without that rule
// both would succeed.
func TestConflictSibling(t *testing.T) {
	d, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &hooked{Driver: d, hidden: map[checkpoint.Ref]bool{}}
	st := artifacts.NewStore(h)
	a := newCP(t, st, checkpoint.Options{})
	b := newCP(t, st, checkpoint.Options{})
	dirA, dirB := t.TempDir(), t.TempDir()
	write(t, dirA, map[string][]byte{"f": []byte("base")})
	base := snap(t, a, dirA)
	write(t, dirA, map[string][]byte{"f": []byte("from A")}, past.Add(time.Hour))
	write(t, dirB, map[string][]byte{"f": []byte("from B, longer")})
	var ares checkpoint.Result
	var aerr error
	h.afterPutRec = func(rec artifacts.Record) {
		// B's manifest has its number but is not visible yet: A runs
		// whole meanwhile.
		r := checkpoint.Ref{Name: rec.Name, Version: rec.Version}
		h.mu.Lock()
		h.hidden[r] = true
		h.mu.Unlock()
		ares, aerr = a.Snapshot(ctx(t), openRoot(t, dirA), checkpoint.SnapshotOptions{})
		h.mu.Lock()
		delete(h.hidden, r)
		h.mu.Unlock()
	}
	_, berr := b.Snapshot(ctx(t), openRoot(t, dirB), checkpoint.SnapshotOptions{})
	if aerr != nil || *ares.Manifest.Parent != base.Ref {
		t.Fatalf("the writer that published first: %+v, %v", ares, aerr)
	}
	wantCode(t, berr, artifacts.CodeConflict)
	refs, err := a.List(ctx(t))
	if err != nil || len(refs) != 2 || refs[1] != ares.Ref {
		t.Fatalf("manifests %v, %v: want the base and A's", refs, err)
	}
}

// TestRacingWriters: two writers with their own trees snapshot one scope
// of a filesystem store at once, many times. Every snapshot reported
// published is in the chain, each manifest's parent is the one before
// it, and the refused ones say CodeConflict.
func TestRacingWriters(t *testing.T) {
	root := t.TempDir()
	open := func() *artifacts.Store {
		s, err := fsstore.Open(root, fsstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return artifacts.NewStore(s)
	}
	const rounds = 15
	var mu sync.Mutex
	var won []checkpoint.Ref
	var wg sync.WaitGroup
	for w := range 2 {
		c := newCP(t, open(), checkpoint.Options{MaxSnapshots: 1000})
		dir := t.TempDir()
		wg.Go(func() {
			for i := range rounds {
				write(t, dir, map[string][]byte{"f": fmt.Appendf(nil, "writer %d round %d", w, i)}, past.Add(time.Duration(w)*time.Hour+time.Duration(i)*time.Second))
				res, err := c.Snapshot(context.Background(), openRoot(t, dir), checkpoint.SnapshotOptions{})
				if err != nil {
					t.Logf("writer %d round %d: %v", w, i, err)
					if artifacts.CodeOf(err) != artifacts.CodeConflict {
						t.Errorf("writer %d: %v", w, err)
					}
					continue
				}
				if res.Unchanged {
					t.Errorf("writer %d round %d: unchanged", w, i)
				}
				mu.Lock()
				won = append(won, res.Ref)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	c := newCP(t, open(), checkpoint.Options{})
	hist, err := c.History(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != len(won) {
		for _, r := range hist {
			t.Logf("listed %v parent %v", r.Ref, r.Parent)
		}
		t.Logf("won %v", won)
		t.Fatalf("%d manifests for %d snapshots reported published", len(hist), len(won))
	}
	for i, row := range hist {
		if i == 0 && row.Parent != nil || i > 0 && *row.Parent != hist[i-1].Ref {
			t.Errorf("manifest %v has parent %v after %v", row.Ref, row.Parent, hist[max(i-1, 0)].Ref)
		}
	}
	if len(won) == 0 {
		t.Fatal("no writer succeeded")
	}
}
