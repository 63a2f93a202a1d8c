package workspace

import (
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// The calls of this file work relative to an open directory's descriptor
// with one name component: the kernel resolves nothing else, and they
// make none of the extra system calls an os.Root makes for an open (four
// fcntl calls, an attempt to add the file to the runtime's poller, a stat
// to check what was opened) or a rename (an lstat of the target).

// oneComponent reports whether name is one path component other than
// "." and "..".
func oneComponent(name string) bool {
	return name != "" && name != "." && name != ".." && strings.IndexByte(name, '/') < 0
}

// at runs fn with the descriptor of dir, again while it fails with EINTR.
func at(dir *os.File, fn func(dfd int) error) error {
	rc, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(dfd uintptr) {
		for {
			if ferr = fn(int(dfd)); ferr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}

// openDirAt opens the directory name (one path component, or "." for dir
// itself) relative to the open directory dir without following a
// symbolic link: the directory opened is the one at that name, on a new
// descriptor with its own offset, which the caller closes with
// unix.Close. O_NOFOLLOW and O_DIRECTORY make the kernel refuse a link
// and anything but a directory, so nothing needs checking after the open.
func openDirAt(dir *os.File, name string) (int, error) {
	if name != "." && !oneComponent(name) {
		return -1, &fs.PathError{Op: "openat", Path: name, Err: unix.EINVAL}
	}
	fd := -1
	err := at(dir, func(dfd int) (err error) {
		fd, err = unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	return fd, nil
}

// createAt creates the new file name (one path component) relative to
// the open directory dir, for writing (O_EXCL: an existing name, a
// symbolic link included, is refused), with one openat.
func createAt(dir *os.File, name string, perm os.FileMode) (*os.File, error) {
	if !oneComponent(name) {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: unix.EINVAL}
	}
	fd := -1
	err := at(dir, func(dfd int) (err error) {
		fd, err = unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// renameAt renames the file oldname to newname, both one path component
// in the open directory dir, replacing a file at newname. It fails as an
// os.Root's Rename does when newname is a directory (EEXIST, in an
// *os.LinkError), without its lstat of the target first.
func renameAt(dir *os.File, oldname, newname string) error {
	if !oneComponent(oldname) || !oneComponent(newname) {
		return &os.LinkError{Op: "renameat", Old: oldname, New: newname, Err: unix.EINVAL}
	}
	err := at(dir, func(dfd int) error { return unix.Renameat(dfd, oldname, dfd, newname) })
	switch err {
	case nil:
		return nil
	case unix.EISDIR:
		err = unix.EEXIST // as os.Root's Rename reports a directory in the way
	}
	return &os.LinkError{Op: "renameat", Old: oldname, New: newname, Err: err}
}
