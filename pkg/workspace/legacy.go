package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strconv"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// emptyZipSize is the size of a zip archive without entries (its end of
// central directory record alone): the snapshot of an empty workspace,
// whose digest anyone can compute.
const emptyZipSize = 22

// MigrateResult reports a legacy directory moved to its app-bound name.
type MigrateResult struct {
	// From is the legacy directory name (LegacyDirName), To the new one
	// (DirName).
	From, To string
	// Scope is the session whose app the store confirmed.
	Scope artifacts.Scope
	// Version is the snapshot of the scope, named by the legacy index, whose
	// digest confirmed the app.
	Version int64
}

// ConfirmLegacy checks the app of ix, an index read from a legacy
// directory (one DecodeIndex refused with ErrUnboundApp), against the
// store: the index must name a snapshot version and digest of its session,
// and the store must hold that very version of SnapshotName in the scope
// the index names, with that digest (and token, where the layout keeps
// one). The manager writes them after every snapshot and hydration of the
// scope, and another app cannot learn the digest of a snapshot it cannot
// read. A layout that stores no digest confirms nothing, nor does a
// snapshot of an empty workspace, whose digest anyone can compute. It
// returns the record
// that confirmed the app, or an error with CodePermission saying why the
// app stays unconfirmed (a store failure keeps its own code).
func (m *Manager) ConfirmLegacy(ctx context.Context, ix Index) (artifacts.Record, error) {
	rec, why, err := m.confirmLegacy(ctx, ix)
	if err == nil && why != "" {
		err = artifacts.Errorf(artifacts.CodePermission, "workspace migrate", nil, "the app %q of legacy directory %s is unconfirmed: %s", ix.App, LegacyDirName(ix.User, ix.Session), why).With(ix.Scope(), "", artifacts.NoVersion)
	}
	return rec, err
}

// confirmLegacy is ConfirmLegacy, saying why the app stays unconfirmed
// in why; err is a store failure.
func (m *Manager) confirmLegacy(ctx context.Context, ix Index) (rec artifacts.Record, why string, err error) {
	if m.opts.Store == nil {
		return rec, "there is no store to confirm it with", nil
	}
	if ix.SnapshotDigest == "" {
		return rec, "its index names no snapshot digest of the session", nil
	}
	rec, err = m.opts.Store.Stat(ctx, ix.Scope(), SnapshotName, ix.SnapshotVersion)
	switch code := artifacts.CodeOf(err); {
	case code == artifacts.CodeNotFound || code == artifacts.CodeInvalidArgument:
		return rec, "the store holds no snapshot v" + strconv.FormatInt(ix.SnapshotVersion, 10) + " of that session", nil
	case err != nil:
		return rec, "", err
	case !ix.IsSnapshot(rec):
		return rec, "snapshot v" + strconv.FormatInt(rec.Version, 10) + " in the store is not the one its index names (another digest)", nil
	case rec.Size <= emptyZipSize:
		return rec, "the snapshot its index names is empty, and anyone can compute the digest of an empty snapshot", nil
	}
	return rec, "", nil
}

// Migrate moves the legacy workspace directory name (a LegacyDirName) to
// its app-bound name (DirName) once the store confirms the app its index
// names (ConfirmLegacy). It holds the directory's lock exclusively (a live
// session or a sweep holding it: CodeConflict, retry later) and refuses
// when the app-bound directory exists already (CodeConflict: an operator
// merges the two). Nothing is changed on any refusal. Open, Hydrate and
// Snapshot migrate the legacy directory of their session by themselves;
// the sweep migrates the others.
func (m *Manager) Migrate(ctx context.Context, name string) (MigrateResult, error) {
	const op = "workspace migrate"
	if !IsDirName(name) {
		return MigrateResult{}, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "%q is not a workspace directory name", name)
	}
	fi, err := m.root.Lstat(name)
	if err != nil {
		return MigrateResult{}, osError(op, nil, name, err)
	}
	if !fi.IsDir() {
		return MigrateResult{}, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "%s is %s, not a directory", name, osutil.KindOf(fi.Mode()))
	}
	root, err := m.root.OpenRoot(name)
	if err != nil {
		return MigrateResult{}, osError(op, nil, name, err)
	}
	defer root.Close()
	lk, err := root.Open(".")
	if err != nil {
		return MigrateResult{}, osError(op, nil, name, err)
	}
	defer lk.Close()
	held, err := osutil.TryLockExclusive(lk)
	if err != nil {
		return MigrateResult{}, osError(op, nil, name, err)
	}
	if !held {
		return MigrateResult{}, artifacts.Errorf(artifacts.CodeConflict, op, nil, "a session or a sweep is using %s; try again", name)
	}
	if st, err := lk.Stat(); err != nil || !os.SameFile(st, fi) {
		return MigrateResult{}, artifacts.Errorf(artifacts.CodeConflict, op, err, "%s was replaced while being migrated; try again", name)
	}
	ix, _, err := ReadIndex(root, name)
	switch {
	case err == nil:
		return MigrateResult{}, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "%s is app-bound already", name).With(ix.Scope(), "", artifacts.NoVersion)
	case !errors.Is(err, ErrUnboundApp):
		return MigrateResult{}, artifacts.Errorf(artifacts.CodeInvalidArgument, op, err, "%s has no legacy index to migrate", name)
	}
	scope := ix.Scope()
	rec, err := m.ConfirmLegacy(ctx, ix)
	if err != nil {
		return MigrateResult{}, err
	}
	to := DirName(ix.App, ix.User, ix.Session)
	if _, err := m.root.Lstat(to); err == nil {
		return MigrateResult{}, scopeError(artifacts.CodeConflict, op, &scope, nil, "both %s and its app-bound name %s exist; nothing was moved: merge them by hand", name, to)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return MigrateResult{}, osError(op, &scope, to, err)
	}
	if err := m.root.Rename(name, to); err != nil {
		return MigrateResult{}, osError(op, &scope, name, err)
	}
	if err := syncDir(m.root, "."); err != nil {
		return MigrateResult{}, osError(op, &scope, m.scratch, err)
	}
	return MigrateResult{From: name, To: to, Scope: scope, Version: rec.Version}, nil
}

