//go:build !unix

package osutil

import "os"

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
