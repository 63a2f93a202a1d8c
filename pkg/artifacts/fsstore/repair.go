package fsstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/internal/pool"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// The repair of the v1 filesystem layout (see the layout spec, "Repair")
// classifies every file of every name directory:
//   - v-N.reserve: preserved, counted in ReservationsPreserved;
//   - a name containing ".tmp-" (a staged payload or record): removed when
//     older than the grace period;
//   - v-N.data with no v-N.meta (an orphan payload): removed when older than
//     the grace period;
//   - v-N.meta with no v-N.data: a corrupt version, reported with the
//     command that deletes it, never removed;
//   - anything else: left alone.
//
// Before it removes a file it stats it again and skips it when its size or
// modification time changed since it was classified, and for an orphan
// payload it checks right before the removal that the record still does
// not exist. It never removes anything younger than the grace period, so
// it is safe while writers are active as long as no writer stalls for
// longer than the grace period between staging a file and publishing its
// version. The directory is fsynced after its removals.

var _ artifacts.Repairer = (*Store)(nil)

// PlanRepair scans the store (see PlanRepairRoot).
func (s *Store) PlanRepair(ctx context.Context, opts artifacts.RepairOptions) (artifacts.RepairPlan, error) {
	return PlanRepairRoot(ctx, s.root, opts)
}

// PlanRepairRoot scans the v1 filesystem store at root (the directory
// that holds v1/) without opening it as a Store, and returns the repair
// plan: the staged files and orphan payloads older than the grace period,
// and the records without payloads (as corrupt items). A missing root is
// CodeNotFound; a root without v1/ is an empty store.
func PlanRepairRoot(ctx context.Context, root string, opts artifacts.RepairOptions) (artifacts.RepairPlan, error) {
	opts = opts.Normalized(root)
	if opts.Workers <= 0 {
		opts.Workers = max(4, 4*runtime.GOMAXPROCS(0))
	}
	rep := artifacts.NewRepairReport(root, opts)
	sc := &scanner{opts: opts, now: opts.Now()}
	plan, err := sc.scan(ctx, root, &rep)
	if err != nil {
		return nil, err
	}
	items := make([]artifacts.RepairItem, len(plan))
	for i, p := range plan {
		items[i] = p.RepairItem
	}
	return artifacts.NewRepairPlan(rep, items, func(ctx context.Context, rep *artifacts.RepairReport) error {
		return execute(ctx, plan, rep)
	}), nil
}

// execute removes the planned files, skipping those that changed since
// they were classified, and fsyncs each directory it removed from.
func execute(ctx context.Context, plan []*planned, rep *artifacts.RepairReport) error {
	var dirty []string
	var firstErr error
	for _, p := range plan {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		skip := func(why string) { rep.Skip(p.RepairItem, why) }
		fi, err := os.Lstat(p.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			skip("vanished before removal")
			continue
		case err != nil:
			firstErr = err
		case fi.Size() != p.Size || !fi.ModTime().Equal(p.mtime) || !fi.Mode().IsRegular():
			skip("changed since it was classified")
			continue
		}
		if firstErr != nil {
			break
		}
		if p.orphan > 0 {
			_, err := os.Lstat(filepath.Join(p.dir, VersionFile(p.orphan, "meta")))
			if err == nil {
				skip("its record was published meanwhile")
				continue
			}
			if !errors.Is(err, fs.ErrNotExist) {
				firstErr = err
				break
			}
		}
		if err := os.Remove(p.Path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				skip("vanished before removal")
				continue
			}
			firstErr = err
			break
		}
		p.removed = true
		rep.RemovedItems = append(rep.RemovedItems, p.RepairItem)
		if len(dirty) == 0 || dirty[len(dirty)-1] != p.dir {
			dirty = append(dirty, p.dir)
		}
	}
	rep.Removed = int64(len(rep.RemovedItems))
	for _, d := range dirty {
		if err := osutil.SyncDir(d); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if firstErr != nil {
		return fmt.Errorf("repair: %w", firstErr)
	}
	return nil
}

