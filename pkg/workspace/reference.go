package workspace

import (
	"io/fs"
	"os"
)

// Reference is a read-only tree of reference files (documentation, data
// sets) shared by every session. It has read methods only: nothing
// reachable through it can be written, renamed or removed. Like the
// workspace, it resolves every path through an os.Root, so neither ".."
// nor a symbolic link leads outside it, and a final symbolic link is
// never followed. A file with more than one hard link is not read (Open
// and ReadLines refuse it with CodePermission): its other name may be
// outside the tree.
type Reference struct {
	root *os.Root
}

// OpenReference opens the reference tree at dir.
func OpenReference(dir string) (*Reference, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, osError("reference open", nil, dir, err)
	}
	return &Reference{root: root}, nil
}

func (r *Reference) tree() tree { return tree{op: "reference", singleLink: true} }

// Open opens a regular reference file for reading.
func (r *Reference) Open(name string) (*File, error) { return r.tree().open(r.root, name) }

// ReadLines returns up to count lines of a reference text file starting
// at line offset (0-based).
func (r *Reference) ReadLines(name string, offset, count int) (Lines, error) {
	return r.tree().readLines(r.root, name, offset, count)
}

// Stat describes a reference file or directory without following a final
// symbolic link; "." is the top.
func (r *Reference) Stat(name string) (fs.FileInfo, error) { return r.tree().stat(r.root, name) }

// List returns the entries of a reference directory ("." for the top),
// sorted by name.
func (r *Reference) List(name string) ([]fs.FileInfo, error) { return r.tree().list(r.root, name) }

// Close releases the reference tree.
func (r *Reference) Close() error { return r.root.Close() }
