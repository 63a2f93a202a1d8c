package shardedfs

import (
	"context"
	"slices"
	"strings"

	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/repair"
)

// Repair repairs every shard as the Erlang adapter repairs that root
// (repair.Repair on each shard root) and returns one report: the counters
// summed, the items of every shard, and the store root as Root. The
// caller holds the store's one lock (the command line takes
// ROOT/.agentstore-repair.lock). Corrupt items name the whole store in
// their next commands (opts.StoreArg, default the root).
//
// With opts.Limit every shard is scanned first, removing nothing, so that
// a store with more files than the limit is refused before any shard is
// changed.
func (s *Store) Repair(ctx context.Context, opts repair.Options) (repair.Report, error) {
	if opts.StoreArg == "" {
		opts.StoreArg = s.root
	}
	total := repair.Report{Root: s.root, DryRun: opts.DryRun, CorruptItems: []repair.CorruptItem{}, RemovedItems: []repair.Item{}, SkippedItems: []repair.Item{}}
	shards, err := s.Shards(ctx)
	if err != nil {
		return total, err
	}
	if opts.Limit > 0 {
		// Scan every shard, removing nothing, before any is changed.
		dry := opts
		dry.DryRun, dry.Limit = true, 0
		var err error
		if total, err = s.repairShards(ctx, shards, dry, total); err != nil {
			return total, err
		}
		if total.Scanned > opts.Limit {
			return total, &repair.LimitError{Limit: opts.Limit}
		}
		if opts.DryRun {
			return total, nil
		}
		total = repair.Report{Root: s.root, CorruptItems: []repair.CorruptItem{}, RemovedItems: []repair.Item{}, SkippedItems: []repair.Item{}}
		opts.Limit = 0
	}
	return s.repairShards(ctx, shards, opts, total)
}

// repairShards repairs each shard in turn, summing into total.
func (s *Store) repairShards(ctx context.Context, shards []ShardUsage, opts repair.Options, total repair.Report) (repair.Report, error) {
	progress := opts.Progress
	for _, sh := range shards {
		o := opts
		if progress != nil {
			base := total.Scanned
			o.Progress = func(n int64) { progress(base + n) }
		}
		rep, err := repair.Repair(ctx, sh.Root, o)
		add(&total, rep)
		if err != nil {
			return total, err
		}
	}
	slices.SortFunc(total.RemovedItems, func(a, b repair.Item) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(total.SkippedItems, func(a, b repair.Item) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(total.CorruptItems, func(a, b repair.CorruptItem) int { return strings.Compare(a.Path, b.Path) })
	return total, nil
}

// add sums rep into total.
func add(total *repair.Report, rep repair.Report) {
	total.GraceSeconds = rep.GraceSeconds
	total.Scanned += rep.Scanned
	total.Removed += rep.Removed
	total.ReservationsPreserved += rep.ReservationsPreserved
	total.Corrupt += rep.Corrupt
	total.Young += rep.Young
	total.CorruptItems = append(total.CorruptItems, rep.CorruptItems...)
	total.RemovedItems = append(total.RemovedItems, rep.RemovedItems...)
	total.SkippedItems = append(total.SkippedItems, rep.SkippedItems...)
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
