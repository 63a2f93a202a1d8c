package fsstore

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// nameScan is what one read of a name directory tells.
type nameScan struct {
	published    []int64 // versions with a .meta, ascending
	reservations int
	data         map[int64]bool // versions with a .data
}

// scanNameDir lists a name directory.
func scanNameDir(dir string, wantData bool) (nameScan, error) {
	var sc nameScan
	names, err := readNames(dir)
	if err != nil {
		return sc, err
	}
	if wantData {
		sc.data = map[int64]bool{}
	}
	for _, name := range names {
		switch k, n := ParseVersionFile(name); k {
		case KindMeta:
			sc.published = append(sc.published, n)
		case KindReserve:
			sc.reservations++
		case KindData:
			if wantData {
				sc.data[n] = true
			}
		}
	}
	slices.Sort(sc.published)
	return sc, nil
}

// nameDir checks scope and name and returns the name directory, refusing
// symbolic links on the way.
func (s *Store) nameDir(op string, scope artifacts.Scope, name string) (string, error) {
	if err := scope.Validate(); err != nil {
		return "", err
	}
	if err := artifacts.ValidateName(name); err != nil {
		return "", err
	}
	scopeDir := filepath.Join(s.scopes, scope.Hash())
	dir := filepath.Join(scopeDir, NamesDir, artifacts.NameHash(name))
	for _, d := range []string{scopeDir, filepath.Dir(dir), dir} {
		if err := checkDir(op, d, false); err != nil {
			if artifacts.IsNotFound(err) {
				return "", artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such artifact")
			}
			return "", err
		}
	}
	return dir, nil
}

// readRecord reads, decodes and checks the record of version n in dir.
func readRecord(op, dir string, scope artifacts.Scope, name string, n int64) (artifacts.Record, error) {
	path := filepath.Join(dir, VersionFile(n, "meta"))
	b, err := readSmall(path)
	if err != nil {
		if errors.Is(err, errTooBig) {
			return artifacts.Record{}, artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "record %s is larger than %d bytes", path, artifacts.MaxRecordFileBytes)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return artifacts.Record{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
		}
		return artifacts.Record{}, ioErr(op, err)
	}
	rec, err := artifacts.DecodeRecord(b)
	if err != nil {
		return artifacts.Record{}, err
	}
	if name != "" {
		if err := artifacts.CheckRecord(rec, scope, name, n); err != nil {
			return artifacts.Record{}, err
		}
	}
	return rec, nil
}

var errTooBig = errors.New("file too large")

// readSmall reads a record file, refusing one past the layout's limit.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf [4096]byte
	b := buf[:0]
	for {
		if len(b) == cap(b) {
			if len(b) > artifacts.MaxRecordFileBytes {
				return nil, errTooBig
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			if len(b) > artifacts.MaxRecordFileBytes {
				return nil, errTooBig
			}
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// latest returns the highest published version in dir.
func latest(dir string) (int64, error) {
	sc, err := scanNameDir(dir, false)
	if err != nil {
		return 0, err
	}
	if len(sc.published) == 0 {
		return 0, artifacts.Errorf(artifacts.CodeNotFound, "get", nil, "no published version")
	}
	return sc.published[len(sc.published)-1], nil
}

// Stat returns the record of a version (0 for the latest).
func (s *Store) Stat(ctx context.Context, scope artifacts.Scope, name string, version int64) (artifacts.Record, error) {
	rec, _, err := s.stat(ctx, "stat", scope, name, version)
	return rec, err
}

func (s *Store) stat(ctx context.Context, op string, scope artifacts.Scope, name string, version int64) (artifacts.Record, string, error) {
	wrap := func(err error) error {
		var e *artifacts.Error
		if !errors.As(err, &e) {
			e = ioErr(op, err)
		}
		return e.With(scope, name, version)
	}
	if version < 0 {
		return artifacts.Record{}, "", wrap(artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "version %d is negative", version))
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.Record{}, "", wrap(err)
	}
	dir, err := s.nameDir(op, scope, name)
	if err != nil {
		return artifacts.Record{}, "", wrap(err)
	}
	if version == 0 {
		if version, err = latest(dir); err != nil {
			return artifacts.Record{}, "", wrap(err)
		}
	}
	rec, err := readRecord(op, dir, scope, name, version)
	if err != nil {
		return artifacts.Record{}, "", wrap(err)
	}
	return rec, dir, nil
}

// Get opens a version (0 for the latest) for verified reading.
func (s *Store) Get(ctx context.Context, scope artifacts.Scope, name string, version int64) (*artifacts.Reader, error) {
	return s.GetRange(ctx, scope, name, version, 0, -1)
}

// GetRange opens length bytes (-1: to the end) at offset of a version. The
// whole payload is hashed, so a range is returned only from a payload that
// matches its record.
func (s *Store) GetRange(ctx context.Context, scope artifacts.Scope, name string, version, offset, length int64) (*artifacts.Reader, error) {
	const op = "get"
	rec, dir, err := s.stat(ctx, op, scope, name, version)
	if err != nil {
		return nil, err
	}
	return openData(op, dir, rec, offset, length)
}

// OpenPayload opens, for verified reading, the payload of a record already
// read by Walk or a listing; the record is not read again.
func (s *Store) OpenPayload(ctx context.Context, rec artifacts.Record) (*artifacts.Reader, error) {
	const op = "get"
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return nil, err
	}
	dir, err := s.nameDir(op, rec.Scope, rec.Name)
	if err != nil {
		return nil, err
	}
	return openData(op, dir, rec, 0, -1)
}

// openData opens the payload of rec in its name directory dir, checks its
// size against the record before it yields a byte, and wraps it in a
// verifying Reader.
func openData(op, dir string, rec artifacts.Record, offset, length int64) (*artifacts.Reader, error) {
	corrupt := func(cause error, format string, args ...any) error {
		return artifacts.Errorf(artifacts.CodeCorrupt, op, cause, format, args...).With(rec.Scope, rec.Name, rec.Version)
	}
	f, err := os.Open(filepath.Join(dir, VersionFile(rec.Version, "data")))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, corrupt(nil, "payload is missing")
	}
	if err != nil {
		return nil, ioErr(op, err).With(rec.Scope, rec.Name, rec.Version)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, ioErr(op, err).With(rec.Scope, rec.Name, rec.Version)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, corrupt(nil, "payload is not a regular file")
	}
	if fi.Size() != rec.Size {
		f.Close()
		return nil, corrupt(nil, "payload has %d bytes, record says %d", fi.Size(), rec.Size)
	}
	return artifacts.NewReader(rec, f, offset, length, true)
}

