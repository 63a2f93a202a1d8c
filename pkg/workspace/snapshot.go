package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// SnapshotOptions configure a snapshot.
type SnapshotOptions struct {
	// Progress, if set, is called after each file with the running number
	// of files and bytes archived.
	Progress func(files int, bytes int64)
	// Format overrides Options.SnapshotFormat for this snapshot.
	Format SnapshotFormat
	// Turn labels an incremental snapshot (an agent's turn); optional.
	Turn string
}

// SnapshotResult describes a published snapshot.
type SnapshotResult struct {
	// Scope is the session scope the snapshot was put in.
	Scope artifacts.Scope
	// Version is the published version of SnapshotName; when Unchanged,
	// the existing version that already holds the tree.
	Version int64
	// Unchanged is true when the tree is the one the latest version
	// already holds (nothing was written, no version number was used).
	Unchanged bool
	// Files, Dirs and Bytes count the regular files, directories and file
	// bytes archived.
	Files int
	Dirs  int
	Bytes int64
	// Skipped counts the entries left out (len(Omitted)).
	Skipped int
	// Omitted lists every entry left out because a snapshot cannot hold
	// it: symbolic links, FIFOs, sockets and devices. The version holds
	// the rest of the tree; a workspace with omissions must not be removed
	// on the strength of its snapshot.
	Omitted []Omission
	// Record is the store's record of the version (size and digest of the
	// archive, or of the manifest).
	Record artifacts.Record
	// Format is the format written (or found unchanged): FormatZip, with
	// Version a version of SnapshotName, or FormatIncremental, with
	// Checkpoint the manifest (Version is its version).
	Format     SnapshotFormat
	Checkpoint checkpoint.Ref
	// AddedBytes is what an incremental snapshot stored in packs.
	AddedBytes int64
}

// HydrateOptions configure a hydration.
type HydrateOptions struct {
	// Progress, if set, is called after each file with the running number
	// of files and bytes extracted.
	Progress func(files int, bytes int64)
	// Force replaces a workspace holding work that no snapshot has (see
	// OverwriteError).
	Force bool
	// Checkpoint, when its Name is set, hydrates that incremental
	// snapshot (the version argument must be artifacts.Latest).
	Checkpoint checkpoint.Ref
	// Paths, for HydrateTo from an incremental snapshot only, restores
	// just these files and directories (with the directories above
	// them). Hydrate refuses it: a workspace is replaced whole.
	Paths []string
}

// HydrateResult describes a hydration.
type HydrateResult struct {
	// Scope is the session scope the snapshot came from.
	Scope artifacts.Scope
	// Version is the version hydrated.
	Version int64
	// Files, Dirs and Bytes count what was extracted.
	Files int
	Dirs  int
	Bytes int64
	// Dir is the directory the version was extracted into.
	Dir string
	// Record is the store's record of the snapshot.
	Record artifacts.Record
	// Format is the format hydrated from: FormatZip (Version is a version
	// of SnapshotName) or FormatIncremental (Checkpoint is the manifest).
	Format     SnapshotFormat
	Checkpoint checkpoint.Ref
}

