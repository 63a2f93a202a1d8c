//go:build !linux

package adkfile

// renameNoReplace renames the entry oldName of the directory dir to
// newName, failing with an error matching fs.ErrExist when newName exists.
// Off Linux the check and the rename are two steps.
func (s *Store) renameNoReplace(dir, oldName, newName string) error {
	return s.moveChecked(dir, oldName, dir, newName)
}

// moveNoReplace renames oldDir/oldName to newDir/newName, failing with an
// error matching fs.ErrExist when the new name exists. Off Linux the check
// and the rename are two steps.
func (s *Store) moveNoReplace(oldDir, oldName, newDir, newName string) error {
	return s.moveChecked(oldDir, oldName, newDir, newName)
}