// ListVersions returns a page of a name's published records.
func (s *Store) ListVersions(ctx context.Context, scope artifacts.Scope, name string, opts artifacts.ListOptions) (artifacts.VersionPage, error) {
	const op = "list versions"
	var page artifacts.VersionPage
	wrap := func(err error) error {
		var e *artifacts.Error
		if !errors.As(err, &e) {
			e = ioErr(op, err)
		}
		return e.With(scope, name, 0)
	}
	limit, err := artifacts.PageLimit(opts.Limit, s.opts.MaxPageLimit)
	if err != nil {
		return page, wrap(err)
	}
	var after int64
	if opts.Cursor != "" {
		after, err = strconv.ParseInt(opts.Cursor, 10, 64)
		if err != nil || after < 0 {
			return page, wrap(artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "version cursor %q is not a version number", opts.Cursor))
		}
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return page, wrap(err)
	}
	dir, err := s.nameDir(op, scope, name)
	if err != nil {
		return page, wrap(err)
	}
	sc, err := scanNameDir(dir, false)
	if err != nil {
		return page, wrap(err)
	}
	if len(sc.published) == 0 {
		return page, wrap(artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no published version"))
	}
	i, _ := slices.BinarySearch(sc.published, after+1)
	rest := sc.published[i:]
	for _, n := range rest {
		if len(page.Items) == limit {
			// More versions follow; the cursor is the last one returned.
			page.NextCursor = strconv.FormatInt(page.Items[len(page.Items)-1].Version, 10)
			break
		}
		rec, err := readRecord(op, dir, scope, name, n)
		if artifacts.IsNotFound(err) {
			continue // deleted since the scan
		}
		if err != nil {
			return artifacts.VersionPage{}, wrap(err)
		}
		page.Items = append(page.Items, rec)
	}
	return page, nil
}

// nameInfo is a name directory as ListNames sees it.
type nameInfo struct {
	dir      string
	name     string
	versions []int64
	latest   *artifacts.Record
	err      error
}

