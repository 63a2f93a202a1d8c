//go:build !unix

package osutil

import (
	"io/fs"
	"os"
	"path/filepath"
)

// OpenNoFollow is zero where the flag does not exist; os.Root still keeps
// opens beneath their root.
const OpenNoFollow = 0

// OpenNonBlock is zero where the flag does not exist.
const OpenNonBlock = 0

// ProcessGone reports whether no process with pid exists on this host.
func ProcessGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	p.Release()
	return false
}

// Rename renames oldpath to newpath.
func Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// LockShared does nothing where flock does not exist: workspaces and
// sweeps on such systems must not share a scratch root with live sessions.
func LockShared(f *os.File) error { return nil }

// LockExclusive does nothing where flock does not exist.
func LockExclusive(f *os.File) error { return nil }

// TryLockExclusive always succeeds where flock does not exist.
func TryLockExclusive(f *os.File) (held bool, err error) { return true, nil }

// Inode returns 0: the inode number is not known here.
func Inode(fi os.FileInfo) uint64 { return 0 }

// Device returns 0: the device number is not known here.
func Device(fi os.FileInfo) uint64 { return 0 }

// Links reports that the link count is not known here.
func Links(fi os.FileInfo) (n uint64, ok bool) { return 0, false }

// openDirectory makes an open fail unless the path is a directory.
const openDirectory = 0

// refuseLink refuses a symbolic link at path: there is no O_NOFOLLOW here.
func refuseLink(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return nil
}

// notRegular returns err unchanged.
func notRegular(path string, err error) error { return err }

// ReadFileMaxAt is ReadFileMax for the file name in the directory dir.
func ReadFileMaxAt(dir *os.File, name string, max int) ([]byte, error) {
	return ReadFileMax(filepath.Join(dir.Name(), name), max)
}

// ReadFileMax reads a small regular file whole (see OpenRegular); a file
// of more than max bytes gives ErrTooLarge.
func ReadFileMax(path string, max int) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllMax(f, max)
}

// Unlock does nothing where flock does not exist.
func Unlock(f *os.File) error { return nil }
