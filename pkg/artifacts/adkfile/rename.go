package adkfile

import (
	"errors"
	"io/fs"
	"os"
	"path"
)

// moveChecked renames oldDir/oldName to newDir/newName after checking that
// the new name does not exist: not atomic, for file systems without a
// no-replace rename.
func (s *Store) moveChecked(oldDir, oldName, newDir, newName string) error {
	if _, err := s.root.Lstat(path.Join(newDir, newName)); err == nil {
		return &os.LinkError{Op: "rename", Old: oldName, New: newName, Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return s.root.Rename(path.Join(oldDir, oldName), path.Join(newDir, newName))
}