// ListNames returns a page of the scope's names.
func (s *Store) ListNames(ctx context.Context, scope artifacts.Scope, opts artifacts.ListOptions) (artifacts.NamePage, error) {
	const op = "list names"
	var page artifacts.NamePage
	wrap := func(err error) error {
		var e *artifacts.Error
		if !errors.As(err, &e) {
			e = ioErr(op, err)
		}
		return e.With(scope, "", 0)
	}
	if err := scope.Validate(); err != nil {
		return page, wrap(err)
	}
	limit, err := artifacts.PageLimit(opts.Limit, s.opts.MaxPageLimit)
	if err != nil {
		return page, wrap(err)
	}
	if opts.Cursor != "" {
		if err := artifacts.ValidateName(opts.Cursor); err != nil {
			return page, wrap(artifacts.Errorf(artifacts.CodeInvalidArgument, op, err, "name cursor"))
		}
	}
	scopeDir := filepath.Join(s.scopes, scope.Hash())
	namesDir := filepath.Join(scopeDir, NamesDir)
	for _, d := range []string{scopeDir, namesDir} {
		if err := checkDir(op, d, false); err != nil {
			if artifacts.IsNotFound(err) {
				return page, wrap(artifacts.Errorf(artifacts.CodeNotFound, op, nil, "scope has no artifacts"))
			}
			return page, wrap(err)
		}
	}
	infos, err := s.scanNames(ctx, namesDir, scope)
	if err != nil {
		return page, wrap(err)
	}
	if len(infos) == 0 {
		return page, wrap(artifacts.Errorf(artifacts.CodeNotFound, op, nil, "scope has no artifacts"))
	}
	slices.SortFunc(infos, func(a, b *nameInfo) int { return cmpString(a.name, b.name) })
	i, _ := slices.BinarySearchFunc(infos, opts.Cursor, func(a *nameInfo, c string) int { return cmpString(a.name, c) })
	if i < len(infos) && infos[i].name == opts.Cursor {
		i++
	}
	rest := infos[i:]
	if len(rest) > limit {
		rest = rest[:limit]
		page.NextCursor = rest[len(rest)-1].name
	}
	// Read the latest record of every name on the page that does not have it.
	for _, in := range rest {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return artifacts.NamePage{}, wrap(err)
		}
		if in.latest == nil {
			rec, err := readRecord(op, in.dir, scope, in.name, in.versions[len(in.versions)-1])
			if err != nil {
				return artifacts.NamePage{}, wrap(err)
			}
			in.latest = &rec
		}
		latest := *in.latest
		latest.Metadata = artifacts.CloneMetadata(latest.Metadata)
		page.Items = append(page.Items, artifacts.NameEntry{Name: in.name, Latest: latest, Versions: len(in.versions)})
	}
	return page, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dirState is what the store remembers of a name directory between
// listings. A directory's modification time changes whenever a version is
// reserved, published or deleted in it, so while it is unchanged the state
// still holds — provided the time was not so recent when the directory was
// read that a later change could carry the same coarse timestamp.
type dirState struct {
	mtime    time.Time
	stable   bool // mtime was older than racyWindow when the directory was read
	name     string
	versions []int64
	latest   *artifacts.Record
}

// racyWindow bounds the timestamp granularity of the filesystems a store
// lives on (ext4 and XFS tick in milliseconds, some network filesystems in
// seconds).
const racyWindow = 2 * time.Second

// maxRemembered bounds the memory the cache of directory states takes.
const maxRemembered = 200000

func stable(mtime, scanned time.Time) bool { return mtime.Before(scanned.Add(-racyWindow)) }

func (s *Store) remember(dir string, st dirState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.dirs) >= maxRemembered {
		clear(s.dirs)
	}
	s.dirs[dir] = st
}

