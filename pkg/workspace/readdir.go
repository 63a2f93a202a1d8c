package workspace

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

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
	typed, err := readEntries(d)
	if err != nil {
		return nil, osError(op, t.scope, name, err)
	}
	if t.reserved {
		typed = slices.DeleteFunc(typed, func(e typedEntry) bool { return strings.HasPrefix(e.name, ReservedPrefix) })
	}
	slices.SortFunc(typed, func(a, b typedEntry) int { return strings.Compare(a.name, b.name) })
	ents := make([]fs.DirEntry, len(typed))
	for i := range typed {
		ents[i] = &typed[i]
	}
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

// typedEntry is a directory entry with a name and a type only.
type typedEntry struct {
	name string
	typ  fs.FileMode
}

func (e *typedEntry) Name() string      { return e.name }
func (e *typedEntry) IsDir() bool       { return e.typ.IsDir() }
func (e *typedEntry) Type() fs.FileMode { return e.typ }

// Info is refused: it would resolve a path outside the root.
func (e *typedEntry) Info() (fs.FileInfo, error) {
	return nil, &fs.PathError{Op: "info", Path: e.name, Err: errors.ErrUnsupported}
}
