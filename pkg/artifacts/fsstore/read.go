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
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/internal/pool"
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
	names, err := readNames(dir)
	if err != nil {
		return nameScan{}, err
	}
	return scanNames(names, wantData), nil
}

// scanNames sorts the names listed in a name directory.
func scanNames(names []string, wantData bool) nameScan {
	var sc nameScan
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
	return sc
}

// nameDir returns the name directory of a scope and name (checked by
// artifacts.Store), refusing symbolic links on the way.
func (s *Store) nameDir(op string, scope artifacts.Scope, name string) (string, error) {
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
	return decodeRecordFile(op, path, b, err, scope, name, n)
}

// readRecordIn is readRecord for the name directory open as d (looking up
// the record's name in d alone).
func readRecordIn(op string, d *os.File, scope artifacts.Scope, name string, n int64) (artifacts.Record, error) {
	file := VersionFile(n, "meta")
	b, err := osutil.ReadFileMaxAt(d, file, artifacts.MaxRecordFileBytes)
	if errors.Is(err, osutil.ErrTooLarge) {
		err = errTooBig
	}
	return decodeRecordFile(op, filepath.Join(d.Name(), file), b, err, scope, name, n)
}

// decodeRecordFile decodes and checks the record read from path (b, or
// the error reading it gave).
func decodeRecordFile(op, path string, b []byte, err error, scope artifacts.Scope, name string, n int64) (artifacts.Record, error) {
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

// readSmall reads a record file, refusing one past the layout's limit.
func readSmall(path string) ([]byte, error) {
	b, err := osutil.ReadFileMax(path, artifacts.MaxRecordFileBytes)
	if errors.Is(err, osutil.ErrTooLarge) {
		return nil, errTooBig
	}
	return b, err
}

var errTooBig = osutil.ErrTooLarge

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

// Stat returns the record of a version (artifacts.Latest for the latest).
func (s *Store) Stat(ctx context.Context, scope artifacts.Scope, name string, version int64) (artifacts.Record, error) {
	rec, _, err := s.stat(ctx, "stat", scope, name, version)
	return rec, err
}

func (s *Store) stat(ctx context.Context, op string, scope artifacts.Scope, name string, version int64) (artifacts.Record, string, error) {
	wrap := func(err error) error { return ioErr(op, err).With(scope, name, version) }
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.Record{}, "", wrap(err)
	}
	dir, err := s.nameDir(op, scope, name)
	if err != nil {
		return artifacts.Record{}, "", wrap(err)
	}
	if version == artifacts.Latest {
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

// Get opens a version (artifacts.Latest for the latest) for verified reading.
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
// read by Walk or a listing; the record is not read again. Where it can,
// it opens the file in one system call that refuses a symbolic link
// anywhere on the way (see openPayloadFast) instead of checking each
// directory of the path first.
func (s *Store) OpenPayload(ctx context.Context, rec artifacts.Record) (*artifacts.Reader, error) {
	const op = "get"
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.scopes, rec.Scope.Hash(), NamesDir, artifacts.NameHash(rec.Name))
	if f, size, ok := openPayloadFast(filepath.Join(dir, VersionFile(rec.Version, "data"))); ok {
		return payloadReader(op, rec, f, size, 0, -1)
	}
	dir, err := s.nameDir(op, rec.Scope, rec.Name)
	if err != nil {
		return nil, err
	}
	return openData(op, dir, rec, 0, -1)
}

// payloadBody is an open payload file.
type payloadBody interface {
	io.ReadCloser
	io.ReaderAt
}

// openData opens the payload of rec in its name directory dir, checks its
// size against the record before it yields a byte, and wraps it in a
// verifying Reader.
func openData(op, dir string, rec artifacts.Record, offset, length int64) (*artifacts.Reader, error) {
	corrupt := func(cause error, format string, args ...any) error {
		return artifacts.Errorf(artifacts.CodeCorrupt, op, cause, format, args...).With(rec.Scope, rec.Name, rec.Version)
	}
	path := filepath.Join(dir, VersionFile(rec.Version, "data"))
	if f, size, ok := openPayloadFast(path); ok {
		return payloadReader(op, rec, f, size, offset, length)
	}
	// Opened without following a symbolic link or blocking on a named
	// pipe, and checked to be a regular file before a byte is read.
	f, err := osutil.OpenRegular(path)
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
	return payloadReader(op, rec, f, fi.Size(), offset, length)
}

// payloadReader checks the size of the open payload f against its record
// before it yields a byte, and wraps it in a verifying Reader.
func payloadReader(op string, rec artifacts.Record, f payloadBody, size, offset, length int64) (*artifacts.Reader, error) {
	if size != rec.Size {
		f.Close()
		return nil, artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "payload has %d bytes, record says %d", size, rec.Size).With(rec.Scope, rec.Name, rec.Version)
	}
	r, err := artifacts.NewReader(rec, f, offset, length, true)
	if err != nil {
		return nil, err
	}
	// A published payload is never rewritten (a new version is a new file
	// renamed into place; a delete unlinks it, which an open file
	// survives), so the open file reads the bytes the Reader verifies.
	r.OfferReaderAt(f)
	return r, nil
}

