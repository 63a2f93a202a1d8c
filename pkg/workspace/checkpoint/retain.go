package checkpoint

import (
	"context"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// retain deletes the manifests before the newest Options.MaxSnapshots of
// ls (every manifest, oldest first, ours last-published among them), and
// then the packs those manifests used that no kept manifest uses. A pack
// no manifest ever named (a crashed or refused writer's) is never touched
// here: that is repair's, after its grace period.
//
// Which kept manifests use a pack is read from the oldest kept one and
// from m (ours): along a chain of manifests a pack is used by a run of
// consecutive manifests (a snapshot takes blobs only from its parent, and
// stores again a blob that its parent no longer has), so a pack the
// oldest kept manifest does not use is used by no later one. Kept
// manifests off the chain (a manifest whose predecessor is not its
// parent: a crashed writer's) are read too.
func (c *Checkpoints) retain(ctx context.Context, ls []listed, m *Manifest) ([]Ref, error) {
	drop := len(ls) - c.opts.MaxSnapshots
	if drop <= 0 {
		return nil, nil
	}
	old, kept := ls[:drop], ls[drop:]
	keep := map[Ref]bool{}
	for _, p := range m.Packs {
		keep[p.Ref] = true
	}
	for i, l := range kept {
		if i > 0 && kept[i-1].Ref.String() == l.parent {
			continue
		}
		km, err := c.Load(ctx, l.Ref)
		if err != nil {
			// Not knowing what it uses, keep every pack.
			return nil, err
		}
		for _, p := range km.Packs {
			keep[p.Ref] = true
		}
	}
	var removed []Ref
	cand := map[Ref]bool{}
	var order []Ref
	for _, l := range old {
		om, err := c.Load(ctx, l.Ref)
		if err == nil {
			for _, p := range om.Packs {
				if !keep[p.Ref] && !cand[p.Ref] {
					cand[p.Ref] = true
					order = append(order, p.Ref)
				}
			}
		} else if !artifacts.IsNotFound(err) && artifacts.CodeOf(err) != artifacts.CodeCorrupt {
			return removed, err
		}
		// Manifests go first: a manifest is never left naming a deleted pack.
		if _, err := c.opts.Store.Delete(ctx, c.opts.Scope, l.Name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: l.Version}); err != nil && !artifacts.IsNotFound(err) {
			return removed, err
		}
		removed = append(removed, l.Ref)
	}
	for _, r := range order {
		if _, err := c.opts.Store.Delete(ctx, c.opts.Scope, r.Name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: r.Version}); err != nil && !artifacts.IsNotFound(err) {
			return removed, err
		}
		removed = append(removed, r)
	}
	return removed, nil
}