// scanNames reads every name directory of a scope, in parallel: its
// published versions, and its name (from the cache of immutable hash-to-name
// mappings, or else from its latest record). Names with no published
// version are left out.
func (s *Store) scanNames(ctx context.Context, namesDir string, scope artifacts.Scope) ([]*nameInfo, error) {
	entries, err := os.ReadDir(namesDir)
	if err != nil {
		return nil, err
	}
	var infos []*nameInfo
	for _, e := range entries {
		if IsHash(e.Name()) {
			if e.Type()&fs.ModeSymlink != 0 || !e.IsDir() {
				return nil, artifacts.Errorf(artifacts.CodeUnsafeStore, "list names", nil, "%s is not a directory", filepath.Join(namesDir, e.Name()))
			}
			infos = append(infos, &nameInfo{dir: filepath.Join(namesDir, e.Name())})
		}
	}
	work := func(in *nameInfo) {
		fi, err := os.Lstat(in.dir)
		if err != nil {
			in.err = err
			return
		}
		mtime := fi.ModTime()
		s.mu.Lock()
		c, ok := s.dirs[in.dir]
		s.mu.Unlock()
		if ok && c.stable && c.mtime.Equal(mtime) {
			in.name, in.versions, in.latest = c.name, c.versions, c.latest
			return
		}
		scanned := time.Now()
		sc, err := scanNameDir(in.dir, false)
		if err != nil {
			in.err = err
			return
		}
		in.versions = sc.published
		if len(sc.published) == 0 {
			s.remember(in.dir, dirState{mtime: mtime, stable: stable(mtime, scanned), name: c.name})
			return
		}
		n := sc.published[len(sc.published)-1]
		if ok && c.latest != nil && c.latest.Version == n {
			in.name, in.latest = c.name, c.latest
		} else {
			rec, err := readRecord("list names", in.dir, scope, "", n)
			if err == nil && (rec.Scope != scope || rec.Version != n || artifacts.NameHash(rec.Name) != filepath.Base(in.dir)) {
				err = artifacts.Errorf(artifacts.CodeCorrupt, "list names", nil, "record %s belongs to %s %q v%d", filepath.Join(in.dir, VersionFile(n, "meta")), rec.Scope, rec.Name, rec.Version)
			}
			if artifacts.IsNotFound(err) { // deleted since the scan
				in.versions = nil
				return
			}
			if err != nil {
				in.err = err
				return
			}
			in.name, in.latest = rec.Name, &rec
		}
		s.remember(in.dir, dirState{mtime: mtime, stable: stable(mtime, scanned), name: in.name, versions: in.versions, latest: in.latest})
	}
	if err := parallel(ctx, infos, work); err != nil {
		return nil, err
	}
	out := infos[:0]
	for _, in := range infos {
		if in.err != nil {
			return nil, in.err
		}
		if len(in.versions) > 0 {
			out = append(out, in)
		}
	}
	return out, nil
}

// parallel runs work on every item with a few goroutines: the work is
// system calls, so more goroutines than processors keep the disk busy.
func parallel[T any](ctx context.Context, items []T, work func(T)) error {
	workers := min(len(items), 4*runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for _, it := range items {
			if err := artifacts.CheckContext(ctx, "scan"); err != nil {
				return err
			}
			work(it)
		}
		return nil
	}
	var next int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= int64(len(items)) {
					return
				}
				work(items[i])
			}
		}()
	}
	wg.Wait()
	return artifacts.CheckContext(ctx, "scan")
}

// Delete removes the selected published versions: each record is read and
// checked first, so a damaged record is reported, not guessed at; then the
// record is removed, then the payload. Reservations stay.
func (s *Store) Delete(ctx context.Context, scope artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	const op = "delete"
	wrap := func(err error) error {
		var e *artifacts.Error
		if !errors.As(err, &e) {
			e = ioErr(op, err)
		}
		return e.With(scope, name, sel.Version)
	}
	dir, err := s.nameDir(op, scope, name)
	if err != nil {
		return nil, wrap(err)
	}
	sc, err := scanNameDir(dir, false)
	if err != nil {
		return nil, wrap(err)
	}
	var targets []int64
	switch sel.Kind {
	case artifacts.SelectVersion:
		if sel.Version < 1 {
			return nil, wrap(artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "version %d is not positive", sel.Version))
		}
		if _, ok := slices.BinarySearch(sc.published, sel.Version); !ok {
			return nil, wrap(artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version"))
		}
		targets = []int64{sel.Version}
	case artifacts.SelectLatest:
		if len(sc.published) > 0 {
			targets = sc.published[len(sc.published)-1:]
		}
	case artifacts.SelectAll:
		targets = sc.published
	default:
		return nil, wrap(artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "unknown selector %q", sel.Kind))
	}
	if len(targets) == 0 {
		return nil, wrap(artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no published version"))
	}
	recs := make([]artifacts.Record, 0, len(targets))
	for _, n := range targets {
		rec, err := readRecord(op, dir, scope, name, n)
		if err != nil {
			return nil, wrap(err)
		}
		recs = append(recs, rec)
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return nil, wrap(err)
	}
	deleted := make([]artifacts.Record, 0, len(recs))
	for _, rec := range recs {
		if err := os.Remove(filepath.Join(dir, VersionFile(rec.Version, "meta"))); err != nil {
			if errors.Is(err, fs.ErrNotExist) { // a concurrent delete won
				continue
			}
			return deleted, wrap(err)
		}
		deleted = append(deleted, rec)
		if err := osutil.SyncDir(dir); err != nil {
			return deleted, wrap(err)
		}
		if err := os.Remove(filepath.Join(dir, VersionFile(rec.Version, "data"))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return deleted, wrap(err)
		}
	}
	if err := osutil.SyncDir(dir); err != nil {
		return deleted, wrap(err)
	}
	if len(deleted) == 0 {
		return nil, wrap(artifacts.Errorf(artifacts.CodeNotFound, op, nil, "deleted concurrently"))
	}
	return deleted, nil
}
