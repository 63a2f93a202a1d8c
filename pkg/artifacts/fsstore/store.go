// Package fsstore is the filesystem adapter of the artifact store. It reads
// and writes, byte for byte, the v1 layout of the Erlang ADK adapter
// adk_artifact_fs: hashed scope and name directories, capacity slots,
// exclusive reservations, staged writes, and the rename of the record as the
// only publication point. Beyond the Erlang adapter it fsyncs directories,
// creates files 0600 and directories 0700, refuses symbolic links in place
// of directories, and streams payloads in constant memory.
//
// Many goroutines and many processes may use one root at once: exclusive
// creates decide every race, so no lock file is needed.
package fsstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Options configure a Store. The zero value gives the layout's defaults.
type Options struct {
	// MaxArtifactBytes is the largest payload Put accepts (default 64 MiB).
	MaxArtifactBytes int64
	// MaxScanEntries sets the lifetime ceilings (default 10,000, at least 3).
	MaxScanEntries int
	// MaxPageLimit is the largest page limit (default 1000).
	MaxPageLimit int
	// Now is the clock for created_at (default time.Now).
	Now func() time.Time
	// UncompressedRecords writes records without zlib compression. By
	// default records are written as term_to_binary(M, [compressed]), as the
	// Erlang adapter does.
	UncompressedRecords bool
}

// Store is a filesystem artifact store rooted at a directory that holds
// v1/. It implements artifacts.Store, artifacts.ScopeLister and
// artifacts.Walker.
type Store struct {
	root   string
	scopes string // root/v1/scopes
	opts   Options

	mu       sync.Mutex
	dirs     map[string]dirState       // name directory path -> what listing it told
	slots    map[string]map[int]string // slot directory -> K -> the hash its slot file holds
	slotHigh map[string]int            // slot directory -> highest slot seen
}

var (
	_ artifacts.Driver        = (*Store)(nil)
	_ artifacts.ScopeLister   = (*Store)(nil)
	_ artifacts.Walker        = (*Store)(nil)
	_ artifacts.PayloadOpener = (*Store)(nil)
)

// Open returns a Store for root, which must be an existing real directory
// (not a symbolic link). root/v1 and root/v1/scopes, when they exist, must
// be real directories too; they are created by the first Put.
func Open(root string, opts Options) (*Store, error) {
	if opts.MaxArtifactBytes <= 0 {
		opts.MaxArtifactBytes = artifacts.DefaultMaxArtifact
	}
	if opts.MaxScanEntries == 0 {
		opts.MaxScanEntries = artifacts.DefaultMaxScanEntries
	}
	if opts.MaxScanEntries < artifacts.MinMaxScanEntries {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "open", nil, "max scan entries %d is below %d", opts.MaxScanEntries, artifacts.MinMaxScanEntries)
	}
	if opts.MaxPageLimit <= 0 {
		opts.MaxPageLimit = artifacts.DefaultMaxPageLimit
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "open", err, "store root %q", root)
	}
	s := &Store{root: abs, scopes: filepath.Join(abs, LayoutDir, ScopesDir), opts: opts, dirs: map[string]dirState{}, slots: map[string]map[int]string{}, slotHigh: map[string]int{}}
	if err := checkDir("open", abs, false); err != nil {
		return nil, err
	}
	for _, d := range []string{filepath.Join(abs, LayoutDir), s.scopes} {
		if err := checkDir("open", d, true); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Root returns the store's root directory.
func (s *Store) Root() string { return s.root }

// ScopesPath returns root/v1/scopes.
func (s *Store) ScopesPath() string { return s.scopes }

// ScopeDir returns the directory of a scope.
func (s *Store) ScopeDir(scope artifacts.Scope) string {
	return filepath.Join(s.scopes, scope.Hash())
}

// NameDir returns the directory of a name in a scope.
func (s *Store) NameDir(scope artifacts.Scope, name string) string {
	return filepath.Join(s.scopes, scope.Hash(), NamesDir, artifacts.NameHash(name))
}

// Capabilities describes the adapter.
func (s *Store) Capabilities() artifacts.Capabilities {
	return artifacts.Capabilities{
		Name:             "fs",
		Layout:           LayoutName,
		MaxArtifactBytes: s.opts.MaxArtifactBytes,
		MaxPageLimit:     s.opts.MaxPageLimit,
		MaxScanEntries:   s.opts.MaxScanEntries,
		VerifiedRanges:   true,
		Durable:          true,
		FirstVersion:     1,
		StoresDigest:     true,
		MaxRecordBytes:   artifacts.MaxRecordFileBytes,
		MaxNameBytes:     artifacts.MaxNameBytes,
	}
}

// checkDir refuses a path that is a symbolic link or not a directory. With
// missingOK a path that does not exist passes.
func checkDir(op, path string, missingOK bool) error {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is a symbolic link, not a directory", path)
	case err == nil && !fi.IsDir():
		return artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is not a directory", path)
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist) && missingOK:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return artifacts.Errorf(artifacts.CodeNotFound, op, err, "store directory %s does not exist", path)
	}
	return ioErr(op, err)
}

