//go:build unix

package osutil

import (
	"errors"
	"os"
	"syscall"
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

// ReadFileMax reads a small file whole with plain system calls (the os
// package's file set-up is most of the cost of reading a 300-byte file).
// A file of more than max bytes gives ErrTooLarge.
func ReadFileMax(path string, max int) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	b := make([]byte, 0, 1024)
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
		if len(b) > max {
			return nil, ErrTooLarge
		}
	}
}