// Snapshot zips the workspace (without the index) and puts it as a new
// version of SnapshotName in the session scope. Entries a zip cannot hold
// (symbolic links, FIFOs, sockets, devices) are left out and listed in
// SnapshotResult.Omitted. When the tree is the one the latest version
// already holds, nothing is written: the result says Unchanged and names
// that version. The archive streams through a pipe into Store.Put, never
// whole in memory; the result is returned only once the store has
// published the version. Confined calls wait while the snapshot runs.
func (w *Workspace) Snapshot(ctx context.Context, opts SnapshotOptions) (SnapshotResult, error) {
	const op = "workspace snapshot"
	if err := w.m.needStore(op); err != nil {
		return SnapshotResult{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.root == nil {
		return SnapshotResult{}, scopeError(artifacts.CodeInvalidArgument, op, &w.scope, nil, "workspace is closed")
	}
	w.stmu.Lock()
	w.dirty = false
	ix := w.index
	seq := w.changes
	w.stmu.Unlock()
	res, err := w.m.snapshotRoot(ctx, w.root, w.scope, &ix, opts)
	if err != nil {
		w.stmu.Lock()
		w.dirty = true
		w.stmu.Unlock()
		return res, err
	}
	w.stmu.Lock()
	w.index = ix
	w.stmu.Unlock()
	w.commits.published(seq)
	return res, nil
}

var errSnapshotAborted = errors.New("snapshot aborted: the store stopped reading")

// snapshotRoot snapshots the tree under root unless the index ix (nil when
// the directory has none) shows it is the latest version's tree. With an
// index it records the version and the tree's state in it.
func (m *Manager) snapshotRoot(ctx context.Context, root *os.Root, scope artifacts.Scope, ix *Index, opts SnapshotOptions) (SnapshotResult, error) {
	const op = "workspace snapshot"
	f, err := m.snapshotFormat(opts)
	if err != nil {
		return SnapshotResult{}, err
	}
	// One scan serves the auto format's choice, the zip's size check and
	// the index's tree state; an incremental snapshot without an index
	// needs none.
	var before treeScan
	if f != FormatIncremental || ix != nil {
		if before, err = scanTree(root); err != nil {
			return SnapshotResult{}, osError(op, &scope, ".", err)
		}
	}
	auto := f == FormatAuto
	if auto {
		f = m.autoFormat(before.Bytes)
	}
	if f == FormatIncremental {
		return m.snapshotIncremental(ctx, root, scope, ix, opts, before)
	}
	// put writes the zip; auto's choice of a zip gives way to an
	// incremental snapshot once the zip's name is out of version numbers
	// (the layout's lifetime ceiling, which pruning does not give back),
	// so that a long session's snapshots do not all fail from then on. A
	// full name refuses the Put before it reads a byte.
	put := func() (SnapshotResult, error) {
		res, err := m.putSnapshot(ctx, root, scope, opts, before)
		if auto && artifacts.CodeOf(err) == artifacts.CodeVersionCapacity {
			return m.snapshotIncremental(ctx, root, scope, ix, opts, before)
		}
		return res, err
	}
	if ix == nil {
		// Nothing to compare with and nowhere to record the state.
		return put()
	}
	if ix.TreeState == before.State && ix.Snapshotted() {
		rec, err := m.opts.Store.Stat(ctx, scope, SnapshotName, artifacts.Latest)
		switch {
		case err == nil && ix.IsSnapshot(rec):
			return SnapshotResult{
				Scope: scope, Version: rec.Version, Unchanged: true, Format: FormatZip,
				Files: before.Files, Dirs: before.Dirs, Bytes: before.Bytes,
				Skipped: len(before.Omitted), Omitted: before.Omitted, Record: rec,
			}, nil
		case err != nil && !artifacts.IsNotFound(err):
			return SnapshotResult{}, err
		}
	}
	res, err := put()
	if err != nil || res.Format != FormatZip {
		return res, err
	}
	nix := *ix
	nix.setSnapshot(res.Record)
	// The state is recorded only when the tree did not change while it
	// was archived, so that an equal state later means this version.
	if after, err := scanTree(root); err == nil && after.State == before.State {
		nix.TreeState = before.State
	}
	if writeIndex(root, nix) == nil {
		*ix = nix
	}
	return res, nil
}

// putSnapshot streams the tree under root, which sc describes, into
// Store.Put. A tree whose archive could be larger than the store's
// largest payload is archived into a temporary file first (putSpooled),
// so that one too large is refused before Put reserves a version.
func (m *Manager) putSnapshot(ctx context.Context, root *os.Root, scope artifacts.Scope, opts SnapshotOptions, sc treeScan) (SnapshotResult, error) {
	var omitted []Omission
	// Entries are typed as their directory lists them (no system call per
	// entry); one that turns out to be of another type when it is opened
	// fails the snapshot instead of being archived.
	exclude := func(rel string, d fs.DirEntry) bool {
		if IsReserved(rel) {
			return true
		}
		if t := d.Type(); !t.IsDir() && !t.IsRegular() {
			omitted = append(omitted, Omission{Path: rel, Kind: EntryKind(t)})
			return true
		}
		return false
	}
	write := func(dst io.Writer) (zipsafe.WriteStats, error) {
		return zipsafe.Write(dst, root, zipsafe.WriteOptions{
			Limits:   m.opts.Limits,
			Level:    m.opts.Level,
			Exclude:  exclude,
			Progress: opts.Progress,
		})
	}
	var st zipsafe.WriteStats
	var rec artifacts.Record
	var err error
	if limit := m.opts.Store.Capabilities().MaxArtifactBytes; limit > 0 && zipBound(sc) > limit {
		st, rec, err = m.putSpooled(ctx, scope, write, limit)
	} else {
		st, rec, err = m.putStreamed(ctx, scope, write)
	}
	if err != nil {
		return SnapshotResult{}, err
	}
	return SnapshotResult{
		Scope: scope, Version: rec.Version, Format: FormatZip,
		Files: st.Files, Dirs: st.Dirs, Bytes: st.Bytes,
		Skipped: len(omitted), Omitted: omitted,
		Record: rec,
	}, nil
}

// putStreamed streams the archive write makes through a pipe into
// Store.Put, never whole in memory.
func (m *Manager) putStreamed(ctx context.Context, scope artifacts.Scope, write func(io.Writer) (zipsafe.WriteStats, error)) (zipsafe.WriteStats, artifacts.Record, error) {
	const op = "workspace snapshot"
	pr, pw := io.Pipe()
	type result struct {
		st  zipsafe.WriteStats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := write(pw)
		pw.CloseWithError(err)
		done <- result{st, err}
	}()
	rec, err := m.opts.Store.Put(ctx, scope, SnapshotName, pr, artifacts.PutOptions{MIMEType: SnapshotMIMEType})
	pr.CloseWithError(errSnapshotAborted)
	wr := <-done
	if wr.err != nil && !errors.Is(wr.err, errSnapshotAborted) {
		return wr.st, rec, zipError(op, scope, wr.err)
	}
	return wr.st, rec, err
}

// zipError turns an error of package zipsafe into an *artifacts.Error.
func zipError(op string, scope artifacts.Scope, err error) error {
	var ae *artifacts.Error
	if errors.As(err, &ae) {
		return err
	}
	code := artifacts.CodeCorrupt
	switch zipsafe.CodeOf(err) {
	case zipsafe.CodeIO:
		code = artifacts.CodeIO
		if errors.Is(err, fs.ErrPermission) {
			code = artifacts.CodePermission
		}
	case zipsafe.CodeTooLarge, zipsafe.CodeTooManyEntries:
		code = artifacts.CodeQuotaExceeded
	case zipsafe.CodeUnsupportedFileType:
		code = artifacts.CodeConflict
	case "":
		code = artifacts.CodeOf(err)
		if code == artifacts.CodeUnknown {
			code = artifacts.CodeIO
		}
	}
	return artifacts.Errorf(code, op, err, "").With(scope, SnapshotName, artifacts.NoVersion)
}

// Hydrate replaces the workspace's files with those of a snapshot
// (artifacts.Latest: the latest), all or nothing, keeping the index. The archive
// is streamed from the store (whose Reader verifies size and digest) into
// a temporary file in the scratch root, outside every workspace, and
// extracted with zipsafe. A workspace holding work that no snapshot has is
// refused with an *OverwriteError unless opts.Force is set. Everything that
// can fail is checked before the old tree is replaced. Confined calls wait
// while it runs.
func (w *Workspace) Hydrate(ctx context.Context, version int64, opts HydrateOptions) (HydrateResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.root == nil {
		return HydrateResult{}, scopeError(artifacts.CodeInvalidArgument, "workspace hydrate", &w.scope, nil, "workspace is closed")
	}
	return w.hydrateLocked(ctx, version, opts)
}

// fetchSnapshot gets a version of the scope's snapshot from the store,
// verified whole against its record, for random access. Where the store
// offers its verified bytes for random access (a payload held in memory,
// or a file that cannot change: artifacts.Reader.VerifiedReaderAt), the
// archive is read once to verify it and then in place; otherwise it is
// copied, verified as it streams, into a new temporary file in the scratch
// root. Either way a file named after the session's directory is created
// there and locked while the hydration runs (empty when the archive is
// read in place), so that a sweep can tell a hydration in progress from a
// crashed one's debris. The caller calls remove when done with src.
func (m *Manager) fetchSnapshot(ctx context.Context, op string, scope artifacts.Scope, version int64) (src io.ReaderAt, n int64, rec artifacts.Record, remove func(), err error) {
	if version < 0 && version != artifacts.Latest {
		return nil, 0, rec, nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "version %d", version)
	}
	rd, err := m.opts.Store.Get(ctx, scope, SnapshotName, version)
	if err != nil {
		return nil, 0, rec, nil, err
	}
	rec = rd.Record()
	f, tmpName, err := m.createArchive(DirName(scope.App, scope.User, scope.Session))
	if err != nil {
		rd.Close()
		return nil, 0, rec, nil, osError(op, &scope, tmpName, err)
	}
	remove = func() {
		m.root.Remove(tmpName)
		f.Close()
		rd.Close()
	}
	var dst io.Writer = f
	inPlace := rd.RandomAccess()
	if inPlace {
		dst = io.Discard
	}
	n, err = io.CopyBuffer(dst, onlyReader{rd}, make([]byte, 256<<10))
	if err == nil && n != rec.Size {
		err = artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "read %d bytes, record says %d", n, rec.Size).With(scope, SnapshotName, rec.Version)
	}
	if err == nil {
		err = artifacts.CheckContext(ctx, op)
	}
	src = f
	if err == nil && inPlace {
		var ok bool
		if src, ok = rd.VerifiedReaderAt(); !ok {
			err = artifacts.Errorf(artifacts.CodeIO, op, nil, "the store did not give the verified snapshot for reading in place").With(scope, SnapshotName, rec.Version)
		}
	}
	if err != nil {
		if artifacts.CodeOf(err) == artifacts.CodeUnknown {
			err = osError(op, &scope, tmpName, err)
		}
		remove()
		return nil, 0, rec, nil, err
	}
	return src, n, rec, remove, nil
}

