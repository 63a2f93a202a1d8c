//go:build unix

package osutil

import (
	"errors"
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
