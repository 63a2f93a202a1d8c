package adkfile

import (
	"errors"
	"io/fs"
	"os"
	"path"
)

// renameChecked renames dir/oldName to dir/newName after checking that
// the new name does not exist: not atomic, for file systems without a
// no-replace rename.
func (s *Store) renameChecked(dir, oldName, newName string) error {
	if _, err := s.root.Lstat(path.Join(dir, newName)); err == nil {
		return &os.LinkError{Op: "rename", Old: oldName, New: newName, Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return s.root.Rename(path.Join(dir, oldName), path.Join(dir, newName))
}
