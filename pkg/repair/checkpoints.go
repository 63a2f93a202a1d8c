package repair

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// ReasonUnreferencedPack is the reason given for removing a pack of the
// incremental snapshot format that no manifest names.
const ReasonUnreferencedPack = "checkpoint pack no manifest names (a crashed or refused snapshot's), older than the grace period"

// packPlan is the checkpoint part of a repair: the packs no manifest
// names that are older than the grace period, by scope.
type packPlan struct {
	scopes []artifacts.Scope
	packs  map[artifacts.Scope][]artifacts.Record
	items  []Item
	young  int64
	notes  []string
}

// planPacks finds, in every session scope of st, the checkpoint packs
// (pkg/workspace/checkpoint) no manifest names and that are older than
// the grace period. A scope with a manifest that does not read keeps
// every pack (which it uses is not known), and a note says so; a store
// that cannot list its scopes gets a note and no plan.
func planPacks(ctx context.Context, st *artifacts.Store, opts Options) (packPlan, error) {
	p := packPlan{packs: map[artifacts.Scope][]artifacts.Record{}}
	scopes, err := st.ListScopes(ctx)
	if artifacts.CodeOf(err) == artifacts.CodeUnsupported {
		p.notes = append(p.notes, "checkpoint packs were not looked at: the store cannot list its scopes")
		return p, nil
	}
	if err != nil {
		return p, err
	}
	grace := opts.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	grace = max(grace, 0)
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	t := now()
	slices.SortFunc(scopes, compareScopes)
	for _, scope := range scopes {
		if scope.Kind != artifacts.KindSession {
			continue
		}
		refs, err := checkpoint.ReadRefs(ctx, st, scope, zipsafe.Limits{})
		if err != nil {
			if ctx.Err() != nil {
				return p, err
			}
			p.notes = append(p.notes, fmt.Sprintf("%s: its names do not list, so its checkpoint packs (if any) were not looked at: %s", scope, artifacts.ReasonOf(err)))
			continue
		}
		if len(refs.Packs) == 0 {
			continue
		}
		if len(refs.Unread) > 0 {
			p.notes = append(p.notes, fmt.Sprintf("%s: %d checkpoint manifests do not read, so no pack of the scope is removed (run fs verify)", scope, len(refs.Unread)))
			continue
		}
		for _, rec := range refs.Unreferenced() {
			age := t.Sub(rec.Created())
			if age < grace {
				p.young++
				continue
			}
			if len(p.packs[scope]) == 0 {
				p.scopes = append(p.scopes, scope)
			}
			p.packs[scope] = append(p.packs[scope], rec)
			it := artifacts.NewRepairItem(checkpoint.Ref{Name: rec.Name, Version: rec.Version}.String(), ReasonUnreferencedPack, age, rec.Size)
			s := scope
			it.Scope, it.Name = &s, rec.Name
			p.items = append(p.items, it)
		}
	}
	return p, nil
}

// add puts the plan into a report (of a dry run or of what was done).
func (p packPlan) add(rep *Report, items []Item, skipped []Item) {
	rep.Young += p.young
	rep.Removed += int64(len(items))
	rep.RemovedItems = append(rep.RemovedItems, items...)
	rep.SkippedItems = append(rep.SkippedItems, skipped...)
	rep.Notes = append(rep.Notes, p.notes...)
}

// execute removes the planned packs, scope by scope, each only when the
// scope's manifests (read again right before) still name none of them
// and the version is still the one planned. It returns the items removed
// and those left alone.
func (p packPlan) execute(ctx context.Context, st *artifacts.Store) (removed, skipped []Item, err error) {
	byRef := map[string]Item{}
	for _, it := range p.items {
		byRef[it.Scope.String()+" "+it.Path] = it
	}
	for _, scope := range p.scopes {
		refs, err := checkpoint.ReadRefs(ctx, st, scope, zipsafe.Limits{})
		if err != nil {
			return removed, skipped, err
		}
		still := map[checkpoint.Ref]bool{}
		for _, rec := range refs.Unreferenced() {
			still[checkpoint.Ref{Name: rec.Name, Version: rec.Version}] = true
		}
		for _, rec := range p.packs[scope] {
			ref := checkpoint.Ref{Name: rec.Name, Version: rec.Version}
			it := byRef[scope.String()+" "+ref.String()]
			if !still[ref] {
				it.Reason = "a manifest names it now, or it is gone; left alone"
				skipped = append(skipped, it)
				continue
			}
			_, err := st.DeleteExact(ctx, scope, rec.Name, []artifacts.VersionRef{rec.Ref()})
			switch {
			case artifacts.IsNotFound(err) || artifacts.CodeOf(err) == artifacts.CodeConflict:
				it.Reason = "changed or gone since the plan; left alone"
				skipped = append(skipped, it)
			case err != nil:
				return removed, skipped, err
			default:
				removed = append(removed, it)
			}
		}
	}
	return removed, skipped, nil
}

func compareScopes(a, b artifacts.Scope) int {
	if a.String() < b.String() {
		return -1
	}
	if a.String() > b.String() {
		return 1
	}
	return 0
}
