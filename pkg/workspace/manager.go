package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// SnapshotName is the artifact name of a session's workspace snapshots.
const SnapshotName = "workspace.zip"

// SnapshotMIMEType is the MIME type of the snapshots.
const SnapshotMIMEType = "application/zip"

// SnapshotPolicy says when a Workspace publishes snapshots by itself.
type SnapshotPolicy int

const (
	// SnapshotAtEndOfTurn (the zero value): EndTurn snapshots when the
	// workspace changed during the turn.
	SnapshotAtEndOfTurn SnapshotPolicy = iota
	// SnapshotOnWrite: every confined write (Write, WriteFrom, Append,
	// Mkdir, Remove, RemoveAll, Rename) returns only after a snapshot
	// holding its change is published. Writes that arrive while a
	// snapshot is in flight are published together by the next one
	// (group commit). If publishing fails, the change stays in the
	// workspace, which stays dirty, and the call returns an error with
	// CodeNotPersisted wrapping the snapshot's; the next write or EndTurn
	// snapshots again.
	SnapshotOnWrite
	// SnapshotManual: only explicit Snapshot calls publish.
	SnapshotManual
)

// Options configure a Manager.
type Options struct {
	// Scratch is the scratch root, an existing directory holding one
	// directory per session. Required.
	Scratch string
	// Reference is the reference root, read-only through Reference; empty
	// for none.
	Reference string
	// Store keeps the snapshots and deliverables. It may be nil for a
	// manager that only lists workspaces.
	Store *artifacts.Store
	// Quota bounds the writes of every session.
	Quota Quota
	// Policy says when workspaces publish snapshots by themselves.
	Policy SnapshotPolicy
	// Limits bound snapshots and hydration (zero: zipsafe's defaults).
	Limits zipsafe.Limits
	// Level is the Deflate level of snapshots (zero: zipsafe.DefaultLevel).
	Level int
	// SnapshotFormat is the format of snapshots (zero: FormatZip);
	// SnapshotOptions.Format overrides it per call.
	SnapshotFormat SnapshotFormat
	// AutoThreshold is the tree size from which FormatAuto writes
	// incremental snapshots (zero: DefaultAutoThreshold).
	AutoThreshold int64
	// MaxCheckpoints is how many incremental snapshots a session keeps
	// (zero: checkpoint.DefaultMaxSnapshots).
	MaxCheckpoints int
	// MaxStoreBytes, when positive, bounds what one session's snapshots
	// hold in the store (checkpoint.Options.MaxStoredBytes, with the
	// scope's other artifacts, zip snapshots included, charged too): a
	// snapshot that would pass it drops the oldest checkpoints, or is
	// refused with CodeQuotaExceeded. It applies to incremental snapshots,
	// which FormatAuto then always writes; a zip snapshot's size is not
	// known before it is stored, so FormatZip with it is refused by New.
	MaxStoreBytes int64
	// Durable makes every confined write fsync the file before renaming
	// it into place, so that it survives a crash of the machine. Without
	// it a write is still atomic (a reader sees the old file or the new
	// one, never a mix) but a crash may lose the latest writes: the
	// scratch directory is a cache, and the durable copy of a workspace is
	// its snapshot in the store (SnapshotOnWrite publishes one before a
	// write returns).
	Durable bool
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Manager owns the workspaces under one scratch root. It is safe for
// concurrent use; one Manager per scratch root per process.
type Manager struct {
	opts    Options
	scratch string   // absolute, symbolic links resolved
	root    *os.Root // the scratch root
	ref     *Reference

	mu   sync.Mutex
	open map[string]*Workspace // by directory name
}

// New returns a Manager over opts.Scratch, which must be an existing
// directory, and opts.Reference when set.
func New(opts Options) (*Manager, error) {
	const op = "workspace open manager"
	if opts.Scratch == "" {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "no scratch root given")
	}
	if opts.MaxStoreBytes > 0 && (opts.SnapshotFormat == "" || opts.SnapshotFormat == FormatZip) {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "a store-bytes ceiling bounds incremental snapshots only: use snapshot format incremental or auto with it")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	abs, err := filepath.Abs(opts.Scratch)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, osError(op, nil, opts.Scratch, err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, osError(op, nil, opts.Scratch, err)
	}
	m := &Manager{opts: opts, scratch: abs, root: root, open: map[string]*Workspace{}}
	if opts.Reference != "" {
		r, err := OpenReference(opts.Reference)
		if err != nil {
			root.Close()
			return nil, err
		}
		m.ref = r
	}
	return m, nil
}