// ListVersions returns a page of a name's published records.
func (s *Store) ListVersions(ctx context.Context, scope artifacts.Scope, name string, opts artifacts.ListOptions) (artifacts.VersionPage, error) {
	const op = "list versions"
	var page artifacts.VersionPage
	wrap := func(err error) error { return ioErr(op, err).With(scope, name, artifacts.NoVersion) }
	limit, after := opts.PageSize(), artifacts.VersionCursor(opts)
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
	listed, last := 0, int64(0) // versions on the page, broken ones included
	for _, n := range rest {
		if listed == limit {
			// More versions follow; the cursor is the last one returned.
			page.NextCursor = strconv.FormatInt(last, 10)
			break
		}
		listed, last = listed+1, n
		rec, err := readRecord(op, dir, scope, name, n)
		if artifacts.IsNotFound(err) {
			listed--
			continue // deleted since the scan
		}
		if err != nil && opts.IncludeBroken && artifacts.ProblemCode(err) == artifacts.CodeCorrupt {
			b, berr := brokenVersion(dir, n, err)
			if artifacts.IsNotFound(berr) {
				listed--
				continue
			}
			if berr != nil {
				return artifacts.VersionPage{}, wrap(berr)
			}
			page.Broken = append(page.Broken, b)
			continue
		}
		if err != nil {
			return artifacts.VersionPage{}, wrap(err)
		}
		if opts.IncludeBroken {
			if b, bad, err := checkPayloadSize(dir, rec); err != nil {
				return artifacts.VersionPage{}, wrap(err)
			} else if bad {
				page.Broken = append(page.Broken, b)
			}
		}
		page.Items = append(page.Items, rec)
	}
	return page, nil
}

// nameInfo is a name directory as ListNames sees it. versions and latest
// may be unknown (nil) for a name that is known to be published but is not
// on the page being listed.
type nameInfo struct {
	dir       string
	name      string
	published bool
	mtime     time.Time // of the directory, read before anything in it
	stable    bool
	versions  []int64
	latest    *artifacts.Record
	err       error
}

