package workspace

import (
	"context"
	"io/fs"
	"os"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// SnapshotFormat names how a snapshot stores a workspace.
type SnapshotFormat string

// The snapshot formats.
const (
	// FormatZip is one whole archive per snapshot, a version of
	// SnapshotName (what an ADK runtime following the design loads).
	FormatZip SnapshotFormat = "zip"
	// FormatIncremental is a manifest and the packs of what changed
	// (package checkpoint; docs/layout.md, "Incremental snapshot format").
	FormatIncremental SnapshotFormat = "incremental"
	// FormatAuto is FormatZip for a tree of less than
	// Options.AutoThreshold file bytes, FormatIncremental from there and
	// once the zip's name is out of version numbers (CodeVersionCapacity).
	FormatAuto SnapshotFormat = "auto"
)

// DefaultAutoThreshold is the tree size from which FormatAuto writes
// incremental snapshots.
const DefaultAutoThreshold = 8 << 20

// ParseSnapshotFormat returns the format s names ("" is FormatZip), or
// CodeInvalidArgument.
func ParseSnapshotFormat(s string) (SnapshotFormat, error) {
	switch f := SnapshotFormat(s); f {
	case "":
		return FormatZip, nil
	case FormatZip, FormatIncremental, FormatAuto:
		return f, nil
	}
	return "", artifacts.Errorf(artifacts.CodeInvalidArgument, "snapshot format", nil, "unknown snapshot format %q: want zip, incremental or auto", s)
}

// checkpoints returns the incremental snapshots of scope.
func (m *Manager) checkpoints(scope artifacts.Scope) (*checkpoint.Checkpoints, error) {
	return checkpoint.New(checkpoint.Options{
		Store: m.opts.Store, Scope: scope, Limits: m.opts.Limits,
		MaxSnapshots: m.opts.MaxCheckpoints, Now: m.opts.Now,
	})
}

// writer returns the checkpoints of scope for a snapshot: with
// Options.MaxStoreBytes, bounded by it, charging the scope's other
// artifacts (otherBytes).
func (m *Manager) writer(ctx context.Context, scope artifacts.Scope) (*checkpoint.Checkpoints, error) {
	opts := checkpoint.Options{
		Store: m.opts.Store, Scope: scope, Limits: m.opts.Limits,
		MaxSnapshots: m.opts.MaxCheckpoints, Now: m.opts.Now,
		MaxStoredBytes: m.opts.MaxStoreBytes,
	}
	if opts.MaxStoredBytes > 0 {
		other, err := otherBytes(ctx, m.opts.Store, scope)
		if err != nil {
			return nil, err
		}
		opts.OtherBytes = other
	}
	return checkpoint.New(opts)
}

// otherBytes returns the bytes of the published versions of scope that
// are not the incremental format's (zip snapshots, deliverables).
func otherBytes(ctx context.Context, st *artifacts.Store, scope artifacts.Scope) (int64, error) {
	var n int64
	limit := st.Capabilities().MaxPageLimit
	cursor := ""
	for {
		page, err := st.ListNames(ctx, scope, artifacts.ListOptions{Cursor: cursor, Limit: limit})
		if artifacts.IsNotFound(err) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		for _, it := range page.Items {
			if checkpoint.IsFormatName(it.Name) {
				continue
			}
			vc := ""
			for {
				vp, err := st.ListVersions(ctx, scope, it.Name, artifacts.ListOptions{Cursor: vc, Limit: limit})
				if artifacts.IsNotFound(err) {
					break
				}
				if err != nil {
					return 0, err
				}
				for _, r := range vp.Items {
					n += r.Size
				}
				if vc = vp.NextCursor; vc == "" {
					break
				}
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			return n, nil
		}
	}
}

// snapshotFormat returns the format of a snapshot: the call's, else the
// manager's (FormatAuto is decided by autoFormat, from the tree's scan).
func (m *Manager) snapshotFormat(opts SnapshotOptions) (SnapshotFormat, error) {
	f := opts.Format
	if f == "" {
		f = m.opts.SnapshotFormat
	}
	return ParseSnapshotFormat(string(f))
}

// autoFormat is FormatAuto's choice for a tree of the given file bytes:
// a zip below the manager's AutoThreshold, incremental from it on;
// always incremental under Options.MaxStoreBytes, which bounds only
// incremental snapshots.
func (m *Manager) autoFormat(bytes int64) SnapshotFormat {
	if m.opts.MaxStoreBytes > 0 {
		return FormatIncremental
	}
	limit := m.opts.AutoThreshold
	if limit <= 0 {
		limit = DefaultAutoThreshold
	}
	if bytes < limit {
		return FormatZip
	}
	return FormatIncremental
}

// snapshotIncremental publishes an incremental snapshot of the tree
// under root, as snapshotRoot does a zip: nothing when the index shows
// the tree is the latest manifest's; the version and tree state recorded
// in the index ix (nil: none). before is the tree's scan, taken by
// snapshotRoot when ix is set.
func (m *Manager) snapshotIncremental(ctx context.Context, root *os.Root, scope artifacts.Scope, ix *Index, opts SnapshotOptions, before treeScan) (SnapshotResult, error) {
	cp, err := m.writer(ctx, scope)
	if err != nil {
		return SnapshotResult{}, err
	}
	res, err := cp.Snapshot(ctx, root, checkpoint.SnapshotOptions{
		Turn:     opts.Turn,
		Exclude:  func(rel string, _ fs.DirEntry) bool { return IsReserved(rel) },
		Progress: opts.Progress,
	})
	if err != nil {
		return SnapshotResult{}, err
	}
	t := res.Manifest.Totals
	out := SnapshotResult{
		Scope: scope, Version: res.Ref.Version, Unchanged: res.Unchanged,
		Files: t.Files, Dirs: t.Dirs, Bytes: t.Bytes, Record: res.Record,
		Format: FormatIncremental, Checkpoint: res.Ref, AddedBytes: res.AddedBytes,
	}
	for _, o := range res.Manifest.Omitted {
		out.Omitted = append(out.Omitted, Omission{Path: o.Path, Kind: o.Kind})
	}
	out.Skipped = len(out.Omitted)
	if ix != nil && !(res.Unchanged && ix.IsSnapshot(res.Record) && ix.TreeState == before.State) {
		nix := *ix
		nix.setSnapshot(res.Record)
		if after, err := scanTree(root); err == nil && after.State == before.State {
			nix.TreeState = before.State
		}
		if writeIndex(root, nix) == nil {
			*ix = nix
		}
	}
	return out, nil
}

// newestCheckpoint decides whether a hydration (of version, the zip
// snapshot's, or opts.Checkpoint) reads an incremental snapshot, and
// which. With opts.Checkpoint set, that one. For artifacts.Latest, the
// newer of the latest zip and the latest manifest by the store's
// records' creation times, the manifest when they are equal. A zip
// version otherwise.
func (m *Manager) newestCheckpoint(ctx context.Context, scope artifacts.Scope, version int64, opts HydrateOptions) (*checkpoint.Checkpoints, checkpoint.Ref, bool, error) {
	cp, err := m.checkpoints(scope)
	if err != nil {
		return nil, checkpoint.Ref{}, false, err
	}
	if opts.Checkpoint.Name != "" {
		return cp, opts.Checkpoint, true, nil
	}
	if version != artifacts.Latest {
		return nil, checkpoint.Ref{}, false, nil
	}
	mrec, err := cp.LatestRecord(ctx)
	if artifacts.IsNotFound(err) {
		return nil, checkpoint.Ref{}, false, nil
	}
	if err != nil {
		return nil, checkpoint.Ref{}, false, err
	}
	zrec, err := m.opts.Store.Stat(ctx, scope, SnapshotName, artifacts.Latest)
	switch {
	case artifacts.IsNotFound(err):
	case err != nil:
		return nil, checkpoint.Ref{}, false, err
	case zrec.CreatedAt > mrec.CreatedAt:
		return nil, checkpoint.Ref{}, false, nil
	}
	return cp, checkpoint.Ref{Name: mrec.Name, Version: mrec.Version}, true, nil
}

// hasSnapshot reports whether the scope has a snapshot of either format.
func (m *Manager) hasSnapshot(ctx context.Context, scope artifacts.Scope) (bool, error) {
	_, err := m.opts.Store.Stat(ctx, scope, SnapshotName, artifacts.Latest)
	if err == nil || !artifacts.IsNotFound(err) {
		return err == nil, err
	}
	cp, err := m.checkpoints(scope)
	if err != nil {
		return false, err
	}
	_, err = cp.LatestRecord(ctx)
	if artifacts.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// hydrateCheckpoint replaces the workspace's tree with manifest ref's,
// all or nothing, keeping the index, as hydrateLocked does with a zip;
// old is the existing directory (nil: none). w.mu is held exclusively.
func (w *Workspace) hydrateCheckpoint(ctx context.Context, old *os.Root, cp *checkpoint.Checkpoints, ref checkpoint.Ref, opts HydrateOptions) (HydrateResult, error) {
	const op = "workspace hydrate"
	m := w.m
	if len(opts.Paths) > 0 {
		return HydrateResult{}, scopeError(artifacts.CodeInvalidArgument, op, &w.scope, nil, "a workspace is hydrated whole; restore chosen paths into a new directory (HydrateTo)")
	}
	man, err := cp.Load(ctx, ref)
	if err != nil {
		return HydrateResult{}, err
	}
	rec, err := m.opts.Store.Stat(ctx, w.scope, ref.Name, ref.Version)
	if err != nil {
		return HydrateResult{}, err
	}
	if old != nil && !opts.Force {
		if err := m.checkOverwrite(ctx, old, w.scope, rec, checkpointLosses(ctx, old, cp, man)); err != nil {
			return HydrateResult{}, err
		}
	}
	var st checkpoint.RestoreStats
	err = zipsafe.Install(w.path, []string{IndexName}, func(r *os.Root) error {
		st, err = cp.Restore(ctx, man, r, checkpoint.RestoreOptions{Progress: opts.Progress})
		return err
	})
	if err != nil {
		return HydrateResult{}, zipError(op, w.scope, err)
	}
	root, err := m.root.OpenRoot(w.dir)
	if err != nil {
		return HydrateResult{}, osError(op, &w.scope, w.dir, err)
	}
	sc, err := scanTree(root)
	if err != nil {
		root.Close()
		return HydrateResult{}, osError(op, &w.scope, w.dir, err)
	}
	if err := w.hydrated(root, rec, sc); err != nil {
		return HydrateResult{}, err
	}
	return HydrateResult{
		Scope: w.scope, Version: ref.Version, Files: st.Files, Dirs: st.Dirs, Bytes: st.Bytes,
		Dir: w.path, Record: rec, Format: FormatIncremental, Checkpoint: ref,
	}, nil
}

// checkpointLosses is checkOverwrite's compare for the manifest man: the
// entries of the tree under old that it does not hold or holds otherwise,
// and the special files no snapshot holds.
func checkpointLosses(ctx context.Context, old *os.Root, cp *checkpoint.Checkpoints, man *checkpoint.Manifest) func(lose func(p, change string)) error {
	return func(lose func(p, change string)) error {
		changes, err := cp.DiffTree(ctx, man, old, checkpoint.SnapshotOptions{
			Exclude: func(rel string, d fs.DirEntry) bool {
				if t := d.Type(); !IsReserved(rel) && !t.IsDir() && !t.IsRegular() {
					lose(rel, EntryKind(t))
				}
				return IsReserved(rel)
			},
		})
		if err != nil {
			return err
		}
		for _, c := range changes {
			switch c.Kind {
			case checkpoint.Added:
				lose(c.Path, "new")
			case checkpoint.Modified:
				lose(c.Path, "modified")
			}
		}
		return nil
	}
}

// recordedSnapshot reports whether the snapshot ix names (of either
// format) is still in the store as ix recorded it.
func (m *Manager) recordedSnapshot(ctx context.Context, scope artifacts.Scope, ix Index) bool {
	rec, err := m.opts.Store.Stat(ctx, scope, ix.snapshotName(), ix.SnapshotVersion)
	return err == nil && ix.IsSnapshot(rec)
}

// hydrateCheckpointTo restores manifest ref into abs, a directory that
// does not exist yet, all or nothing, for inspection (HydrateTo).
func (m *Manager) hydrateCheckpointTo(ctx context.Context, cp *checkpoint.Checkpoints, ref checkpoint.Ref, abs string, opts HydrateOptions) (HydrateResult, error) {
	const op = "workspace hydrate"
	scope := cp.Scope()
	man, err := cp.Load(ctx, ref)
	if err != nil {
		return HydrateResult{}, err
	}
	rec, err := m.opts.Store.Stat(ctx, scope, ref.Name, ref.Version)
	if err != nil {
		return HydrateResult{}, err
	}
	var st checkpoint.RestoreStats
	err = zipsafe.Install(abs, nil, func(r *os.Root) error {
		st, err = cp.Restore(ctx, man, r, checkpoint.RestoreOptions{Paths: opts.Paths, Progress: opts.Progress})
		return err
	})
	if err != nil {
		return HydrateResult{}, zipError(op, scope, err)
	}
	return HydrateResult{Scope: scope, Version: ref.Version, Files: st.Files, Dirs: st.Dirs, Bytes: st.Bytes, Dir: abs, Record: rec, Format: FormatIncremental, Checkpoint: ref}, nil
}

// Checkpoints returns the incremental snapshots of a session scope: its
// History, Usage, manifests (List, Load) and Diff between two of them.
func (m *Manager) Checkpoints(scope artifacts.Scope) (*checkpoint.Checkpoints, error) {
	const op = "workspace checkpoints"
	if err := checkSession(op, scope); err != nil {
		return nil, err
	}
	if err := m.needStore(op); err != nil {
		return nil, err
	}
	return m.checkpoints(scope)
}

// DiffCheckpoint returns the changes from an incremental snapshot (ref;
// a zero ref: the latest) to the session's directory on this scratch
// root, the index left out. Files whose size, time and executable bit
// are the snapshot's are taken as unchanged; others are read to compare
// their content. Nothing is stored.
func (m *Manager) DiffCheckpoint(ctx context.Context, scope artifacts.Scope, ref checkpoint.Ref) ([]checkpoint.Change, error) {
	const op = "workspace diff"
	cp, err := m.Checkpoints(scope)
	if err != nil {
		return nil, err
	}
	var man *checkpoint.Manifest
	if ref.Name == "" {
		_, man, err = cp.Latest(ctx)
	} else {
		man, err = cp.Load(ctx, ref)
	}
	if err != nil {
		return nil, err
	}
	dir := DirName(scope.App, scope.User, scope.Session)
	root, err := m.root.OpenRoot(dir)
	if err != nil {
		return nil, osError(op, &scope, dir, err)
	}
	defer root.Close()
	return cp.DiffTree(ctx, man, root, checkpoint.SnapshotOptions{
		Exclude: func(rel string, _ fs.DirEntry) bool { return IsReserved(rel) },
	})
}