// createArchive creates and locks a new temporary archive for a
// hydration of the workspace directory dir. A sweep cleaning debris may
// lock and remove it between the create and the lock (it does so only
// while holding the lock): then the name no longer holds the file, and
// another one is made.
func (m *Manager) createArchive(dir string) (*os.File, string, error) {
	for {
		name := hydrateTempName(dir)
		f, err := m.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, name, err
		}
		if err := osutil.LockExclusive(f); err != nil {
			f.Close()
			m.root.Remove(name)
			return nil, name, err
		}
		st, err1 := f.Stat()
		named, err2 := m.root.Lstat(name)
		if err1 == nil && err2 == nil && os.SameFile(st, named) {
			return f, name, nil
		}
		f.Close()
	}
}

// hydrateLocked hydrates with w.mu held exclusively; it sets w.root to the
// new directory and writes the index.
func (w *Workspace) hydrateLocked(ctx context.Context, version int64, opts HydrateOptions) (HydrateResult, error) {
	const op = "workspace hydrate"
	m := w.m
	if err := m.needStore(op); err != nil {
		return HydrateResult{}, err
	}
	if version < 0 && version != artifacts.Latest {
		return HydrateResult{}, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "version %d", version)
	}
	// An existing directory must be one this hydration can replace: a
	// directory whose index (if any) is a regular file naming this app.
	var old *os.Root
	if fi, err := m.root.Lstat(w.dir); err == nil {
		if !fi.IsDir() {
			return HydrateResult{}, scopeError(artifacts.CodePermission, op, &w.scope, nil, "%s is not a directory", w.path)
		}
		if old, err = m.root.OpenRoot(w.dir); err != nil {
			return HydrateResult{}, osError(op, &w.scope, w.dir, err)
		}
		defer old.Close()
		if ifi, err := old.Lstat(IndexName); err == nil && !ifi.Mode().IsRegular() {
			return HydrateResult{}, scopeError(artifacts.CodeConflict, op, &w.scope, nil, "the index %s is a %s, not a regular file; nothing was replaced: move it aside, then hydrate again", filepath.Join(w.path, IndexName), EntryKind(ifi.Mode()))
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return HydrateResult{}, osError(op, &w.scope, IndexName, err)
		}
		ix, ierr := readIndex(old, w.dir)
		if ierr == nil && ix.App != w.scope.App {
			return HydrateResult{}, scopeError(artifacts.CodeConflict, op, &w.scope, nil, "directory %s belongs to app %q", w.dir, ix.App)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return HydrateResult{}, osError(op, &w.scope, w.dir, err)
	}
	if cp, ref, ok, err := m.newestCheckpoint(ctx, w.scope, version, opts); err != nil {
		return HydrateResult{}, err
	} else if ok {
		return w.hydrateCheckpoint(ctx, old, cp, ref, opts)
	}
	if len(opts.Paths) > 0 {
		return HydrateResult{}, scopeError(artifacts.CodeInvalidArgument, op, &w.scope, nil, "chosen paths are restored from incremental snapshots only, into a new directory (HydrateTo)")
	}
	src, n, rec, remove, err := m.fetchSnapshot(ctx, op, w.scope, version)
	if err != nil {
		return HydrateResult{}, err
	}
	defer remove()
	if old != nil && !opts.Force {
		if err := m.checkOverwrite(ctx, old, w.scope, rec, func(lose func(p, change string)) error {
			return m.zipLosses(ctx, old, w.scope, src, n, rec, lose)
		}); err != nil {
			return HydrateResult{}, err
		}
	}
	// The new tree's state is taken from what the extraction made, as it
	// made it: no walk of the finished tree.
	var made madeTree
	st, err := zipsafe.Extract(src, n, w.path, zipsafe.ExtractOptions{
		Limits:   m.opts.Limits,
		Keep:     []string{IndexName},
		Progress: opts.Progress,
		Made:     made.add,
	})
	if err != nil {
		return HydrateResult{}, zipError(op, w.scope, err)
	}
	root, err := m.root.OpenRoot(w.dir)
	if err != nil {
		return HydrateResult{}, osError(op, &w.scope, w.dir, err)
	}
	if err := w.hydrated(root, rec, made.scan()); err != nil {
		return HydrateResult{}, err
	}
	return HydrateResult{Scope: w.scope, Version: rec.Version, Files: st.Files, Dirs: st.Dirs, Bytes: st.Bytes, Dir: w.path, Record: rec, Format: FormatZip}, nil
}

