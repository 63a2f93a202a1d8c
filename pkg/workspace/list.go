package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// State is the state of an entry of the scratch root.
type State string

// The states ListWorkspaces reports.
const (
	// StateOK: a directory with an index that decodes and whose key
	// hashes to the directory's name.
	StateOK State = "ok"
	// StateNoIndex: a directory without an index record.
	StateNoIndex State = "no_index"
	// StateBadIndex: a directory whose index does not decode, is not a
	// regular file, or whose key does not hash to the directory's name.
	StateBadIndex State = "bad_index"
	// StateNotADirectory: a regular or special file.
	StateNotADirectory State = "not_a_directory"
	// StateSymlink: a symbolic link (never followed).
	StateSymlink State = "symlink"
	// StateLegacy: a directory under the name earlier versions gave a
	// session (LegacyDirName: user and session, no app) whose index
	// decodes. Nothing binds the app its index names, so it has no scope:
	// the manager migrates it to its app-bound name when the store confirms
	// the app (Manager.Migrate) and never reads it otherwise; the sweep
	// never removes it under this name.
	StateLegacy State = "legacy"
)

// Info describes one entry of the scratch root.
type Info struct {
	// Dir is the entry's name in the scratch root.
	Dir string
	// State is the entry's state.
	State State
	// Index is the decoded index when State is StateOK, else nil. Only
	// then does the entry have a scope.
	Index *Index
	// Claimed is the index of a StateLegacy entry: what it claims, which
	// nothing confirms unless LegacyConfirmed is set.
	Claimed *Index
	// LegacyConfirmed is the snapshot version that confirms the app of a
	// StateLegacy entry (Manager.ConfirmLegacy); 0 when it is unconfirmed
	// or the manager has no store.
	LegacyConfirmed int64
	// Problem says why the state is not StateOK.
	Problem string
	// Mode is the entry's type and permissions (Lstat).
	Mode fs.FileMode
	// Temporary is true for the manager's and zipsafe's temporary entries
	// (a hydration or extraction in progress, or left by a crash).
	Temporary bool
	// Bytes and Files count the regular files below a directory and their
	// bytes, the index excluded; symbolic links are not followed.
	Bytes int64
	Files int
	// LastAccess is when the workspace was last used: the later of the
	// index's last access (IndexAccess) and the newest modification of
	// any entry below the directory (LastChange), so that files edited
	// behind the manager's back count as use. For an entry without a good
	// index it is the later of its modification time and LastChange.
	LastAccess time.Time
	// IndexAccess is the index's last access; zero unless State is StateOK.
	IndexAccess time.Time
	// LastChange is the newest modification time of any entry below a
	// directory (the reserved names excluded); zero when it has none.
	LastChange time.Time
	// Idle is the time since LastAccess (never negative).
	Idle time.Duration
	// HasSnapshot is true when the session's SnapshotName has a published
	// version: SnapshotVersion, the latest. It is false when there is none,
	// the scope is unknown, or the manager has no store.
	HasSnapshot     bool
	SnapshotVersion int64
	// SnapshotErr is the store's error when looking up the snapshot failed
	// for another reason than not_found.
	SnapshotErr error
}

// Scope returns the entry's session scope; ok is false unless State is
// StateOK.
func (i Info) Scope() (scope artifacts.Scope, ok bool) {
	if i.State != StateOK || i.Index == nil {
		return artifacts.Scope{}, false
	}
	return i.Index.Scope(), true
}

// isTemporary reports whether a scratch-root entry name is a temporary
// entry of this package or of zipsafe.
func isTemporary(name string) bool {
	return strings.HasPrefix(name, ReservedPrefix) ||
		(strings.HasPrefix(name, ".") && (strings.Contains(name, ".zipsafe-new-") || strings.Contains(name, ".zipsafe-old-")))
}

// ListWorkspaces reports every entry of the scratch root, sorted by name:
// its state, scope (only from a good index), size, last access, idle time
// and latest snapshot version. Nothing is modified.
func (m *Manager) ListWorkspaces(ctx context.Context) ([]Info, error) {
	const op = "workspace list"
	d, err := m.root.Open(".")
	if err != nil {
		return nil, osError(op, nil, m.scratch, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, osError(op, nil, m.scratch, err)
	}
	slices.Sort(names)
	out := make([]Info, 0, len(names))
	for _, n := range names {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return nil, err
		}
		info, err := m.Inspect(ctx, n)
		if errors.Is(err, fs.ErrNotExist) || artifacts.IsNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Inspect reports one entry of the scratch root, as ListWorkspaces does.
func (m *Manager) Inspect(ctx context.Context, name string) (Info, error) {
	const op = "workspace inspect"
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return Info{}, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "%q is not an entry name", name)
	}
	now := m.opts.Now()
	fi, err := m.root.Lstat(name)
	if err != nil {
		return Info{}, osError(op, nil, name, err)
	}
	info := Info{Dir: name, Mode: fi.Mode(), Temporary: isTemporary(name), LastAccess: fi.ModTime().UTC()}
	if !fi.IsDir() {
		info.State = StateNotADirectory
		switch t := fi.Mode().Type(); {
		case t&fs.ModeSymlink != 0:
			info.State, info.Problem = StateSymlink, "a symbolic link (not followed)"
		case t == 0:
			info.Problem = "a regular file"
		default:
			info.Problem = "a special file (" + t.String() + ")"
		}
		info.Idle = max(now.Sub(info.LastAccess), 0)
		return info, nil
	}
	root, err := m.root.OpenRoot(name)
	if err != nil {
		return Info{}, osError(op, nil, name, err)
	}
	defer root.Close()
	if st, err := root.Stat("."); err != nil || !os.SameFile(st, fi) {
		return Info{}, artifacts.Errorf(artifacts.CodeConflict, op, err, "%s was replaced while being inspected", name)
	}
	ix, err := readIndex(root, name)
	switch {
	case err == nil:
		info.State, info.Index = StateOK, &ix
		info.LastAccess, info.IndexAccess = ix.LastAccess.UTC(), ix.LastAccess.UTC()
	case errors.Is(err, fs.ErrNotExist):
		info.State, info.Problem = StateNoIndex, "no index record"
	case errors.Is(err, ErrUnboundApp):
		info.State, info.Claimed = StateLegacy, &ix
		info.Problem = m.legacyProblem(ctx, ix, &info)
	default:
		info.State, info.Problem = StateBadIndex, err.Error()
	}
	sc, err := scanTree(root)
	if err != nil {
		return Info{}, osError(op, nil, name, err)
	}
	info.Bytes, info.Files = sc.Bytes, sc.Files
	if !sc.Newest.IsZero() {
		info.LastChange = sc.Newest.UTC()
		if info.LastChange.After(info.LastAccess) {
			info.LastAccess = info.LastChange
		}
	}
	info.Idle = max(now.Sub(info.LastAccess), 0)
	if info.State == StateOK && m.opts.Store != nil {
		rec, err := m.opts.Store.Stat(ctx, ix.Scope(), SnapshotName, artifacts.Latest)
		switch {
		case err == nil:
			info.HasSnapshot, info.SnapshotVersion = true, rec.Version
		case !artifacts.IsNotFound(err):
			info.SnapshotErr = err
		}
	}
	return info, nil
}
