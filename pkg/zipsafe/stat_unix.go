//go:build unix && !linux

package zipsafe

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Stat returns the file's information through a duplicate of its
// descriptor.
func (f *fdFile) Stat() (fs.FileInfo, error) {
	fd, err := unix.Dup(f.fd)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	d := os.NewFile(uintptr(fd), f.name)
	defer d.Close()
	return d.Stat()
}
