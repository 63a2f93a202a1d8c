//go:build !linux

package adkfile

// renameNoReplace renames the entry oldName of the directory dir to
// newName, failing with an error matching fs.ErrExist when newName exists.
// Off Linux the check and the rename are two steps.
func (s *Store) renameNoReplace(dir, oldName, newName string) error {
	return s.renameChecked(dir, oldName, newName)
}