// adoptLegacy migrates the legacy directory of scope, when the session has
// no app-bound directory and there is one whose index names scope and the
// store confirms it. It reports whether
// it did. A legacy directory of another app, without a good index, or
// whose app stays unconfirmed is never read from and never touched: the
// caller sets the session up without it (ListWorkspaces and the sweep
// report it).
func (m *Manager) adoptLegacy(ctx context.Context, scope artifacts.Scope) (bool, error) {
	if _, err := m.root.Lstat(DirName(scope.App, scope.User, scope.Session)); !errors.Is(err, fs.ErrNotExist) {
		return false, nil // the app-bound directory is there (or in the way): it is the session's
	}
	name := LegacyDirName(scope.User, scope.Session)
	root, err := m.root.OpenRoot(name)
	if err != nil {
		return false, nil // none (or not a directory): nothing to adopt
	}
	ix, _, err := ReadIndex(root, name)
	root.Close()
	if !errors.Is(err, ErrUnboundApp) || ix.Scope() != scope {
		return false, nil
	}
	if _, err := m.Migrate(ctx, name); err != nil {
		if artifacts.CodeOf(err) == artifacts.CodePermission || artifacts.CodeOf(err) == artifacts.CodeInvalidArgument {
			return false, nil // unconfirmed, or no longer legacy: not adopted
		}
		return false, err
	}
	return true, nil
}

// legacyFallback is Snapshot's way with a session that has no app-bound
// directory dir: it migrates the session's legacy directory when the store
// confirms it and returns the migrated directory's information; otherwise
// CodeNotFound, saying when a legacy directory was left alone.
func (m *Manager) legacyFallback(ctx context.Context, scope artifacts.Scope, dir string) (fs.FileInfo, error) {
	const op = "workspace snapshot"
	adopted, err := m.adoptLegacy(ctx, scope)
	if err != nil {
		return nil, err
	}
	if adopted {
		return m.root.Lstat(dir)
	}
	legacy := LegacyDirName(scope.User, scope.Session)
	if _, err := m.root.Lstat(legacy); err == nil {
		return nil, scopeError(artifacts.CodeNotFound, op, &scope, nil, "no workspace directory %s; the legacy directory %s of the same user and session is not bound to this app (see ws list), so nothing was snapshotted", dir, legacy)
	}
	return nil, scopeError(artifacts.CodeNotFound, op, &scope, fs.ErrNotExist, "no workspace directory %s under %s", dir, m.scratch)
}

// legacyProblem says what becomes of a legacy directory name whose index
// claims ix, confirming the app with the store when the manager has one.
func (m *Manager) legacyProblem(ctx context.Context, ix Index, info *Info) string {
	claim := "a directory from before app-bound names, claiming " + ix.Scope().String()
	rec, why, err := m.confirmLegacy(ctx, ix)
	switch {
	case err != nil:
		why = "looking up its snapshot failed: " + err.Error()
	case why == "":
		info.LegacyConfirmed = rec.Version
		return claim + "; its app is confirmed by snapshot v" + strconv.FormatInt(rec.Version, 10) + ": opening the session or the next sweep moves it to " + DirName(ix.App, ix.User, ix.Session)
	}
	return claim + ", which nothing confirms (" + why + "); never read by the manager, never removed by a sweep: check its files and move them into the app's workspace by hand, or remove it"
}