// hydrated makes root, the directory a hydration just put in place
// whose tree is sc, the workspace's, and records rec and sc in its index.
func (w *Workspace) hydrated(root *os.Root, rec artifacts.Record, sc treeScan) error {
	const op = "workspace hydrate"
	if w.root != nil {
		w.root.Close()
	}
	w.root = root
	now := w.m.opts.Now().UTC()
	ix, err := readIndex(root, w.dir)
	if err != nil || ix.App != w.scope.App {
		ix = Index{App: w.scope.App, User: w.scope.User, Session: w.scope.Session, Created: now}
	}
	ix.LastAccess = now
	ix.setSnapshot(rec)
	ix.TreeState = sc.State
	if err := writeIndex(root, ix); err != nil {
		return osError(op, &w.scope, IndexName, err)
	}
	w.ledger.setTree(treeCount{bytes: sc.Bytes, files: sc.Files, dirs: sc.Dirs}, false)
	w.stmu.Lock()
	w.index, w.lastTouch, w.dirty = ix, now, false
	w.stmu.Unlock()
	return nil
}

// onlyReader hides WriterTo/ReaderFrom so io.CopyBuffer uses its buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// PromoteOptions configure Promote.
type PromoteOptions struct {
	// Name is the artifact name; empty means the file's cleaned path.
	Name string
	// UserScope puts the artifact in the session's user scope instead of
	// the session scope.
	UserScope bool
	// MIMEType defaults to the type of the file's extension, else
	// artifacts.DefaultMIMEType.
	MIMEType string
	// Metadata is the custom metadata.
	Metadata artifacts.Metadata
}

