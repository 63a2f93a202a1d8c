package checkpoint

import (
	"context"
	"errors"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// budget holds one snapshot to Options.MaxStoredBytes: the bytes of the
// scope's manifests and packs, this snapshot's included, plus
// Options.OtherBytes, never pass it, at any moment (a snapshot's packs
// and manifest are stored before its parent's can go, so the ceiling is
// on the peak, not on what retention leaves afterwards).
//
// Each Put of the snapshot (a pack, then the manifest) is admitted
// before it is sent. A Put that does not fit first frees what it can:
// packs no manifest names that are older than the repair grace period (a
// crashed or refused writer's), then the oldest checkpoints with the
// packs only they use, as few as make it fit and never the latest (the
// parent). When even that does not make it fit nothing older is deleted
// and the snapshot is refused with CodeQuotaExceeded; the packs it had
// already stored (a snapshot larger than one pack) are deleted again, so
// a refused snapshot leaves neither a checkpoint nor bytes behind.
type budget struct {
	c      *Checkpoints
	parent *Manifest
	// stored is the format's bytes in the scope, this snapshot's packs
	// left out (they are the packWriter's added).
	stored int64
	// hint is the expected size of this snapshot's manifest (its
	// parent's), reserved with every pack so that the manifest that must
	// follow them is not the Put refused.
	hint  int64
	freed []Ref
}

// newBudget returns the budget of a snapshot whose parent is the last of
// ls (every manifest), or nil when Options.MaxStoredBytes is not set.
func (c *Checkpoints) newBudget(ctx context.Context, ls []listed, parent *Manifest) (*budget, error) {
	if c.opts.MaxStoredBytes <= 0 {
		return nil, nil
	}
	ps, err := listGens(ctx, c.opts.Store, c.opts.Scope, PackName, kindPack)
	if err != nil {
		return nil, err
	}
	g := &budget{c: c, parent: parent}
	for _, l := range ls {
		g.stored += l.rec.Size
	}
	for _, l := range ps {
		g.stored += l.rec.Size
	}
	if len(ls) > 0 {
		g.hint = ls[len(ls)-1].rec.Size
	}
	return g, nil
}

// over returns by how many bytes a Put of need more bytes would pass the
// ceiling (<= 0: it fits).
func (g *budget) over(w *packWriter, need int64) int64 {
	return g.stored + w.added + g.c.opts.OtherBytes + need - g.c.opts.MaxStoredBytes
}

// fits reports, without freeing anything, whether n more bytes (and the
// manifest to follow) fit: whether compaction may copy n bytes of live
// blobs. Always true without a ceiling.
func (g *budget) fits(w *packWriter, n int64) bool {
	return g == nil || g.over(w, int64(w.buf.Len())+n+g.hint) <= 0
}

// admit lets a Put of n bytes go ahead, freeing what it must, or refuses
// it with CodeQuotaExceeded. last is true for the manifest (no manifest
// follows it); a pack reserves the manifest's expected size too.
func (g *budget) admit(ctx context.Context, w *packWriter, n int64, last bool) error {
	if g == nil {
		return nil
	}
	need := n
	if !last {
		need += g.hint
	}
	if g.over(w, need) <= 0 {
		return nil
	}
	if err := g.free(ctx, w, need); err != nil {
		return err
	}
	if g.over(w, need) <= 0 {
		return nil
	}
	have := g.stored + w.added + g.c.opts.OtherBytes
	e := artifacts.Errorf(artifacts.CodeQuotaExceeded, "checkpoint snapshot", nil,
		"the session's snapshots would hold %d bytes, over its store-bytes ceiling of %d: %d are stored (%d of them other artifacts of the session, %d this snapshot's packs) and this snapshot needs %d more; freeing older checkpoints (the latest is always kept) would not make it fit. Raise the ceiling (--ws-max-store-bytes) or make the workspace smaller",
		have+need, g.c.opts.MaxStoredBytes, have, g.c.opts.OtherBytes, w.added, need).With(g.c.opts.Scope, "", artifacts.NoVersion)
	e.Remaining = max(g.c.opts.MaxStoredBytes-have, 0)
	return e
}

// free deletes, while the Put of need bytes does not fit, the packs no
// manifest names past the repair grace period, then (only if that makes
// it fit) the oldest checkpoints through retention.
func (g *budget) free(ctx context.Context, w *packWriter, need int64) error {
	refs, err := ReadRefs(ctx, g.c.opts.Store, g.c.opts.Scope, g.c.opts.Limits)
	if err != nil {
		return err
	}
	ours := map[Ref]bool{}
	for _, p := range w.published {
		ours[p.Ref] = true
	}
	size := map[Ref]int64{}
	g.stored = 0
	for _, r := range refs.Manifests {
		size[Ref{r.Name, r.Version}] = r.Size
		g.stored += r.Size
	}
	for _, r := range refs.Packs {
		if ref := (Ref{r.Name, r.Version}); !ours[ref] {
			size[ref] = r.Size
			g.stored += r.Size
		}
	}
	now := g.c.opts.Now()
	for _, r := range refs.Unreferenced() {
		ref := Ref{r.Name, r.Version}
		if ours[ref] || now.Sub(r.Created()) < artifacts.DefaultRepairGrace {
			continue
		}
		if g.over(w, need) <= 0 {
			return nil
		}
		if err := g.c.deleteRef(ctx, ref); err != nil {
			return err
		}
		g.stored -= r.Size
		g.freed = append(g.freed, ref)
	}
	over := g.over(w, need)
	n := len(refs.Manifests)
	if over <= 0 || len(refs.Unread) > 0 || g.parent == nil || n < 2 {
		return nil
	}
	// newest[p] is the index of the newest manifest that names pack p:
	// dropping the manifests before it and it frees p.
	newest := map[Ref]int{}
	for i, r := range refs.Manifests {
		for _, p := range refs.Loaded[Ref{r.Name, r.Version}].Packs {
			newest[p.Ref] = i
		}
	}
	byLast := make([]int64, n)
	for p, i := range newest {
		byLast[i] += size[p]
	}
	drop, freed := 0, int64(0)
	for d := 1; d < n; d++ {
		freed += refs.Manifests[d-1].Size + byLast[d-1]
		if freed >= over {
			drop = d
			break
		}
	}
	if drop == 0 {
		return nil
	}
	ls, err := listGens(ctx, g.c.opts.Store, g.c.opts.Scope, ManifestName, kindManifest)
	if err != nil {
		return err
	}
	cc := *g.c
	cc.opts.MaxSnapshots = max(len(ls)-drop, 1)
	removed, err := cc.retain(ctx, ls, g.parent)
	for _, r := range removed {
		g.stored -= size[r]
	}
	g.freed = append(g.freed, removed...)
	return err
}

// deleteRef deletes one version; one already gone is not an error.
func (c *Checkpoints) deleteRef(ctx context.Context, r Ref) error {
	_, err := c.opts.Store.Delete(ctx, c.opts.Scope, r.Name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: r.Version})
	if artifacts.IsNotFound(err) {
		return nil
	}
	return err
}

// withdraw returns err, the error of a snapshot, after deleting the
// packs the snapshot stored when err refuses it for store bytes: no
// manifest names them, and left in place they would hold the bytes the
// ceiling refused until a repair.
func (b *builder) withdraw(ctx context.Context, err error) error {
	if b.w.budget == nil || artifacts.CodeOf(err) != artifacts.CodeQuotaExceeded {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	for _, p := range b.w.published {
		if derr := b.c.deleteRef(ctx, p.Ref); derr != nil {
			e := artifacts.Errorf(artifacts.CodeQuotaExceeded, "checkpoint snapshot", derr,
				"%s; deleting its pack %s again failed (a repair removes it after its grace period)", artifacts.ReasonOf(err), p.Ref).With(b.c.opts.Scope, p.Name, p.Version)
			var ae *artifacts.Error
			if errors.As(err, &ae) {
				e.Remaining = ae.Remaining
			}
			return e
		}
	}
	return err
}

// removed returns what the budget deleted to make room.
func (g *budget) removed() []Ref {
	if g == nil {
		return nil
	}
	return g.freed
}
