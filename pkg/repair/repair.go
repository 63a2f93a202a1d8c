// Package repair orchestrates repairs of artifact stores and verifies
// published versions.
//
// What a repair removes depends on the layout, so each driver ships its
// own planner behind one shape (artifacts.Repairer: plan, then execute,
// returning one artifacts.RepairReport): fsstore's for the v1 filesystem
// layout (staged files and orphan payloads older than the grace period
// removed, records without payloads reported as corrupt with the command
// that deletes them), shardedfs's (fsstore's on each shard), gcsstore's
// (orphan payload objects, removed generation by generation). Run plans,
// stops there in a dry run, else calls Options.BeforeExecute and executes
// the plan; every planner checks each item again right before removing
// it, so a repair is safe while writers are active as long as none
// stalls for longer than the grace period.
//
// Verify reads every published version (or one scope's) through the
// *artifacts.Store interface, so it works on any store that implements
// artifacts.Walker.
package repair

import (
	"context"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// DefaultGrace is the grace period of the layout: staged files and orphan
// payloads younger than this are left alone.
const DefaultGrace = artifacts.DefaultRepairGrace

// NoGrace, as Options.Grace, removes staged files and orphan payloads of
// any age. It is not safe while writers are active.
const NoGrace = artifacts.NoRepairGrace

// Reasons given for removals.
const (
	ReasonStaged = artifacts.RepairReasonStaged
	ReasonOrphan = artifacts.RepairReasonOrphan
)

// Options configure Repair. The zero value gives the layout's defaults.
type Options struct {
	// Grace: files younger than this are left alone. Zero means
	// DefaultGrace; NoGrace (any negative value) means no grace at all.
	Grace time.Duration
	// Limit stops the run with a *LimitError once more files than this
	// were scanned, before anything is removed. Zero means no limit.
	Limit int64
	// DryRun removes nothing; the report says what would be removed.
	DryRun bool
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Workers is the number of directories read at once (default
	// 4*GOMAXPROCS, at least 4).
	Workers int
	// Progress, when set, is called now and then with the number of files
	// scanned so far, from any goroutine.
	Progress func(scanned int64)
	// StoreArg is the --store value put into the next commands of corrupt
	// items (default: the root).
	StoreArg string
	// BeforeExecute, when set, runs between the plan and its execution (not
	// in a dry run); an error stops the run before anything is removed.
	// The command line checks there that it still holds its lock.
	BeforeExecute func() error
}

// Item is a file removed (or, in a dry run, to be removed), or skipped.
type Item = artifacts.RepairItem

// CorruptItem is a published version found broken.
type CorruptItem = artifacts.CorruptItem

// Report is what a repair found and did.
type Report = artifacts.RepairReport

// LimitError says a run stopped because it scanned more files than
// Options.Limit; nothing was removed.
type LimitError = artifacts.RepairLimitError

// Run repairs st through its driver's repair capability
// (artifacts.Repairer): it plans, and unless opts.DryRun runs
// opts.BeforeExecute and executes the plan. A layout without a repair is
// CodeUnsupported.
//
// Run also removes, in every session scope, the packs of the incremental
// snapshot format (pkg/workspace/checkpoint) that no manifest names and
// that are older than the grace period: what a crashed or refused
// snapshot stored. Each is removed only if the scope's manifests, read
// again right before, still name none of them; a scope with a manifest
// that does not read keeps all its packs. The report lists them with
// ReasonUnreferencedPack (Path is NAME@VERSION, Scope and Name set).
func Run(ctx context.Context, st *artifacts.Store, opts Options) (Report, error) {
	p, err := st.PlanRepair(ctx, opts.driverOptions())
	if err != nil {
		return Report{}, err
	}
	pp, err := planPacks(ctx, st, opts)
	if err != nil {
		return Report{}, err
	}
	rep, err := run(ctx, p, opts)
	if err != nil || rep.DryRun {
		if rep.DryRun {
			pp.add(&rep, pp.items, nil)
		}
		return rep, err
	}
	removed, skipped, err := pp.execute(ctx, st)
	pp.add(&rep, removed, skipped)
	return rep, err
}

// Repair repairs the filesystem store at root (the directory that holds
// v1/), as fsstore's repair planner does (see the package documentation).
func Repair(ctx context.Context, root string, opts Options) (Report, error) {
	p, err := fsstore.PlanRepairRoot(ctx, root, opts.driverOptions())
	if err != nil {
		return Report{Root: root}, err
	}
	return run(ctx, p, opts)
}

// RepairGCS repairs the Cloud Storage store st as Repair does a filesystem
// store (see gcsstore.Store.PlanRepair).
func RepairGCS(ctx context.Context, st *gcsstore.Store, opts Options) (Report, error) {
	p, err := st.PlanRepair(ctx, opts.driverOptions())
	if err != nil {
		return Report{}, err
	}
	return run(ctx, p, opts)
}

// run returns the plan's report in a dry run, else executes it after
// opts.BeforeExecute.
func run(ctx context.Context, p artifacts.RepairPlan, opts Options) (Report, error) {
	if opts.DryRun {
		return p.Report(), nil
	}
	if opts.BeforeExecute != nil {
		if err := opts.BeforeExecute(); err != nil {
			rep := p.Report()
			rep.DryRun, rep.Removed, rep.RemovedItems = false, 0, []Item{}
			return rep, err
		}
	}
	return p.Execute(ctx)
}

// driverOptions returns the options a driver's planner takes.
func (o Options) driverOptions() artifacts.RepairOptions {
	return artifacts.RepairOptions{Grace: o.Grace, Limit: o.Limit, Now: o.Now, Workers: o.Workers, Progress: o.Progress, StoreArg: o.StoreArg}
}

// DeleteCommand returns the agentstore command line that deletes one
// version (see artifacts.DeleteCommand).
func DeleteCommand(store string, scope artifacts.Scope, name string, version int64) string {
	return artifacts.DeleteCommand(store, scope, name, version)
}