// ioErr classifies an operating-system error.
func ioErr(op string, err error) *artifacts.Error {
	var e *artifacts.Error
	if errors.As(err, &e) {
		return e
	}
	var nr *osutil.NotRegularError
	var nd *osutil.NotDirError
	switch {
	case errors.As(err, &nr):
		return artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s (the layout holds only regular files; it was not read)", nr.Error())
	case errors.As(err, &nd):
		return artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s", nd.Error())
	case errors.Is(err, fs.ErrPermission):
		return artifacts.Errorf(artifacts.CodePermission, op, err, "")
	case errors.Is(err, fs.ErrNotExist):
		return artifacts.Errorf(artifacts.CodeNotFound, op, err, "")
	}
	return artifacts.Errorf(artifacts.CodeIO, op, err, "")
}

// token returns 64 random hex characters for a staged file name.
func token() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeExclusive creates path exclusively (0600), writes b and fsyncs it.
func writeExclusive(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if len(b) > 0 {
		if _, err = f.Write(b); err != nil {
			f.Close()
			os.Remove(path)
			return err
		}
	}
	if err = f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// Put streams r into a new version of name in scope.
func (s *Store) Put(ctx context.Context, scope artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions) (artifacts.Record, error) {
	const op = "put"
	rec, err := s.put(ctx, scope, name, r, opts)
	if err != nil {
		return artifacts.Record{}, ioErr(op, err).With(scope, name, rec.Version)
	}
	return rec, nil
}

func (s *Store) put(ctx context.Context, scope artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions) (artifacts.Record, error) {
	const op = "put"
	mime := opts.MIMEType // checked by artifacts.Store
	if mime == "" {
		mime = artifacts.DefaultMIMEType
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.Record{}, err
	}
	scopeHash := scope.Hash()
	namesDir := filepath.Join(s.scopes, scopeHash, NamesDir)
	nameHash := artifacts.NameHash(name)
	dir := filepath.Join(namesDir, nameHash)
	// The common case, a name that exists: three checks that no directory
	// on the way is a symbolic link, and nothing to create.
	if !realDirs(filepath.Dir(namesDir), namesDir, dir) {
		if err := s.ensureScopes(); err != nil {
			return artifacts.Record{}, err
		}
		cap2 := s.opts.MaxScanEntries / 2
		if err := s.ensureSlotted(s.scopes, scopeHash, ScopeSlotPrefix, cap2, artifacts.CodeScopeCapacity, NamesDir); err != nil {
			return artifacts.Record{}, err
		}
		if err := s.ensureSlotted(namesDir, nameHash, NameSlotPrefix, cap2, artifacts.CodeNameCapacity, ""); err != nil {
			return artifacts.Record{}, err
		}
	}
	version, err := s.reserve(dir)
	if err != nil {
		return artifacts.Record{}, err
	}
	rec := artifacts.Record{Scope: scope, Name: name, Version: version, MIMEType: mime, Metadata: opts.Metadata}
	if rec.Metadata == nil {
		rec.Metadata = artifacts.Metadata{}
	}
	err = s.stage(ctx, dir, &rec, r)
	return rec, err
}

// readNames lists the names in a directory, unsorted: cheaper than
// os.ReadDir for the large slot directories, which need only names.
func readNames(dir string) ([]string, error) {
	d, err := osutil.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// realDirs reports whether every path is a directory, not a symbolic link.
func realDirs(paths ...string) bool {
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// ensureScopes creates root/v1/scopes when missing, refusing symbolic links.
func (s *Store) ensureScopes() error {
	v1 := filepath.Join(s.root, LayoutDir)
	for _, d := range []string{v1, s.scopes} {
		if err := os.Mkdir(d, 0o700); err == nil {
			if err := osutil.SyncDir(filepath.Dir(d)); err != nil {
				return ioErr("put", err)
			}
		} else if !errors.Is(err, fs.ErrExist) {
			return ioErr("put", err)
		}
		if err := checkDir("put", d, false); err != nil {
			return err
		}
	}
	return nil
}

// ensureSlotted makes sure parent/hash exists as a directory (with sub, if
// given, inside it), claiming a capacity slot first when it is new.
//
// The slot protocol is the Erlang adapter's: the lowest free K in 1..limit,
// claimed by an exclusive create of prefixK.reserve holding the hash. A slot
// whose directory was never made (a crash between the two steps) is an
// orphan; a later put of the same hash reuses it instead of taking another.
// Orphans exist only when slots outnumber directories, so slot contents are
// read only then.
func (s *Store) ensureSlotted(parent, hash, prefix string, limit int, capCode artifacts.Code, sub string) error {
	const op = "put"
	dir := filepath.Join(parent, hash)
	fi, err := os.Lstat(dir)
	switch {
	case err == nil && (fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir()):
		return checkDir(op, dir, false) // says what it is
	case err == nil && sub != "":
		return ensureSub(dir, sub)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return ioErr(op, err)
	}
	claimed := false
	if k, ok := s.denseSlots(parent, prefix); ok {
		// Slots 1..k exist and each has its directory: no orphan to
		// look for, and the next slot is k+1 unless a writer takes it.
		if k >= limit {
			return artifacts.Errorf(capCode, op, nil, "%d of %d slots used in %s", k, limit, parent)
		}
		if claimed, err = s.claimSlot(parent, prefix, hash, k+1, limit, nil); err != nil {
			return err
		}
	}
	if !claimed {
		names, err := readNames(parent)
		if err != nil {
			return ioErr(op, err)
		}
		used := make(map[int]bool, len(names)/2+1)
		dirs, high := 0, 0
		for _, n := range names {
			if k, ok := ParseSlot(n, prefix); ok {
				used[k] = true
				high = max(high, k)
			} else if IsHash(n) {
				dirs++ // a hash-named entry is a directory in a sound store; using one checks it
			}
		}
		s.noteSlots(parent, high)
		claimed = s.ownsOrphan(parent, hash, prefix, used, dirs)
		if dirs >= limit && !claimed {
			return artifacts.Errorf(capCode, op, nil, "%d of %d slots used in %s", dirs, limit, parent)
		}
		if !claimed {
			if _, err := s.claimSlot(parent, prefix, hash, 1, limit, used); err != nil {
				return err
			}
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return ioErr(op, err)
	}
	if err := checkDir(op, dir, false); err != nil {
		return err
	}
	if err := osutil.SyncDir(parent); err != nil {
		return ioErr(op, err)
	}
	if sub != "" {
		return ensureSub(dir, sub)
	}
	return nil
}

// claimSlot claims the lowest free slot from k on (skipping the ones in
// used) by creating its file exclusively with hash inside.
func (s *Store) claimSlot(parent, prefix, hash string, k, limit int, used map[int]bool) (bool, error) {
	for ; ; k++ {
		if k > limit {
			return false, artifacts.Errorf(capCodeOf(prefix), "put", nil, "all %d slots used in %s", limit, parent)
		}
		if used[k] {
			continue
		}
		err := writeExclusive(filepath.Join(parent, SlotFile(prefix, k)), []byte(hash))
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return false, ioErr("put", err)
		}
		s.noteSlots(parent, k)
		return true, nil
	}
}

func capCodeOf(prefix string) artifacts.Code {
	if prefix == ScopeSlotPrefix {
		return artifacts.CodeScopeCapacity
	}
	return artifacts.CodeNameCapacity
}

// noteSlots records that slots 1..k exist in parent (slots are claimed
// lowest first and never removed).
func (s *Store) noteSlots(parent string, k int) {
	s.mu.Lock()
	if k > s.slotHigh[parent] {
		s.slotHigh[parent] = k
	}
	s.mu.Unlock()
}

// denseSlots returns k when parent holds exactly the slots 1..k and k
// directories, with no listing: the highest slot is found from the last
// one this Store saw by probing upwards, and the directories are counted
// by the parent's link count (2 plus one per subdirectory on ext4, XFS and
// tmpfs). ok is false when that cannot be told — no slot seen yet, a file
// system that does not count subdirectories in links, or fewer directories
// than slots (an orphan slot, or a writer between its slot and its
// directory) — and the caller lists the directory instead.
func (s *Store) denseSlots(parent, prefix string) (int, bool) {
	s.mu.Lock()
	k := s.slotHigh[parent]
	s.mu.Unlock()
	if k == 0 {
		return 0, false
	}
	for {
		_, err := os.Lstat(filepath.Join(parent, SlotFile(prefix, k+1)))
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return 0, false
		}
		k++
	}
	s.noteSlots(parent, k)
	fi, err := os.Lstat(parent)
	if err != nil {
		return 0, false
	}
	links, ok := osutil.Links(fi)
	if !ok || links < 2 || int(links-2) != k {
		return 0, false
	}
	return k, true
}

// ownsOrphan reports whether a slot in parent already holds hash. Slot
// files never change once written and are never removed, so each is read
// at most once per Store: a crash that leaves an orphan slot costs the
// next new name one read of every slot, not every new name after it.
func (s *Store) ownsOrphan(parent, hash, prefix string, used map[int]bool, dirs int) bool {
	if len(used) <= dirs {
		return false
	}
	s.mu.Lock()
	known := s.slots[parent]
	if known == nil {
		known = map[int]string{}
		s.slots[parent] = known
	}
	var unread []int
	for k := range used {
		if h, ok := known[k]; ok {
			if h == hash {
				s.mu.Unlock()
				return true
			}
		} else {
			unread = append(unread, k)
		}
	}
	s.mu.Unlock()
	found := false
	for _, k := range unread {
		b, err := osutil.ReadFileMax(filepath.Join(parent, SlotFile(prefix, k)), 64)
		if err != nil || !IsHash(string(b)) {
			continue // being written: read it again next time
		}
		s.mu.Lock()
		known[k] = string(b)
		s.mu.Unlock()
		if string(b) == hash {
			found = true
		}
	}
	return found
}

func ensureSub(dir, sub string) error {
	p := filepath.Join(dir, sub)
	if err := os.Mkdir(p, 0o700); err == nil {
		if err := osutil.SyncDir(dir); err != nil {
			return ioErr("put", err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return ioErr("put", err)
	}
	return checkDir("put", p, false)
}

// reserve takes the next version number in a name directory by creating
// v-N.reserve exclusively.
func (s *Store) reserve(dir string) (int64, error) {
	const op = "put"
	limit := s.opts.MaxScanEntries / 3
	names, err := readNames(dir)
	if err != nil {
		return 0, ioErr(op, err)
	}
	var high int64
	count := 0
	for _, name := range names {
		if k, n := ParseVersionFile(name); k == KindReserve {
			count++
			high = max(high, n)
		}
	}
	for n := high + 1; ; n++ {
		if count >= limit {
			return 0, artifacts.Errorf(artifacts.CodeVersionCapacity, op, nil, "%d of %d reservations used", count, limit)
		}
		err := writeExclusive(filepath.Join(dir, VersionFile(n, "reserve")), nil)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return 0, ioErr(op, err)
		}
		count++
	}
}

// stage writes the payload and the record of a reserved version and
// publishes it. On failure it removes what it staged; the reservation
// stays.
func (s *Store) stage(ctx context.Context, dir string, rec *artifacts.Record, r io.Reader) (err error) {
	const op = "put"
	dataTmp := filepath.Join(dir, VersionFile(rec.Version, "data")+TmpMarker+token())
	dataPath := filepath.Join(dir, VersionFile(rec.Version, "data"))
	published := false
	defer func() {
		if err != nil && !published {
			os.Remove(dataTmp)
			os.Remove(dataPath)
		}
	}()
	f, err := os.OpenFile(dataTmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return ioErr(op, err)
	}
	h := sha256.New()
	n, err := copyLimited(ctx, io.MultiWriter(f, h), r, s.opts.MaxArtifactBytes)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	rec.Size = n
	rec.Digest = artifacts.DigestHex(h.Sum(nil))
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return err
	}
	if err := os.Rename(dataTmp, dataPath); err != nil {
		return ioErr(op, err)
	}
	if err := osutil.SyncDir(dir); err != nil {
		return ioErr(op, err)
	}
	rec.CreatedAt = s.opts.Now().UnixMilli()
	var b []byte
	if s.opts.UncompressedRecords {
		b, err = artifacts.EncodeRecord(*rec)
	} else {
		b, err = artifacts.EncodeRecordCompressed(*rec)
	}
	if err != nil {
		return err
	}
	metaTmp := filepath.Join(dir, VersionFile(rec.Version, "meta")+TmpMarker+token())
	if err := writeExclusive(metaTmp, b); err != nil {
		return ioErr(op, err)
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		os.Remove(metaTmp)
		return err
	}
	if err := os.Rename(metaTmp, filepath.Join(dir, VersionFile(rec.Version, "meta"))); err != nil {
		os.Remove(metaTmp)
		return ioErr(op, err)
	}
	published = true
	if err := osutil.SyncDir(dir); err != nil {
		return ioErr(op, err)
	}
	return nil
}

// copyLimited copies r to w, failing with CodeTooLarge past limit bytes and
// with the context's error when it is done.
func copyLimited(ctx context.Context, w io.Writer, r io.Reader, limit int64) (int64, error) {
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)
	buf := *bufp
	var n int64
	for {
		if err := artifacts.CheckContext(ctx, "put"); err != nil {
			return n, err
		}
		m, rerr := r.Read(buf)
		if m > 0 {
			if n+int64(m) > limit {
				return n, artifacts.Errorf(artifacts.CodeTooLarge, "put", nil, "payload exceeds %d bytes", limit)
			}
			if _, err := w.Write(buf[:m]); err != nil {
				return n, ioErr("put", err)
			}
			n += int64(m)
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			if err := artifacts.CheckContext(ctx, "put"); err != nil {
				return n, err
			}
			return n, artifacts.Errorf(artifacts.CodeIO, "put", rerr, "reading the payload")
		}
	}
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}
