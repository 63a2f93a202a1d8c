//go:build unix

package zipsafe

import (
	"errors"
	"io/fs"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// dirCache creates the files of the new tree, keeping the directory it
// created the last file in open. Files are created with openat(2) relative
// to that directory, which was opened through the root: exclusively and
// without following a symbolic link, as os.Root would, but without the
// bookkeeping an *os.File costs per file (about five system calls).
type dirCache struct {
	root *os.Root
	dir  string
	f    *os.File
	file fdFile // the file being written, one at a time
}

func (c *dirCache) close() {
	if c.f != nil {
		c.f.Close()
		c.f, c.dir = nil, ""
	}
}

// create creates base in dir (relative to the root; name is dir/base)
// with mode perm. The file it returns is valid until the next call.
func (c *dirCache) create(dir, base, name string, perm os.FileMode) (fileWriter, error) {
	if c.f == nil || c.dir != dir {
		c.close()
		name := dir
		if name == "" {
			name = "."
		}
		f, err := c.root.Open(name)
		if err != nil {
			return nil, err
		}
		c.f, c.dir = f, dir
	}
	for {
		fd, err := unix.Openat(int(c.f.Fd()), base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		runtime.KeepAlive(c.f)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "create", Path: name, Err: err}
		}
		c.file = fdFile{fd: fd, name: name}
		return &c.file, nil
	}
}

// fdFile is a file being written through its descriptor.
type fdFile struct {
	fd   int
	name string
}

func (f *fdFile) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Write(f.fd, p[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "write", Path: f.name, Err: err}
		}
		n += m
	}
	return n, nil
}

func (f *fdFile) Close() error {
	if err := unix.Close(f.fd); err != nil && !errors.Is(err, unix.EINTR) {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}