// Scratch returns the scratch root (absolute).
func (m *Manager) Scratch() string { return m.scratch }

// Reference returns the read-only reference tree, nil when the manager has
// none.
func (m *Manager) Reference() *Reference { return m.ref }

// Close releases the roots of the manager and of its open workspaces.
func (m *Manager) Close() error {
	m.mu.Lock()
	ws := m.open
	m.open = map[string]*Workspace{}
	m.mu.Unlock()
	for _, w := range ws {
		w.mu.Lock()
		w.closeRoot()
		w.closed = true
		w.mu.Unlock()
	}
	if m.ref != nil {
		m.ref.Close()
	}
	return m.root.Close()
}

func (m *Manager) needStore(op string) error {
	if m.opts.Store == nil {
		return artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "the workspace manager has no store")
	}
	return nil
}

// Workspace is one session's scratch directory, served through the
// confined API. Get one with Manager.Open. It is safe for concurrent use.
type Workspace struct {
	m     *Manager
	scope artifacts.Scope
	dir   string // DirName
	path  string // absolute path of the directory

	// mu: confined calls hold it shared; hydration, snapshots and Close
	// hold it exclusively, so a snapshot sees no half-done call.
	mu     sync.RWMutex
	root   *os.Root // nil until set up
	closed bool

	// rootID is the identity of the directory rootIDOf holds (a held
	// directory stays the same file), so that checking the name costs one
	// Lstat; w.mu guards both.
	rootID   fs.FileInfo
	rootIDOf *os.Root

	hold dirHold

	ledger ledger

	commits commitQueue

	stmu      sync.Mutex // guards the fields below
	dirty     bool
	changes   uint64 // the number of the latest change (markDirty)
	index     Index
	lastTouch time.Time
}

// Scope returns the session scope of the workspace.
func (w *Workspace) Scope() artifacts.Scope { return w.scope }

// Dir returns the directory name of the workspace (DirName).
func (w *Workspace) Dir() string { return w.dir }

// Path returns the absolute path of the workspace directory. Give it to
// nothing that does not confine itself.
func (w *Workspace) Path() string { return w.path }

// Quota returns the state of the workspace's quota ledger.
func (w *Workspace) Quota() QuotaStatus { return w.ledger.status() }

func (w *Workspace) tree() tree {
	return tree{op: "workspace", scope: &w.scope, reserved: true}
}

// use takes the shared lock for a confined call and refreshes the last
// access now and then.
func (w *Workspace) use() (*os.Root, func(), error) {
	w.mu.RLock()
	if w.root == nil {
		w.mu.RUnlock()
		return nil, nil, scopeError(artifacts.CodeInvalidArgument, "workspace", &w.scope, nil, "workspace is closed")
	}
	err := w.enter()
	if err != nil {
		w.mu.RUnlock()
		return nil, nil, err
	}
	now := w.m.opts.Now()
	w.stmu.Lock()
	if now.Sub(w.lastTouch) >= touchEvery {
		w.lastTouch = now
		ix := w.index
		ix.LastAccess = now.UTC()
		if writeIndex(w.root, ix) == nil {
			w.index = ix
		}
	}
	w.stmu.Unlock()
	return w.root, func() { w.leave(); w.mu.RUnlock() }, nil
}

// sameDir reports whether the directory w holds is still the one at its
// name; w.mu is held exclusively.
func (w *Workspace) sameDir() bool {
	if w.rootIDOf != w.root {
		held, err := w.root.Stat(".")
		if err != nil {
			return false
		}
		w.rootID, w.rootIDOf = held, w.root
	}
	named, err := w.m.root.Lstat(w.dir)
	return err == nil && os.SameFile(w.rootID, named)
}

// closeRoot closes the directory handles; w.mu is held exclusively.
func (w *Workspace) closeRoot() error {
	var err error
	if w.root != nil {
		err = w.root.Close()
		w.root = nil
	}
	w.hold.close()
	return err
}

