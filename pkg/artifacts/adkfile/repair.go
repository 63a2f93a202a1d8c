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
	"github.com/agentstore/agentstore/pkg/repair"
)

// Reasons of what Repair removes.
const (
	ReasonPending  = "pending directory of an interrupted save (ADK never reads it)"
	ReasonDeleting = "directory of an interrupted delete (already out of sight)"
)

// repairItem is one directory Repair plans to remove.
type repairItem struct {
	repair.Item
	rel      string
	scopeDir string // the scope's artifacts/, where pruning stops
	mtime    time.Time
	// incomplete is true for a version directory without metadata.json:
	// it must still lack one when it is removed.
	incomplete bool
}

// Repair finds what interrupted writers left in the store and, unless
// opts.DryRun, removes what is older than the grace period:
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
// The caller holds the store's repair lock.
func (s *Store) Repair(ctx context.Context, opts repair.Options) (repair.Report, error) {
	const op = "repair"
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Grace == 0 {
		opts.Grace = repair.DefaultGrace
	}
	rep := repair.Report{Root: s.rootPath, DryRun: opts.DryRun, CorruptItems: []repair.CorruptItem{}, RemovedItems: []repair.Item{}, SkippedItems: []repair.Item{}}
	if opts.Grace > 0 {
		rep.GraceSeconds = opts.Grace.Seconds()
	}
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
		plan = append(plan, repairItem{Item: repair.Item{Path: s.abs(rel), Reason: reason, Age: age, AgeSeconds: age.Seconds(), Size: size, Scope: &scope, Name: name}, rel: rel, scopeDir: scopeDir, mtime: fi.ModTime(), incomplete: incomplete})
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
				it := repair.CorruptItem{Scope: &scope, Name: n.Name, Version: p.Version, Reason: p.Reason, Path: p.Path, Code: p.Code}
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
		return rep, err
	}
	for _, p := range stray {
		rep.Scanned++
		rep.CorruptItems = append(rep.CorruptItems, repair.CorruptItem{Reason: p.Reason, Path: p.Path, Code: p.Code})
	}
	rep.Corrupt = int64(len(rep.CorruptItems))
	if opts.Limit > 0 && rep.Scanned > opts.Limit {
		return rep, &repair.LimitError{Limit: opts.Limit}
	}
	if !opts.DryRun && opts.BeforeExecute != nil && len(plan) > 0 {
		if err := opts.BeforeExecute(); err != nil {
			return rep, err
		}
	}
	synced := map[string]bool{}
	for _, it := range plan {
		if opts.DryRun {
			rep.RemovedItems = append(rep.RemovedItems, it.Item)
			rep.Removed++
			continue
		}
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return rep, err
		}
		fi, err := s.root.Lstat(it.rel)
		changed := err != nil || !fi.ModTime().Equal(it.mtime)
		if !changed && it.incomplete {
			if _, err := s.root.Lstat(path.Join(it.rel, MetadataFile)); err == nil {
				changed = true // published meanwhile
			}
		}
		if changed {
			rep.SkippedItems = append(rep.SkippedItems, it.Item)
			continue
		}
		if err := s.root.RemoveAll(it.rel); err != nil {
			return rep, fsErr(op, it.Path, err)
		}
		rep.RemovedItems = append(rep.RemovedItems, it.Item)
		rep.Removed++
		synced[path.Dir(it.rel)] = true
		// A name left with no version directory goes, as ADK's delete
		// leaves none: ADK JS would still list it by its directory.
		s.pruneUp(path.Dir(path.Dir(it.rel)), it.scopeDir)
	}
	for dir := range synced {
		if err := osutil.SyncDir(s.abs(dir)); err != nil && !artifacts.IsNotFound(err) {
			return rep, fsErr(op, s.abs(dir), err)
		}
	}
	slices.SortFunc(rep.RemovedItems, func(a, b repair.Item) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(rep.SkippedItems, func(a, b repair.Item) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(rep.CorruptItems, func(a, b repair.CorruptItem) int { return strings.Compare(a.Path, b.Path) })
	return rep, nil
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