// Promote publishes one regular file of the workspace as a named artifact
// (a deliverable) in the session scope, or in its user scope, streaming it
// from the confined root. It returns the published record.
func (w *Workspace) Promote(ctx context.Context, file string, opts PromoteOptions) (artifacts.Record, error) {
	const op = "workspace promote"
	if err := w.m.needStore(op); err != nil {
		return artifacts.Record{}, err
	}
	root, done, err := w.use()
	if err != nil {
		return artifacts.Record{}, err
	}
	defer done()
	f, _, err := w.tree().openRegular(root, op, file)
	if err != nil {
		return artifacts.Record{}, err
	}
	defer f.Close()
	name := opts.Name
	if name == "" {
		name = path.Clean(file)
	}
	scope := w.scope
	if opts.UserScope {
		scope = artifacts.UserScope(w.scope.App, w.scope.User)
	}
	mt := opts.MIMEType
	if mt == "" {
		if mt = mime.TypeByExtension(path.Ext(name)); mt == "" {
			mt = artifacts.DefaultMIMEType
		}
	}
	rec, err := w.m.opts.Store.Put(ctx, scope, name, onlyReader{f}, artifacts.PutOptions{MIMEType: mt, Metadata: opts.Metadata})
	if err != nil {
		return artifacts.Record{}, err
	}
	return rec, nil
}