// planned is a file to remove.
type planned struct {
	artifacts.RepairItem
	dir     string
	mtime   time.Time
	orphan  int64 // version of an orphan payload, 0 for staged files
	removed bool
}

// scanner reads the directories of a store in parallel.
type scanner struct {
	opts    artifacts.RepairOptions
	now     time.Time
	scanned atomic.Int64
	limited atomic.Bool

	mu      sync.Mutex
	plan    []*planned
	corrupt []artifacts.CorruptItem
	reserve int64
	young   int64
}

// unsafe reports a path that should be a real directory and is not.
func unsafe(path string) error {
	return artifacts.Errorf(artifacts.CodeUnsafeStore, "repair", nil, "%s is not a directory", path)
}

// realDir checks that path is a directory and not a symbolic link;
// missing reports whether it does not exist.
func realDir(path string) (missing bool, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.IsDir() {
		return false, unsafe(path)
	}
	return false, nil
}

// readDir lists a directory without sorting it.
func readDir(path string) ([]fs.DirEntry, error) {
	f, err := osutil.OpenDir(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

func (s *scanner) scan(ctx context.Context, root string, rep *artifacts.RepairReport) ([]*planned, error) {
	if missing, err := realDir(root); err != nil || missing {
		if missing {
			return nil, artifacts.Errorf(artifacts.CodeNotFound, "repair", nil, "store root %s does not exist", root)
		}
		return nil, err
	}
	scopes := filepath.Join(root, LayoutDir, ScopesDir)
	for _, d := range []string{filepath.Join(root, LayoutDir), scopes} {
		missing, err := realDir(d)
		if err != nil {
			return nil, err
		}
		if missing {
			return nil, nil // an empty store
		}
	}
	entries, err := readDir(scopes)
	if err != nil {
		return nil, err
	}
	var scopeDirs []string
	for _, e := range entries {
		if !IsHash(e.Name()) {
			continue
		}
		p := filepath.Join(scopes, e.Name())
		if !e.IsDir() {
			return nil, unsafe(p)
		}
		scopeDirs = append(scopeDirs, p)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Stage 1: the names/ directory of every scope.
	var nameDirs []string
	var mu sync.Mutex
	err = pool.Each(ctx, s.opts.Workers, scopeDirs, func(dir string) error {
		names := filepath.Join(dir, NamesDir)
		missing, err := realDir(names)
		if err != nil || missing {
			return err
		}
		entries, err := readDir(names)
		if err != nil {
			return err
		}
		var mine []string
		for _, e := range entries {
			if !IsHash(e.Name()) {
				continue
			}
			p := filepath.Join(names, e.Name())
			if !e.IsDir() {
				return unsafe(p)
			}
			mine = append(mine, p)
		}
		mu.Lock()
		nameDirs = append(nameDirs, mine...)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Stage 2: every name directory.
	err = pool.Each(ctx, s.opts.Workers, nameDirs, func(dir string) error {
		err := s.nameDir(dir)
		if s.limited.Load() {
			cancel()
		}
		return err
	})
	rep.Scanned = s.scanned.Load()
	if s.limited.Load() {
		return nil, &artifacts.RepairLimitError{Limit: s.opts.Limit}
	}
	if err != nil {
		return nil, err
	}
	rep.ReservationsPreserved = s.reserve
	rep.Young = s.young
	slices.SortFunc(s.corrupt, func(a, b artifacts.CorruptItem) int { return strings.Compare(a.Path, b.Path) })
	rep.CorruptItems = append(rep.CorruptItems, s.corrupt...)
	rep.Corrupt = int64(len(s.corrupt))
	slices.SortFunc(s.plan, func(a, b *planned) int { return strings.Compare(a.Path, b.Path) })
	if s.opts.Progress != nil {
		s.opts.Progress(rep.Scanned)
	}
	return s.plan, nil
}

// nameDir classifies the files of one name directory.
func (s *scanner) nameDir(dir string) error {
	entries, err := readDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	n := s.scanned.Add(int64(len(entries)))
	if s.opts.Limit > 0 && n > s.opts.Limit {
		s.limited.Store(true)
		return nil
	}
	if s.opts.Progress != nil {
		s.opts.Progress(n)
	}
	var (
		reserve    int64
		data, meta map[int64]bool
		candidates []candidate
	)
	for _, e := range entries {
		name := e.Name()
		switch k, v := ParseVersionFile(name); k {
		case KindReserve:
			reserve++
		case KindTmp:
			candidates = append(candidates, candidate{name: name, reason: artifacts.RepairReasonStaged})
		case KindData:
			if data == nil {
				data = map[int64]bool{}
			}
			data[v] = true
		case KindMeta:
			if meta == nil {
				meta = map[int64]bool{}
			}
			meta[v] = true
		}
	}
	for v := range data {
		if !meta[v] {
			candidates = append(candidates, candidate{name: VersionFile(v, "data"), reason: artifacts.RepairReasonOrphan, orphan: v})
		}
	}
	var corrupt []artifacts.CorruptItem
	for v := range meta {
		if data[v] {
			continue
		}
		// A listing is not a snapshot: while a writer renames v-N.data and
		// then v-N.meta into place, a read of the directory can see the
		// second and miss the first. Ask for the payload by name.
		if _, err := os.Lstat(filepath.Join(dir, VersionFile(v, "data"))); err == nil {
			continue
		}
		corrupt = append(corrupt, s.missingPayload(dir, v))
	}
	var plan []*planned
	young := int64(0)
	for _, c := range candidates {
		path := filepath.Join(dir, c.name)
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			continue // not something a writer left: leave it alone
		}
		age := s.now.Sub(fi.ModTime())
		if s.opts.Grace >= 0 && age <= s.opts.Grace {
			young++
			continue
		}
		plan = append(plan, &planned{
			RepairItem: artifacts.NewRepairItem(path, c.reason, age, fi.Size()),
			dir:        dir,
			mtime:      fi.ModTime(),
			orphan:     c.orphan,
		})
	}
	s.mu.Lock()
	s.reserve += reserve
	s.young += young
	s.plan = append(s.plan, plan...)
	s.corrupt = append(s.corrupt, corrupt...)
	s.mu.Unlock()
	return nil
}

type candidate struct {
	name   string
	reason string
	orphan int64
}

// missingPayload describes a record without its payload, decoding the
// record to name the artifact.
func (s *scanner) missingPayload(dir string, v int64) artifacts.CorruptItem {
	path := filepath.Join(dir, VersionFile(v, "meta"))
	it := artifacts.CorruptItem{Version: v, Path: path, Reason: "payload is missing", Code: artifacts.CodeCorrupt}
	rec, err := readRecordFile(path)
	if err == nil {
		nameHash := filepath.Base(dir)
		scopeHash := filepath.Base(filepath.Dir(filepath.Dir(dir)))
		switch {
		case rec.Version != v:
			err = fmt.Errorf("record says version %d", rec.Version)
		case artifacts.NameHash(rec.Name) != nameHash:
			err = fmt.Errorf("record names %q, which does not hash to this directory", rec.Name)
		case rec.Scope.Hash() != scopeHash:
			err = fmt.Errorf("record's scope %s does not hash to this directory", rec.Scope)
		}
	}
	if err != nil {
		it.Reason += "; the record does not say which artifact this is: " + err.Error()
		return it
	}
	it.Scope, it.Name = &rec.Scope, rec.Name
	it.NextCommand = artifacts.DeleteCommand(s.opts.StoreArg, rec.Scope, rec.Name, v)
	return it
}

// readRecordFile reads and decodes a record file, refusing one past the
// layout's size limit.
func readRecordFile(path string) (artifacts.Record, error) {
	// Not following a symbolic link, not blocking on a named pipe.
	b, err := osutil.ReadFileMax(path, artifacts.MaxRecordFileBytes)
	if errors.Is(err, osutil.ErrTooLarge) {
		return artifacts.Record{}, fmt.Errorf("record is larger than %d bytes", artifacts.MaxRecordFileBytes)
	}
	if err != nil {
		return artifacts.Record{}, err
	}
	return artifacts.DecodeRecord(b)
}
