package workspace

import (
	"errors"
	"io/fs"
	"os"
	"slices"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// readDir returns the entries of directory name with the types the
// directory reports (no Lstat per entry), sorted by name; the reserved
// names at the top are hidden, and nothing else. top, when not nil, is an open descriptor of the root's
// directory: a directory named by one component is opened relative to it
// (see openDirAt), otherwise through the root, and must be the one
// examined.
func (t tree) readDir(root *os.Root, top *os.File, name string) ([]fs.DirEntry, error) {
	op := t.op + " read dir"
	p, err := cleanPath(op, t.scope, name, true, t.reserved)
	if err != nil {
		return nil, err
	}
	var typed []typedEntry
	ok := false
	if top != nil {
		typed, ok, err = readEntriesAt(top, p)
	}
	if !ok {
		var d *os.File
		if d, err = t.openDir(root, op, name, p); err != nil {
			return nil, err
		}
		defer d.Close()
		typed, err = readEntries(d)
	}
	if err != nil {
		return nil, osError(op, t.scope, name, err)
	}
	if t.reserved && p == "." {
		typed = slices.DeleteFunc(typed, func(e typedEntry) bool { return IsReserved(e.name) })
	}
	ents := make([]fs.DirEntry, len(typed))
	for i := range typed {
		ents[i] = &typed[i]
	}
	return ents, nil
}

// eachEntry calls fn for each entry of directory name, in name order, as
// readDir lists them, without a string or an allocation per entry: the
// name is valid only during the call.
func (t tree) eachEntry(root *os.Root, top *os.File, name string, fn func(name []byte, typ fs.FileMode)) error {
	op := t.op + " read dir"
	p, err := cleanPath(op, t.scope, name, true, t.reserved)
	if err != nil {
		return err
	}
	emit := fn
	if t.reserved && p == "." {
		emit = func(n []byte, typ fs.FileMode) {
			if !isReservedBytes(n) {
				fn(n, typ)
			}
		}
	}
	ok := false
	if top != nil {
		ok, err = eachEntryAt(top, p, emit)
	}
	if !ok {
		var d *os.File
		if d, err = t.openDir(root, op, name, p); err != nil {
			return err
		}
		defer d.Close()
		err = eachEntry(d, emit)
	}
	if err != nil {
		return osError(op, t.scope, name, err)
	}
	return nil
}

// openDir opens the directory p (name cleaned) through the root and
// checks that it is a directory and the one at that name.
func (t tree) openDir(root *os.Root, op, name, p string) (*os.File, error) {
	d, err := root.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, osError(op, t.scope, name, err)
	}
	if p != "." {
		held, err1 := d.Stat()
		named, err2 := root.Lstat(p)
		var bad error
		switch {
		case err1 != nil || err2 != nil:
			bad = scopeError(artifacts.CodeConflict, op, t.scope, nil, "%q was replaced while being listed", name)
		case !named.IsDir():
			bad = scopeError(artifacts.CodeInvalidArgument, op, t.scope, nil, "%q is not a directory", name)
		case !os.SameFile(held, named):
			bad = scopeError(artifacts.CodeConflict, op, t.scope, nil, "%q was replaced while being listed", name)
		}
		if bad != nil {
			d.Close()
			return nil, bad
		}
	}
	return d, nil
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
	return w.tree().readDir(root, w.heldDir(), name)
}

// EachEntry calls fn for each entry of a directory of the workspace ("."
// for the top), in name order, with the entries and types ReadDir
// returns, but without allocating per entry: name is valid only during
// the call (copy it to keep it). fn must not call the workspace.
func (w *Workspace) EachEntry(name string, fn func(name []byte, typ fs.FileMode)) error {
	root, done, err := w.use()
	if err != nil {
		return err
	}
	defer done()
	return w.tree().eachEntry(root, w.heldDir(), name, fn)
}

// ReadDir is Workspace.ReadDir for the reference tree.
func (r *Reference) ReadDir(name string) ([]fs.DirEntry, error) {
	return r.tree().readDir(r.root, nil, name)
}

// EachEntry is Workspace.EachEntry for the reference tree.
func (r *Reference) EachEntry(name string, fn func(name []byte, typ fs.FileMode)) error {
	return r.tree().eachEntry(r.root, nil, name, fn)
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