// Snapshot publishes a snapshot of the session's existing directory on
// this scratch root (CodeNotFound when there is none) without recording an
// access, for operators and sweeps. A directory whose index names another
// app, or does not decode or hash to the directory, is refused.
func (m *Manager) Snapshot(ctx context.Context, scope artifacts.Scope, opts SnapshotOptions) (SnapshotResult, error) {
	const op = "workspace snapshot"
	if err := checkSession(op, scope); err != nil {
		return SnapshotResult{}, err
	}
	if err := m.needStore(op); err != nil {
		return SnapshotResult{}, err
	}
	dir := DirName(scope.App, scope.User, scope.Session)
	m.mu.Lock()
	w := m.open[dir]
	m.mu.Unlock()
	if w != nil && w.scope == scope && w.ready() {
		return w.Snapshot(ctx, opts)
	}
	fi, err := m.root.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if fi, err = m.legacyFallback(ctx, scope, dir); err != nil {
			return SnapshotResult{}, err
		}
	}
	if err != nil {
		return SnapshotResult{}, osError(op, &scope, dir, err)
	}
	if !fi.IsDir() {
		return SnapshotResult{}, scopeError(artifacts.CodePermission, op, &scope, nil, "%s is not a directory", dir)
	}
	root, err := m.root.OpenRoot(dir)
	if err != nil {
		return SnapshotResult{}, osError(op, &scope, dir, err)
	}
	defer root.Close()
	ix, err := readIndex(root, dir)
	switch {
	case err == nil && ix.App != scope.App:
		return SnapshotResult{}, scopeError(artifacts.CodeConflict, op, &scope, nil, "directory %s belongs to app %q", dir, ix.App)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return SnapshotResult{}, scopeError(artifacts.CodeConflict, op, &scope, err, "directory %s has a bad index", dir)
	}
	var ixp *Index
	if ix.Format != "" {
		ixp = &ix
	}
	return m.snapshotRoot(ctx, root, scope, ixp, opts)
}