// dirHold is the shared advisory lock of confined calls on the workspace
// directory (see holdDir), taken on one descriptor of the directory that
// stays open: the first of concurrent calls locks it, the last unlocks it,
// so that a call costs two flocks and an Lstat instead of an open, a lock,
// two stats and a close.
type dirHold struct {
	mu    sync.Mutex
	root  *os.Root    // the root f was opened from
	f     *os.File    // the directory; nil until a call needs it
	id    fs.FileInfo // f's identity
	users int         // calls holding the lock
}

// enter holds the workspace directory for one confined call as holdDir
// does; w.mu is held shared, so w.root stays. Call leave when done.
func (w *Workspace) enter() error {
	const op = "workspace"
	h := &w.hold
	h.mu.Lock()
	if h.users == 0 {
		if h.root != w.root {
			h.close()
			f, err := w.root.Open(".")
			if err != nil {
				h.mu.Unlock()
				return osError(op, &w.scope, w.dir, err)
			}
			id, err := f.Stat()
			if err != nil {
				f.Close()
				h.mu.Unlock()
				return osError(op, &w.scope, w.dir, err)
			}
			h.root, h.f, h.id = w.root, f, id
		}
		if err := osutil.LockShared(h.f); err != nil {
			h.mu.Unlock()
			return osError(op, &w.scope, w.dir, err)
		}
	}
	h.users++
	id := h.id
	h.mu.Unlock()
	named, err := w.m.root.Lstat(w.dir)
	if err != nil || !os.SameFile(id, named) {
		w.leave()
		return scopeError(artifacts.CodeConflict, op, &w.scope, nil, "the workspace directory was swept or replaced; open the workspace again")
	}
	return nil
}

// heldDir is the open descriptor of the workspace directory that enter
// locked: valid between use and its done, for system calls relative to
// the workspace's top (never read or seek it: calls share it).
func (w *Workspace) heldDir() *os.File { return w.hold.f }

// leave ends a call's hold; the last one unlocks the directory.
func (w *Workspace) leave() {
	h := &w.hold
	h.mu.Lock()
	h.users--
	if h.users == 0 {
		osutil.Unlock(h.f)
	}
	h.mu.Unlock()
}

// close closes the descriptor; no call holds it.
func (h *dirHold) close() {
	if h.f != nil {
		h.f.Close()
	}
	h.root, h.f, h.id = nil, nil, nil
}

// holdDir takes a shared advisory lock on the workspace directory for the
// length of one confined call. A sweep takes it exclusively (without
// waiting) before it snapshots and removes a directory, so it never removes
// one under a call, and a call that waited for a sweep to finish finds out
// here: the directory at the workspace's name is no longer the one it
// holds. Such a call fails with CodeConflict and changes nothing; opening
// the workspace again (Manager.Open, which returns the same Workspace) sets
// it up anew from the sweep's snapshot, so every write that succeeded
// before the sweep is there.
func (w *Workspace) holdDir() (*os.File, error) {
	const op = "workspace"
	f, err := w.root.Open(".")
	if err != nil {
		return nil, osError(op, &w.scope, w.dir, err)
	}
	if err := osutil.LockShared(f); err != nil {
		f.Close()
		return nil, osError(op, &w.scope, w.dir, err)
	}
	held, err1 := f.Stat()
	named, err2 := w.m.root.Lstat(w.dir)
	if err1 != nil || err2 != nil || !os.SameFile(held, named) {
		f.Close()
		return nil, scopeError(artifacts.CodeConflict, op, &w.scope, nil, "the workspace directory was swept or replaced; open the workspace again")
	}
	return f, nil
}

// ready reports whether the workspace is set up and not closed.
func (w *Workspace) ready() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.root != nil
}

// forget drops w from the open workspaces.
func (m *Manager) forget(w *Workspace) {
	m.mu.Lock()
	if m.open[w.dir] == w {
		delete(m.open, w.dir)
	}
	m.mu.Unlock()
}

// markDirty records a change: the workspace differs from its latest
// snapshot, and the change takes the next change number (see
// commitQueue). Changes call it with w.mu held shared, so that a snapshot
// (which holds w.mu exclusively) holds every change numbered before it.
func (w *Workspace) markDirty() {
	w.stmu.Lock()
	w.dirty = true
	w.changes++
	w.stmu.Unlock()
}

