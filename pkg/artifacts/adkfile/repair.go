package adkfile

import (
	"context"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Reasons of what Repair removes.
const (
	ReasonPending  = "pending directory of an interrupted save (ADK never reads it)"
	ReasonDeleting = "directory of an interrupted delete (already out of sight)"
)

// repairItem is one directory Repair plans to remove.
type repairItem struct {
	artifacts.RepairItem
	rel      string
	scopeDir string // the scope's artifacts/, where pruning stops
	mtime    time.Time
	// incomplete is true for a version directory without metadata.json:
	// it must still lack one when it is removed.
	incomplete bool
}

// PlanRepair finds what interrupted writers left in the store; the plan's
// Execute removes what is older than the grace period:
//   - versions/.N.pending/ directories (saves killed before their
//     rename; ADK never reads them);
//   - versions/.deleting-… directories (deletes killed after their
//     rename);
//   - version directories without metadata.json (ADK JS saves killed
//     mid-write: empty, or a payload possibly cut short), which ADK counts
//     but cannot load.
//
// Younger ones are left alone and counted in Report.Young. Versions whose
// metadata.json is damaged, and entries that are not part of the layout
// (foreign, and an apps/ store's old-layout users/ tree with the migration
// it needs), are reported in CorruptItems and never removed. Before it
// removes a directory it stats it again and skips it when it changed, and
// for a version directory checks that metadata.json still does not exist.
// The caller holds the store's repair lock while it executes the plan.
func (s *Store) PlanRepair(ctx context.Context, opts artifacts.RepairOptions) (artifacts.RepairPlan, error) {
	const op = "repair"
	opts = opts.Normalized(s.rootPath)
	rep := artifacts.NewRepairReport(s.rootPath, opts)
	now := opts.Now()
	var plan []repairItem
	consider := func(scope artifacts.Scope, name, scopeDir, rel, reason string, incomplete bool) error {
		fi, err := s.root.Lstat(rel)
		if err != nil {
			return nil // gone meanwhile
		}
		size, err := s.treeSize(op, rel)
		if err != nil {
			return err
		}
		age := now.Sub(fi.ModTime())
		if opts.Grace > 0 && age < opts.Grace {
			rep.Young++
			return nil
		}
		plan = append(plan, repairItem{RepairItem: artifacts.RepairItem{Path: s.abs(rel), Reason: reason, Age: age, AgeSeconds: age.Seconds(), Size: size, Scope: &scope, Name: name}, rel: rel, scopeDir: scopeDir, mtime: fi.ModTime(), incomplete: incomplete})
		return nil
	}
	var stray []artifacts.Problem
	err := s.scopeDirs(ctx, op, func(scope artifacts.Scope, dir string) error {
		return s.walkNames(ctx, op, scope, dir, func(n artifacts.NameUsage, foreign []artifacts.Problem) {
			stray = append(stray, foreign...)
			if n.Name == "" {
				return
			}
			for _, p := range n.Problems {
				rep.Scanned++
				if strings.HasPrefix(p.Reason, ReasonEmptyVersion) || strings.HasPrefix(p.Reason, ReasonNoMetadata) {
					continue // planned below, from the directory listing
				}
				it := artifacts.CorruptItem{Scope: &scope, Name: n.Name, Version: p.Version, Reason: p.Reason, Path: p.Path, Code: p.Code}
				rep.CorruptItems = append(rep.CorruptItems, it)
			}
			rep.Scanned += int64(len(n.Records))
			vdir := path.Join(strings.TrimPrefix(strings.TrimPrefix(n.Hash, s.rootPath), "/"), VersionsDir)
			entries, err := s.readDir(op, vdir)
			if err != nil {
				return
			}
			for _, e := range entries {
				rel := path.Join(vdir, e.Name())
				switch _, pending := pendingNumber(e.Name()); {
				case pending && e.IsDir():
					rep.Scanned++
					_ = consider(scope, n.Name, dir, rel, ReasonPending, false)
				case strings.HasPrefix(e.Name(), deletingPrefix) && e.IsDir():
					rep.Scanned++
					_ = consider(scope, n.Name, dir, rel, ReasonDeleting, false)
				default:
					if _, ok := versionNumber(e.Name()); !ok || !e.IsDir() {
						continue
					}
					if _, err := s.root.Lstat(path.Join(rel, MetadataFile)); err == nil {
						continue
					}
					reason := ReasonEmptyVersion
					if ok, _ := s.hasEntries(op, rel); ok {
						reason = ReasonNoMetadata
					}
					_ = consider(scope, n.Name, dir, rel, reason, true)
				}
			}
		})
	}, func(p artifacts.Problem) { stray = append(stray, p) })
	if err != nil {
		return nil, err
	}
	for _, p := range stray {
		rep.Scanned++
		rep.CorruptItems = append(rep.CorruptItems, artifacts.CorruptItem{Reason: p.Reason, Path: p.Path, Code: p.Code, NextCommand: p.NextCommand})
	}
	rep.Corrupt = int64(len(rep.CorruptItems))
	if opts.Progress != nil {
		opts.Progress(rep.Scanned)
	}
	if opts.Limit > 0 && rep.Scanned > opts.Limit {
		return nil, &artifacts.RepairLimitError{Limit: opts.Limit}
	}
	sortItems := func(r *artifacts.RepairReport) {
		slices.SortFunc(r.RemovedItems, func(a, b artifacts.RepairItem) int { return strings.Compare(a.Path, b.Path) })
		slices.SortFunc(r.SkippedItems, func(a, b artifacts.RepairItem) int { return strings.Compare(a.Path, b.Path) })
	}
	slices.SortFunc(rep.CorruptItems, func(a, b artifacts.CorruptItem) int { return strings.Compare(a.Path, b.Path) })
	planned := make([]artifacts.RepairItem, len(plan))
	for i, it := range plan {
		planned[i] = it.RepairItem
	}
	slices.SortFunc(planned, func(a, b artifacts.RepairItem) int { return strings.Compare(a.Path, b.Path) })
	return artifacts.NewRepairPlan(rep, planned, func(ctx context.Context, rep *artifacts.RepairReport) error {
		defer sortItems(rep)
		return s.executeRepair(ctx, op, plan, rep)
	}), nil
}

// executeRepair removes the planned directories, each only if it did not
// change since it was classified.
func (s *Store) executeRepair(ctx context.Context, op string, plan []repairItem, rep *artifacts.RepairReport) error {
	synced := map[string]bool{}
	defer func() {
		for dir := range synced {
			_ = osutil.SyncDir(s.abs(dir))
		}
	}()
	for _, it := range plan {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return err
		}
		fi, err := s.root.Lstat(it.rel)
		switch {
		case err != nil:
			rep.Skip(it.RepairItem, "vanished since it was planned")
			continue
		case !fi.ModTime().Equal(it.mtime):
			rep.Skip(it.RepairItem, "changed since it was planned")
			continue
		}
		if it.incomplete {
			if _, err := s.root.Lstat(path.Join(it.rel, MetadataFile)); err == nil {
				rep.Skip(it.RepairItem, "published since it was planned (it has a metadata.json now)")
				continue
			}
		}
		if err := s.root.RemoveAll(it.rel); err != nil {
			return fsErr(op, it.Path, err)
		}
		rep.RemovedItems = append(rep.RemovedItems, it.RepairItem)
		rep.Removed++
		synced[path.Dir(it.rel)] = true
		// A name left with no version directory goes, as ADK's delete
		// leaves none: ADK JS would still list it by its directory.
		s.pruneUp(path.Dir(path.Dir(it.rel)), it.scopeDir)
	}
	return nil
}

// treeSize sums the sizes of the regular files below rel (one level of
// version directory: the payload and metadata.json).
func (s *Store) treeSize(op, rel string) (int64, error) {
	var total int64
	err := fs.WalkDir(s.root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total = artifacts.AddSize(total, fi.Size())
			}
		}
		return nil
	})
	if err != nil {
		return 0, fsErr(op, s.abs(rel), err)
	}
	return total, nil
}