// Hydrate replaces (or creates) the session's directory on this scratch
// root with a snapshot (artifacts.Latest: the latest), keeping its index. See
// Workspace.Hydrate.
func (m *Manager) Hydrate(ctx context.Context, scope artifacts.Scope, version int64, opts HydrateOptions) (HydrateResult, error) {
	const op = "workspace hydrate"
	if err := checkSession(op, scope); err != nil {
		return HydrateResult{}, err
	}
	dir := DirName(scope.App, scope.User, scope.Session)
	m.mu.Lock()
	w := m.open[dir]
	if w == nil {
		w = &Workspace{m: m, scope: scope, dir: dir, path: m.scratch + string(os.PathSeparator) + dir}
		w.ledger.q = m.opts.Quota
		m.open[dir] = w
	}
	m.mu.Unlock()
	if w.scope != scope {
		return HydrateResult{}, scopeError(artifacts.CodeConflict, op, &scope, nil, "directory %s is in use by %s", dir, w.scope)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return HydrateResult{}, fmt.Errorf("%s: the manager is closed", op)
	}
	if w.root == nil {
		if _, err := m.adoptLegacy(ctx, scope); err != nil {
			return HydrateResult{}, err
		}
	}
	res, err := w.hydrateLocked(ctx, version, opts)
	if err != nil {
		if w.root == nil {
			m.forget(w)
		}
		return res, err
	}
	if w.root == nil {
		if err := w.setUp(ctx, false); err != nil {
			return res, err
		}
	}
	return res, nil
}

// HydrateTo extracts a version of the session's snapshot (artifacts.Latest: the latest)
// into dir, a directory that must not exist yet (its parent must), for
// inspection: no index is written and the session's workspace is not
// touched. The archive is verified and extracted all or nothing, as
// Hydrate does.
func (m *Manager) HydrateTo(ctx context.Context, scope artifacts.Scope, version int64, dir string, opts HydrateOptions) (HydrateResult, error) {
	const op = "workspace hydrate"
	if err := checkSession(op, scope); err != nil {
		return HydrateResult{}, err
	}
	if err := m.needStore(op); err != nil {
		return HydrateResult{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return HydrateResult{}, osError(op, &scope, dir, err)
	}
	if _, err := os.Lstat(abs); err == nil {
		return HydrateResult{}, scopeError(artifacts.CodeConflict, op, &scope, nil, "%s exists; give a directory that does not exist yet", abs)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return HydrateResult{}, osError(op, &scope, abs, err)
	}
	if fi, err := os.Stat(filepath.Dir(abs)); err != nil || !fi.IsDir() {
		return HydrateResult{}, scopeError(artifacts.CodeNotFound, op, &scope, err, "the parent directory of %s does not exist", abs)
	}
	if cp, ref, ok, err := m.newestCheckpoint(ctx, scope, version, opts); err != nil {
		return HydrateResult{}, err
	} else if ok {
		return m.hydrateCheckpointTo(ctx, cp, ref, abs, opts)
	}
	if len(opts.Paths) > 0 {
		return HydrateResult{}, scopeError(artifacts.CodeInvalidArgument, op, &scope, nil, "chosen paths are restored from incremental snapshots only")
	}
	src, n, rec, remove, err := m.fetchSnapshot(ctx, op, scope, version)
	if err != nil {
		return HydrateResult{}, err
	}
	defer remove()
	st, err := zipsafe.Extract(src, n, abs, zipsafe.ExtractOptions{Limits: m.opts.Limits, Progress: opts.Progress})
	if err != nil {
		return HydrateResult{}, zipError(op, scope, err)
	}
	return HydrateResult{Scope: scope, Version: rec.Version, Files: st.Files, Dirs: st.Dirs, Bytes: st.Bytes, Dir: abs, Record: rec, Format: FormatZip}, nil
}