// Open returns the workspace of a session scope, setting it up on first
// touch: when the scratch root has no directory for the session, the
// latest snapshot is hydrated into a new one (or an empty one is created
// when there is no snapshot), and the index is written. The directory's
// name (DirName) hashes the app, user and session, so it is the session's
// alone; an index in it naming anything else is replaced. A directory of
// the session under its legacy name (LegacyDirName, from before app-bound
// names) is migrated first when the store confirms its app (Migrate);
// otherwise it is never read, and the session is set up without it.
func (m *Manager) Open(ctx context.Context, scope artifacts.Scope) (*Workspace, error) {
	return m.workspace(ctx, scope, true)
}

// OpenExisting is Open for a session whose directory must already exist on
// this scratch root (CodeNotFound otherwise); it never hydrates.
func (m *Manager) OpenExisting(ctx context.Context, scope artifacts.Scope) (*Workspace, error) {
	return m.workspace(ctx, scope, false)
}

func checkSession(op string, scope artifacts.Scope) error {
	if scope.Kind != artifacts.KindSession {
		return artifacts.Errorf(artifacts.CodeInvalidScope, op, nil, "a workspace belongs to a session scope, not %s", scope)
	}
	return scope.Validate()
}

func (m *Manager) workspace(ctx context.Context, scope artifacts.Scope, create bool) (*Workspace, error) {
	const op = "workspace open"
	if err := checkSession(op, scope); err != nil {
		return nil, err
	}
	dir := DirName(scope.App, scope.User, scope.Session)
	m.mu.Lock()
	w := m.open[dir]
	if w == nil {
		w = &Workspace{m: m, scope: scope, dir: dir, path: filepath.Join(m.scratch, dir)}
		w.ledger.q = m.opts.Quota
		m.open[dir] = w
	}
	m.mu.Unlock()
	if w.scope != scope {
		return nil, scopeError(artifacts.CodeConflict, op, &scope, nil, "directory %s is in use by %s", dir, w.scope)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "the manager is closed")
	}
	if w.root != nil {
		if w.sameDir() {
			return w, nil
		}
		// A sweep removed (or someone replaced) the directory since it was
		// set up: set it up again, hydrating the latest snapshot.
		w.closeRoot()
	}
	if err := w.setUp(ctx, create); err != nil {
		if w.root == nil {
			m.forget(w)
		}
		return nil, err
	}
	return w, nil
}

