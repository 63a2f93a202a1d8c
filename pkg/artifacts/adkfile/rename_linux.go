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
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	fd := int(d.Fd())
	err = unix.Renameat2(fd, oldName, fd, newName, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY):
		return &os.LinkError{Op: "rename", Old: oldName, New: newName, Err: fs.ErrExist}
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		// A file system without RENAME_NOREPLACE: check, then rename.
		return s.renameChecked(dir, oldName, newName)
	}
	return &os.LinkError{Op: "rename", Old: oldName, New: newName, Err: err}
}
