// Package repair finds and cleans up what interrupted writers leave in an
// artifact store, and verifies published versions.
//
// Repair walks the filesystem layout (see the layout spec, "Repair") and
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
// Repair plans first and executes second. Before it removes a file it
// stats it again and skips it when its size or modification time changed
// since it was classified, and for an orphan payload it checks right
// before the removal that the record still does not exist. It never removes
// anything younger than the grace period, so it is safe while writers are
// active as long as no writer stalls for longer than the grace period
// between staging a file and publishing its version. The directory is
// fsynced after its removals.
//
// Verify reads every published version (or one scope's) through the
// *artifacts.Store interface, so it works on any store that implements
// artifacts.Walker.
package repair

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
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// DefaultGrace is the grace period of the layout: staged files and orphan
// payloads younger than this are left alone.
const DefaultGrace = 5 * time.Minute

// NoGrace, as Options.Grace, removes staged files and orphan payloads of
// any age. It is not safe while writers are active.
const NoGrace time.Duration = -1

// Reasons given for removals.
const (
	ReasonStaged = "staged file of an interrupted write"
	ReasonOrphan = "payload without a record (its write never published)"
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
type Item struct {
	// Path is the file.
	Path string `json:"path"`
	// Reason says why.
	Reason string `json:"reason"`
	// Age is how old the file was when it was classified.
	Age time.Duration `json:"-"`
	// AgeSeconds is Age in seconds, for JSON.
	AgeSeconds float64 `json:"age_seconds"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Scope and Name name the artifact the file belongs to when the
	// layout's paths say it (google-adk-file); nil and empty otherwise.
	Scope *artifacts.Scope `json:"scope,omitempty"`
	Name  string           `json:"name,omitempty"`
}

// CorruptItem is a published version found broken.
type CorruptItem struct {
	// Scope is decoded from the version's record; nil when it does not
	// decode.
	Scope *artifacts.Scope `json:"scope"`
	// Name is decoded from the record; empty when it does not decode.
	Name string `json:"name"`
	// Version is the version number (0 when the problem is the name
	// directory itself).
	Version int64 `json:"version"`
	// Reason says what is wrong.
	Reason string `json:"reason"`
	// Path is the file in question.
	Path string `json:"path"`
	// NextCommand is the command that deletes the version, or empty when
	// the record does not say which artifact it is (then inspect Path).
	NextCommand string `json:"next_command,omitempty"`
	// Code is the stable error code of the problem: corrupt_artifact (the
	// bytes were read and are wrong), unsafe_store (a symbolic link, named
	// pipe or other non-regular file, not read), or permission_denied and
	// io_error (it could not be read; see VerifyReport.UnreadableItems).
	Code artifacts.Code `json:"code"`
}

// Report is what Repair found and did.
type Report struct {
	// Root is the store root.
	Root string `json:"root"`
	// DryRun is true when nothing was removed.
	DryRun bool `json:"dry_run"`
	// GraceSeconds is the grace period used (0 with NoGrace).
	GraceSeconds float64 `json:"grace_seconds"`
	// Scanned counts the files examined in name directories.
	Scanned int64 `json:"scanned"`
	// Removed counts the files removed (in a dry run: to be removed).
	Removed int64 `json:"removed"`
	// ReservationsPreserved counts the v-N.reserve files.
	ReservationsPreserved int64 `json:"reservations_preserved"`
	// Corrupt counts the records without payloads.
	Corrupt int64 `json:"corrupt"`
	// Young counts staged files and orphan payloads left alone because
	// they are younger than the grace period.
	Young int64 `json:"young"`
	// CorruptItems lists the corrupt versions, by path.
	CorruptItems []CorruptItem `json:"corrupt_items"`
	// RemovedItems lists the files removed (or to be removed), by path.
	RemovedItems []Item `json:"removed_items"`
	// SkippedItems lists files planned for removal but left alone because
	// they changed, vanished or were published meanwhile.
	SkippedItems []Item `json:"skipped_items"`
}

// LimitError says a run stopped because it scanned more files than
// Options.Limit; nothing was removed.
type LimitError struct {
	// Limit is Options.Limit.
	Limit int64
}

// Error says which limit was passed.
func (e *LimitError) Error() string {
	return fmt.Sprintf("repair stopped: more than %d files to scan (raise --limit); nothing was removed", e.Limit)
}

// ErrorCode returns "limit_exceeded".
func (e *LimitError) ErrorCode() string { return "limit_exceeded" }

// planned is a file to remove.
type planned struct {
	Item
	dir     string
	mtime   time.Time
	orphan  int64 // version of an orphan payload, 0 for staged files
	removed bool
}

// Repair repairs the filesystem store at root (the directory that holds
// v1/). See the package documentation for what it does.
func Repair(ctx context.Context, root string, opts Options) (Report, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Workers <= 0 {
		opts.Workers = max(4, 4*runtime.GOMAXPROCS(0))
	}
	if opts.StoreArg == "" {
		opts.StoreArg = root
	}
	rep := Report{Root: root, DryRun: opts.DryRun, CorruptItems: []CorruptItem{}, RemovedItems: []Item{}, SkippedItems: []Item{}}
	if opts.Grace > 0 {
		rep.GraceSeconds = opts.Grace.Seconds()
	}
	sc := &scanner{opts: opts, now: opts.Now()}
	plan, err := sc.scan(ctx, root, &rep)
	if err != nil {
		return rep, err
	}
	if opts.DryRun {
		for _, p := range plan {
			rep.RemovedItems = append(rep.RemovedItems, p.Item)
		}
		rep.Removed = int64(len(rep.RemovedItems))
		return rep, nil
	}
	if opts.BeforeExecute != nil {
		if err := opts.BeforeExecute(); err != nil {
			return rep, err
		}
	}
	err = execute(ctx, plan, &rep)
	return rep, err
}

// execute removes the planned files, skipping those that changed since
// they were classified, and fsyncs each directory it removed from.
func execute(ctx context.Context, plan []*planned, rep *Report) error {
	var dirty []string
	var firstErr error
	for _, p := range plan {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		skip := func(why string) {
			it := p.Item
			it.Reason = why
			rep.SkippedItems = append(rep.SkippedItems, it)
		}
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
			_, err := os.Lstat(filepath.Join(p.dir, fsstore.VersionFile(p.orphan, "meta")))
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
		rep.RemovedItems = append(rep.RemovedItems, p.Item)
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

// scanner reads the directories of a store in parallel.
type scanner struct {
	opts    Options
	now     time.Time
	scanned atomic.Int64
	limited atomic.Bool

	mu      sync.Mutex
	plan    []*planned
	corrupt []CorruptItem
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

func (s *scanner) scan(ctx context.Context, root string, rep *Report) ([]*planned, error) {
	if missing, err := realDir(root); err != nil || missing {
		if missing {
			return nil, artifacts.Errorf(artifacts.CodeNotFound, "repair", nil, "store root %s does not exist", root)
		}
		return nil, err
	}
	scopes := filepath.Join(root, fsstore.LayoutDir, fsstore.ScopesDir)
	for _, d := range []string{filepath.Join(root, fsstore.LayoutDir), scopes} {
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
		if !fsstore.IsHash(e.Name()) {
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
		names := filepath.Join(dir, fsstore.NamesDir)
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
			if !fsstore.IsHash(e.Name()) {
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
		return nil, &LimitError{Limit: s.opts.Limit}
	}
	if err != nil {
		return nil, err
	}
	rep.ReservationsPreserved = s.reserve
	rep.Young = s.young
	slices.SortFunc(s.corrupt, func(a, b CorruptItem) int { return strings.Compare(a.Path, b.Path) })
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
		switch k, v := fsstore.ParseVersionFile(name); k {
		case fsstore.KindReserve:
			reserve++
		case fsstore.KindTmp:
			candidates = append(candidates, candidate{name: name, reason: ReasonStaged})
		case fsstore.KindData:
			if data == nil {
				data = map[int64]bool{}
			}
			data[v] = true
		case fsstore.KindMeta:
			if meta == nil {
				meta = map[int64]bool{}
			}
			meta[v] = true
		}
	}
	for v := range data {
		if !meta[v] {
			candidates = append(candidates, candidate{name: fsstore.VersionFile(v, "data"), reason: ReasonOrphan, orphan: v})
		}
	}
	var corrupt []CorruptItem
	for v := range meta {
		if data[v] {
			continue
		}
		// A listing is not a snapshot: while a writer renames v-N.data and
		// then v-N.meta into place, a read of the directory can see the
		// second and miss the first. Ask for the payload by name.
		if _, err := os.Lstat(filepath.Join(dir, fsstore.VersionFile(v, "data"))); err == nil {
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
			Item:   Item{Path: path, Reason: c.reason, Age: age, AgeSeconds: age.Round(time.Millisecond).Seconds(), Size: fi.Size()},
			dir:    dir,
			mtime:  fi.ModTime(),
			orphan: c.orphan,
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
func (s *scanner) missingPayload(dir string, v int64) CorruptItem {
	path := filepath.Join(dir, fsstore.VersionFile(v, "meta"))
	it := CorruptItem{Version: v, Path: path, Reason: "payload is missing", Code: artifacts.CodeCorrupt}
	rec, err := readRecord(path)
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
	it.NextCommand = DeleteCommand(s.opts.StoreArg, rec.Scope, rec.Name, v)
	return it
}

// readRecord reads and decodes a record file, refusing one past the
// layout's size limit.
func readRecord(path string) (artifacts.Record, error) {
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

// DeleteCommand returns the agentstore command line that deletes one
// version, every argument quoted for a shell when it needs to be (see
// internal/shell: ids and names that hold control or bidirectional
// characters are escaped, so the line is safe to print and to paste).
func DeleteCommand(store string, scope artifacts.Scope, name string, version int64) string {
	args := []string{"agentstore", "artifacts", "delete", "--store", store, "--app", scope.App}
	if scope.Kind == artifacts.KindUser || scope.Kind == artifacts.KindSession {
		args = append(args, "--user", scope.User)
	}
	if scope.Kind == artifacts.KindSession {
		args = append(args, "--session", scope.Session)
	}
	args = append(args, "--name", name, "--version", fmt.Sprint(version))
	return shell.Join(args...)
}
