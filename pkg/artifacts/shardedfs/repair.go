package shardedfs

import (
	"context"
	"slices"
	"strings"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

var _ artifacts.Repairer = (*Store)(nil)

// PlanRepair plans the repair of every shard as the Erlang adapter
// repairs that root (fsstore.PlanRepairRoot on each shard root); the
// plan's reports are one report: the counters summed, the items of every
// shard, and the store root as Root. The caller holds the store's one
// lock (the command line takes ROOT/.agentstore-repair.lock). Corrupt
// items name the whole store in their next commands (opts.StoreArg,
// default the root).
//
// Every shard is scanned before any is changed, so a store with more
// files than opts.Limit is refused (*artifacts.RepairLimitError) with
// nothing removed.
func (s *Store) PlanRepair(ctx context.Context, opts artifacts.RepairOptions) (artifacts.RepairPlan, error) {
	opts = opts.Normalized(s.root)
	shards, err := s.Shards(ctx)
	if err != nil {
		return nil, err
	}
	limit, progress := opts.Limit, opts.Progress
	opts.Limit = 0
	p := &repairPlan{root: s.root, opts: opts}
	var scanned int64
	for _, sh := range shards {
		o := opts
		if progress != nil {
			base := scanned
			o.Progress = func(n int64) { progress(base + n) }
		}
		sp, err := fsstore.PlanRepairRoot(ctx, sh.Root, o)
		if err != nil {
			return nil, err
		}
		scanned += sp.Report().Scanned
		if limit > 0 && scanned > limit {
			return nil, &artifacts.RepairLimitError{Limit: limit}
		}
		p.shards = append(p.shards, sp)
	}
	return p, nil
}

// repairPlan is the plans of every shard.
type repairPlan struct {
	root   string
	opts   artifacts.RepairOptions
	shards []artifacts.RepairPlan
}

// Report sums the shards' dry-run reports.
func (p *repairPlan) Report() artifacts.RepairReport {
	total := artifacts.NewRepairReport(p.root, p.opts)
	total.DryRun = true
	for _, sp := range p.shards {
		total.Add(sp.Report())
	}
	sortReport(&total)
	return total
}

// Execute repairs each shard in turn, summing the reports.
func (p *repairPlan) Execute(ctx context.Context) (artifacts.RepairReport, error) {
	total := artifacts.NewRepairReport(p.root, p.opts)
	for _, sp := range p.shards {
		rep, err := sp.Execute(ctx)
		total.Add(rep)
		if err != nil {
			sortReport(&total)
			return total, err
		}
	}
	sortReport(&total)
	return total, nil
}

// sortReport sorts the items of a summed report by path.
func sortReport(r *artifacts.RepairReport) {
	slices.SortFunc(r.RemovedItems, func(a, b artifacts.RepairItem) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(r.SkippedItems, func(a, b artifacts.RepairItem) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(r.CorruptItems, func(a, b artifacts.CorruptItem) int { return strings.Compare(a.Path, b.Path) })
}

// ScopeSlots returns the scope slots of the fullest shard: ceilings are
// per shard, so that is the one nearest its scope ceiling (normally 1,
// since a shard holds one scope). package quota asks for it.
func (s *Store) ScopeSlots(ctx context.Context) (int, error) {
	shards, err := s.Shards(ctx)
	if err != nil {
		return 0, err
	}
	most := 0
	for _, sh := range shards {
		st, err := fsstore.Open(sh.Root, s.opts)
		if err != nil {
			return 0, err
		}
		n, err := st.ScopeSlots(ctx)
		if err != nil {
			return 0, err
		}
		most = max(most, n)
	}
	return most, nil
}

var _ artifacts.Locator = (*Store)(nil)

// Locate returns the files of a version in its scope's shard, whether or
// not the shard exists.
func (s *Store) Locate(ctx context.Context, scope artifacts.Scope, name string, version int64) ([]artifacts.LocatedFile, error) {
	return fsstore.LocateRoot(ctx, s.ShardRoot(scope), scope, name, version)
}

var _ artifacts.BrokenLister = (*Store)(nil)

// DeleteBroken removes a broken version from scope's shard (see
// fsstore.Store.DeleteBroken).
func (s *Store) DeleteBroken(ctx context.Context, scope artifacts.Scope, name string, ref artifacts.VersionRef) error {
	st, err := s.readShard("delete", scope, name)
	if err != nil {
		return err
	}
	return st.DeleteBroken(ctx, scope, name, ref)
}

var _ artifacts.NameSlotCounter = (*Store)(nil)

// NameSlots counts the name slots of the scope in its shard (0 when the
// scope has no shard).
func (s *Store) NameSlots(ctx context.Context, scope artifacts.Scope) (int, error) {
	st, err := s.shard("count name slots", scope, false, "no shard")
	if artifacts.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.NameSlots(ctx, scope)
}
