//go:build unix

package osutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// OpenNoFollow is added to open flags when a path's last element must not
// be a symbolic link and a FIFO must not block the open.
const OpenNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// OpenNonBlock is added to open flags so that opening a FIFO does not block.
const OpenNonBlock = syscall.O_NONBLOCK

// ProcessGone reports whether no process with pid exists on this host.
func ProcessGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// Rename renames oldpath to newpath with rename(2), which also replaces an
// empty directory at newpath (os.Rename refuses to).
func Rename(oldpath, newpath string) error { return syscall.Rename(oldpath, newpath) }

// LockShared takes a shared advisory lock (flock) on f, waiting for an
// exclusive holder to let go. Closing f releases it.
func LockShared(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// LockExclusive takes an exclusive advisory lock (flock) on f, waiting
// for other holders to let go. Closing f releases it.
func LockExclusive(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// TryLockExclusive takes an exclusive advisory lock (flock) on f without
// waiting; held is false when another open file holds a lock on it.
func TryLockExclusive(f *os.File) (held bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// Inode returns the inode number of fi, 0 where it is not known.
func Inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// Device returns the device number of fi, 0 where it is not known.
func Device(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

// Links returns the link count of fi; ok is false where it is not known.
func Links(fi os.FileInfo) (n uint64, ok bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink), true
	}
	return 0, false
}

// openDirectory makes an open fail unless the path is a directory.
const openDirectory = syscall.O_DIRECTORY

// refuseLink does nothing here: O_NOFOLLOW refuses the link at open.
func refuseLink(string) error { return nil }

// notRegular turns the ELOOP that O_NOFOLLOW gives for a symbolic link
// into a *NotRegularError; other errors are returned unchanged.
func notRegular(path string, err error) error {
	if !errors.Is(err, syscall.ELOOP) {
		return err
	}
	if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return err
}

// ReadFileMax reads a small regular file whole with plain system calls
// (the os package's file set-up is most of the cost of reading a 300-byte
// file). It opens like OpenRegular: a symbolic link, named pipe, device or
// anything else that is not a regular file gives a *NotRegularError and is
// never read from, so it cannot block. A file of more than max bytes gives
// ErrTooLarge.
func ReadFileMax(path string, max int) ([]byte, error) {
	return readFileMaxAt(unix.AT_FDCWD, path, path, max)
}

// ReadFileMaxAt is ReadFileMax for the file name in the open directory
// dir: name is looked up in dir alone (one path element, not the whole
// path again), and not followed if it is a symbolic link.
func ReadFileMaxAt(dir *os.File, name string, max int) ([]byte, error) {
	b, err := readFileMaxAt(int(dir.Fd()), name, filepath.Join(dir.Name(), name), max)
	runtime.KeepAlive(dir)
	return b, err
}

// readFileMaxAt reads name relative to dirfd; path names it in errors.
// The file is read until a read returns nothing, or until it has given
// the size fstat reported in a read that did not fill the buffer (the
// end of a regular file): one read for a file that fits.
func readFileMaxAt(dirfd int, name, path string, limit int) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, notRegular(path, &os.PathError{Op: "open", Path: path, Err: err})
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if uint32(st.Mode)&syscall.S_IFMT != syscall.S_IFREG {
		return nil, &NotRegularError{Path: path, Mode: ModeType(uint32(st.Mode))}
	}
	b := make([]byte, 0, min(max(st.Size, 0), int64(limit))+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
		if len(b) > limit {
			return nil, ErrTooLarge
		}
		if int64(len(b)) == st.Size && len(b) < cap(b) {
			return b, nil
		}
	}
}

// ModeType converts the file type bits of a stat mode to an fs.FileMode:
// 0 for a regular file, fs.ModeIrregular for a type it does not know.
func ModeType(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFREG:
		return 0
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// Unlock releases the advisory lock (flock) f holds.
func Unlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