// ListNames returns a page of the scope's names.
func (s *Store) ListNames(ctx context.Context, scope artifacts.Scope, opts artifacts.ListOptions) (artifacts.NamePage, error) {
	const op = "list names"
	var page artifacts.NamePage
	wrap := func(err error) error { return ioErr(op, err).With(scope, "", artifacts.NoVersion) }
	limit := opts.PageSize()
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
	// List the versions and read the latest record of every name on the
	// page that does not have them yet.
	if err := parallel(ctx, rest, func(in *nameInfo) { in.err = s.complete(in, scope) }); err != nil {
		return artifacts.NamePage{}, wrap(err)
	}
	for _, in := range rest {
		if in.err != nil {
			return artifacts.NamePage{}, wrap(in.err)
		}
		if len(in.versions) == 0 {
			continue // every version was deleted since the scan
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
	mtime     time.Time
	stable    bool // mtime was older than racyWindow when the directory was read
	name      string
	published bool              // the name has at least one published version
	versions  []int64           // nil when not listed yet
	latest    *artifacts.Record // nil when not read yet
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
	d, err := osutil.OpenDir(namesDir)
	if err != nil {
		return nil, err
	}
	entries, err := d.ReadDir(-1) // unsorted: the names are sorted, not the hashes
	d.Close()
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
		s.mu.Lock()
		c, ok := s.dirs[in.dir]
		s.mu.Unlock()
		if !ok {
			// First sight of the directory (of every one, in a new
			// process): most names still have their first version, whose
			// record names the directory and proves a published version.
			// Which versions exist is read later, for the names on the page.
			rec, err := readRecord("list names", in.dir, scope, "", 1)
			if err == nil && belongs(rec, scope, in.dir, 1) == nil {
				in.name, in.published = rec.Name, true
				s.remember(in.dir, dirState{name: in.name}) // no time: not a state to reuse
				return
			}
			// Gone or damaged: the latest version decides, as below.
		}
		if err := in.stat(); err != nil {
			in.err = err
			return
		}
		if ok && c.stable && c.mtime.Equal(in.mtime) {
			in.name, in.published, in.versions, in.latest = c.name, c.published, c.versions, c.latest
			return
		}
		if ok && c.name != "" && exists(filepath.Join(in.dir, VersionFile(1, "meta"))) {
			in.name, in.published = c.name, true
			s.remember(in.dir, dirState{mtime: in.mtime, stable: in.stable, name: in.name, published: true})
			return
		}
		if err := s.complete(in, scope); err != nil {
			in.err = err
		}
	}
	if err := parallel(ctx, infos, work); err != nil {
		return nil, err
	}
	out := infos[:0]
	for _, in := range infos {
		if in.err != nil {
			return nil, in.err
		}
		if in.published {
			out = append(out, in)
		}
	}
	return out, nil
}

// stat reads the directory's modification time, before anything in it is
// read, and whether it is old enough to remember what is read.
func (in *nameInfo) stat() error {
	fi, err := os.Lstat(in.dir)
	if err != nil {
		return err
	}
	in.mtime, in.stable = fi.ModTime(), stable(fi.ModTime(), time.Now())
	return nil
}

// belongs checks that rec, read from version n of the name directory dir,
// is that version of a name in scope that hashes to dir.
func belongs(rec artifacts.Record, scope artifacts.Scope, dir string, n int64) error {
	if rec.Scope != scope || rec.Version != n || artifacts.NameHash(rec.Name) != filepath.Base(dir) {
		return artifacts.Errorf(artifacts.CodeCorrupt, "list names", nil, "record %s belongs to %s %q v%d", filepath.Join(dir, VersionFile(n, "meta")), rec.Scope, rec.Name, rec.Version)
	}
	return nil
}

// complete lists the name directory of in, when its versions are not
// known yet, and reads its latest record, then remembers what it found
// under the modification time read before.
func (s *Store) complete(in *nameInfo, scope artifacts.Scope) error {
	if in.versions != nil && in.latest != nil {
		return nil
	}
	if in.mtime.IsZero() {
		if err := in.stat(); err != nil {
			return err
		}
	}
	sc, err := scanNameDir(in.dir, false)
	if err != nil {
		return err
	}
	in.versions = sc.published
	if len(sc.published) == 0 {
		in.published, in.latest = false, nil
		s.remember(in.dir, dirState{mtime: in.mtime, stable: in.stable, name: in.name})
		return nil
	}
	n := sc.published[len(sc.published)-1]
	if in.latest == nil || in.latest.Version != n {
		rec, err := readRecord("list names", in.dir, scope, "", n)
		if artifacts.IsNotFound(err) { // deleted since the listing
			in.versions, in.published, in.latest = nil, false, nil
			return nil
		}
		if err == nil {
			err = belongs(rec, scope, in.dir, n)
		}
		if err != nil {
			return err
		}
		in.latest = &rec
	}
	in.name, in.published = in.latest.Name, true
	s.remember(in.dir, dirState{mtime: in.mtime, stable: in.stable, name: in.name, published: true, versions: in.versions, latest: in.latest})
	return nil
}

// parallel runs work on every item with a few goroutines: the work is
// system calls, so more goroutines than processors keep the disk busy.
func parallel[T any](ctx context.Context, items []T, work func(T)) error {
	pool.Each(ctx, 4*runtime.GOMAXPROCS(0), items, func(it T) error { work(it); return nil })
	return artifacts.CheckContext(ctx, "scan")
}

// Delete removes the selected published versions: each record is read and
// checked first, so a damaged record is reported, not guessed at; then the
// record is removed, then the payload. Reservations stay.
func (s *Store) Delete(ctx context.Context, scope artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	const op = "delete"
	wrap := func(err error) error { return ioErr(op, err).With(scope, name, sel.ErrorVersion()) }
	dir, err := s.nameDir(op, scope, name)
	if err != nil {
		return nil, wrap(err)
	}
	sc, err := scanNameDir(dir, false)
	if err != nil {
		return nil, wrap(err)
	}
	targets, err := sel.Resolve(op, sc.published)
	if err != nil {
		return nil, wrap(err)
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
