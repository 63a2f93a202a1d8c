package adkfile

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames the entry oldName of the directory dir
// (relative to the root) to newName atomically, failing with an error
// matching fs.ErrExist when newName exists (even as an empty directory,
// which rename(2) would replace). Both names are single entries of dir,
// which is opened through the root, so nothing outside it is touched.
func (s *Store) renameNoReplace(dir, oldName, newName string) error {
	return s.moveNoReplace(dir, oldName, dir, newName)
}

// moveNoReplace renames the entry oldName of the directory oldDir to the
// entry newName of the directory newDir (both relative to the root)
// atomically, failing with an error matching fs.ErrExist when newName
// exists. Both directories are opened through the root and the names are
// single entries, so nothing outside the root is touched and no symbolic
// link is followed.
func (s *Store) moveNoReplace(oldDir, oldName, newDir, newName string) error {
	od, err := s.root.Open(oldDir)
	if err != nil {
		return err
	}
	defer od.Close()
	nd, err := s.root.Open(newDir)
	if err != nil {
		return err
	}
	defer nd.Close()
	err = unix.Renameat2(int(od.Fd()), oldName, int(nd.Fd()), newName, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY):
		return &os.LinkError{Op: "rename", Old: oldName, New: newName, Err: fs.ErrExist}
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		// A file system without RENAME_NOREPLACE: check, then rename.
		return s.moveChecked(oldDir, oldName, newDir, newName)
	}
	return &os.LinkError{Op: "rename", Old: oldName, New: newName, Err: err}
}
