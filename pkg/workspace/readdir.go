package workspace

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// readDir returns the entries of directory name with the types the
// directory reports (no Lstat per entry), sorted by name; reserved names
// are hidden. The directory is opened through the root and must be the
// one examined.
func (t tree) readDir(root *os.Root, name string) ([]fs.DirEntry, error) {
	op := t.op + " read dir"
	p, err := cleanPath(op, t.scope, name, true, t.reserved)
	if err != nil {
		return nil, err
	}
	d, err := root.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, osError(op, t.scope, name, err)
	}
	defer d.Close()
	if p != "." {
		held, err1 := d.Stat()
		named, err2 := root.Lstat(p)
		switch {
		case err1 != nil || err2 != nil:
			return nil, pathError(artifacts.CodeConflict, op, t.scope, nil, "%q was replaced while being listed", name)
		case !named.IsDir():
			return nil, pathError(artifacts.CodeInvalidArgument, op, t.scope, nil, "%q is not a directory", name)
		case !os.SameFile(held, named):
			return nil, pathError(artifacts.CodeConflict, op, t.scope, nil, "%q was replaced while being listed", name)
		}
	}
	ents, err := listTyped(d)
	if err != nil {
		return nil, osError(op, t.scope, name, err)
	}
	if t.reserved {
		ents = slices.DeleteFunc(ents, func(e fs.DirEntry) bool { return strings.HasPrefix(e.Name(), ReservedPrefix) })
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// ReadDir returns the entries of a directory of the workspace ("." for
// the top), sorted by name, typed as the directory reports them: no
// Lstat per entry, so it is fast on large directories; call Stat or List
// for sizes and times. A symbolic link is reported as one and never
// followed; the index and the manager's temporary files are not listed.
func (w *Workspace) ReadDir(name string) ([]fs.DirEntry, error) {
	root, done, err := w.use()
	if err != nil {
		return nil, err
	}
	defer done()
	return w.tree().readDir(root, name)
}

// ReadDir is Workspace.ReadDir for the reference tree.
func (r *Reference) ReadDir(name string) ([]fs.DirEntry, error) {
	return r.tree().readDir(r.root, name)
}

// listTyped lists an open directory with the entry types it reports. A
// directory opened through an os.Root would Lstat every entry; a
// duplicate of its descriptor does not. The entries answer Name, IsDir and
// Type only: Info is refused, since it would resolve a path outside the
// root.
func listTyped(d *os.File) ([]fs.DirEntry, error) {
	dup, err := osutil.DupFile(d)
	if err != nil {
		return d.ReadDir(-1)
	}
	defer dup.Close()
	ents, err := dup.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	for i, e := range ents {
		ents[i] = typedEntry{name: e.Name(), typ: e.Type()}
	}
	return ents, nil
}

// typedEntry is a directory entry with a name and a type only.
type typedEntry struct {
	name string
	typ  fs.FileMode
}

func (e typedEntry) Name() string      { return e.name }
func (e typedEntry) IsDir() bool       { return e.typ.IsDir() }
func (e typedEntry) Type() fs.FileMode { return e.typ }
func (e typedEntry) Info() (fs.FileInfo, error) {
	return nil, &fs.PathError{Op: "info", Path: e.name, Err: errors.ErrUnsupported}
}