// setUp makes the directory ready; w.mu is held exclusively.
func (w *Workspace) setUp(ctx context.Context, create bool) error {
	const op = "workspace open"
	m := w.m
	now := m.opts.Now().UTC()
	fi, err := m.root.Lstat(w.dir)
	if errors.Is(err, fs.ErrNotExist) {
		// A directory from before app-bound names moves to its new name
		// when the store confirms its app; any other is never read.
		var adopted bool
		if adopted, err = m.adoptLegacy(ctx, w.scope); err != nil {
			return err
		}
		if adopted {
			fi, err = m.root.Lstat(w.dir)
		} else {
			err = fs.ErrNotExist
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !create {
			return scopeError(artifacts.CodeNotFound, op, &w.scope, err, "no workspace directory %s under %s", w.dir, m.scratch)
		}
		hydrated := false
		if m.opts.Store != nil {
			// The newest snapshot of either format (see newestCheckpoint).
			has, err := m.hasSnapshot(ctx, w.scope)
			if err != nil {
				return err
			}
			if has {
				if _, err := w.hydrateLocked(ctx, artifacts.Latest, HydrateOptions{}); err != nil {
					return err
				}
				hydrated = true
			}
		}
		if !hydrated {
			if err := m.root.Mkdir(w.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return osError(op, &w.scope, w.dir, err)
			}
		}
	case err != nil:
		return osError(op, &w.scope, w.dir, err)
	case !fi.IsDir():
		return scopeError(artifacts.CodePermission, op, &w.scope, nil, "%s is not a directory (%v)", filepath.Join(m.scratch, w.dir), fi.Mode().Type())
	}
	if w.root == nil {
		root, err := m.root.OpenRoot(w.dir)
		if err != nil {
			return sweptError(op, w.scope, osError(op, &w.scope, w.dir, err))
		}
		w.root = root
	}
	fail := func(err error) error {
		w.closeRoot()
		return sweptError(op, w.scope, err)
	}
	// Hold the directory as a confined call does, so that a sweep cannot
	// remove it while it is set up; one that did meanwhile is a conflict.
	held, err := w.holdDir()
	if err != nil {
		return fail(err)
	}
	defer held.Close()
	ix, err := readIndex(w.root, w.dir)
	switch {
	case err == nil && ix.App != w.scope.App:
		return fail(scopeError(artifacts.CodeConflict, op, &w.scope, nil, "directory %s belongs to app %q", w.dir, ix.App))
	case err != nil:
		ix = Index{App: w.scope.App, User: w.scope.User, Session: w.scope.Session, Created: now}
	}
	ix.LastAccess = now
	if err := writeIndex(w.root, ix); err != nil {
		return fail(osError(op, &w.scope, IndexName, err))
	}
	c, err := measure(w.root)
	if err != nil {
		return fail(osError(op, &w.scope, w.dir, err))
	}
	w.ledger.setTree(c, false)
	w.stmu.Lock()
	w.index, w.lastTouch = ix, now
	w.stmu.Unlock()
	return nil
}

// sweptError turns a not-found error met while a workspace directory was
// being set up into CodeConflict: the directory was there a moment before,
// so a sweep removed it meanwhile, and opening the workspace again
// hydrates what the sweep snapshotted.
func sweptError(op string, scope artifacts.Scope, err error) error {
	if err == nil || artifacts.CodeOf(err) != artifacts.CodeNotFound {
		return err
	}
	return scopeError(artifacts.CodeConflict, op, &scope, err, "the workspace directory was swept or replaced while it was being opened; open the workspace again")
}

// Index returns the workspace's index record as the manager last wrote it.
func (w *Workspace) Index() Index {
	w.stmu.Lock()
	defer w.stmu.Unlock()
	return w.index
}

// BeginTurn starts a turn: it resets the per-turn allowance, measures the
// bytes, files and directories the workspace holds at any depth (files
// may have changed behind the confined API) and records the access in
// the index.
func (w *Workspace) BeginTurn(ctx context.Context) error {
	const op = "workspace begin turn"
	if err := ctx.Err(); err != nil {
		return artifacts.CheckContext(ctx, op)
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.root == nil {
		return scopeError(artifacts.CodeInvalidArgument, op, &w.scope, nil, "workspace is closed")
	}
	// Measured holding the ledger's change lock: a change booked between
	// the walk and setTree would be lost or counted twice.
	w.ledger.change.Lock()
	c, err := measure(w.root)
	if err == nil {
		w.ledger.setTree(c, true)
	}
	w.ledger.change.Unlock()
	if err != nil {
		return osError(op, &w.scope, ".", err)
	}
	return w.touch(w.root)
}

// touch writes the index with the current time as last access; w.mu is
// held (shared or exclusive).
func (w *Workspace) touch(root *os.Root) error {
	now := w.m.opts.Now()
	w.stmu.Lock()
	defer w.stmu.Unlock()
	ix := w.index
	ix.LastAccess = now.UTC()
	if err := writeIndex(root, ix); err != nil {
		return osError("workspace touch", &w.scope, IndexName, err)
	}
	w.index, w.lastTouch = ix, now
	return nil
}

// EndTurn ends a turn. Under SnapshotAtEndOfTurn it publishes a snapshot
// when the workspace changed since the last one, and returns it (nil when
// none was made). Under SnapshotOnWrite it publishes the changes whose
// snapshot failed (CodeNotPersisted) or is still in flight, joining the
// writes' group commit.
func (w *Workspace) EndTurn(ctx context.Context) (*SnapshotResult, error) {
	w.stmu.Lock()
	dirty := w.dirty
	w.stmu.Unlock()
	if dirty && w.m.opts.Policy == SnapshotOnWrite {
		res, ran, err := w.commit(ctx)
		if err != nil {
			return nil, scopeError(artifacts.CodeNotPersisted, "workspace end turn", &w.scope, err,
				"the workspace's changes since its last snapshot stay in the workspace, but the snapshot that stores them failed; the next write or end of turn retries it")
		}
		if !ran {
			return nil, nil
		}
		return &res, nil
	}
	if w.m.opts.Policy != SnapshotAtEndOfTurn || !dirty {
		w.mu.RLock()
		defer w.mu.RUnlock()
		if w.root == nil {
			return nil, nil
		}
		return nil, w.touch(w.root)
	}
	res, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// Close releases the workspace's directory handle; the directory stays.
// The next Open of the session sets it up again.
func (w *Workspace) Close() error {
	w.m.forget(w)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.closeRoot()
}
