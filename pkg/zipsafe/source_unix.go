//go:build unix

package zipsafe

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentstore/agentstore/internal/osutil"
)

// listDir lists the open directory d with the entry types the directory
// reports. A directory opened through an os.Root would Lstat every entry;
// a duplicate of its descriptor does not (entries of unknown type are
// still Lstat'ed relative to it).
func listDir(d *os.File) ([]fs.DirEntry, error) {
	dup, err := osutil.DupFile(d)
	if err != nil {
		return d.ReadDir(-1)
	}
	defer dup.Close()
	return dup.ReadDir(-1)
}

// srcDir is an open directory of the tree whose files the walk opens.
type srcDir struct {
	d  *os.File
	fd int
}

func newSrcDir(_ *os.Root, d *os.File) srcDir { return srcDir{d: d, fd: int(d.Fd())} }

// srcFile is a file of the tree being read through its descriptor: an
// *os.File would cost several system calls more per file (fcntl,
// epoll_ctl), which is most of the cost of archiving a small file.
type srcFile struct {
	fd   int
	name string
}

// srcStat is what Write needs of an opened file's status.
type srcStat struct {
	regular bool
	mode    fs.FileMode // type bits, for errors
	perm    fs.FileMode
	size    int64
	mtime   time.Time
}

// open opens name in the directory without following a symbolic link
// (ELOOP then) or blocking on a FIFO, and returns its status.
func (s srcDir) open(name string) (*srcFile, srcStat, error) {
	var st srcStat
	var fd int
	var err error
	for {
		fd, err = unix.Openat(s.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	runtime.KeepAlive(s.d)
	if err != nil {
		return nil, st, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var sys unix.Stat_t
	if err := unix.Fstat(fd, &sys); err != nil {
		unix.Close(fd)
		return nil, st, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	st = srcStat{
		regular: uint32(sys.Mode)&unix.S_IFMT == unix.S_IFREG,
		mode:    osutil.ModeType(uint32(sys.Mode)),
		perm:    fs.FileMode(uint32(sys.Mode) & 0o777),
		size:    sys.Size,
		mtime:   time.Unix(sys.Mtim.Unix()),
	}
	return &srcFile{fd: fd, name: name}, st, nil
}

// isSymlinkErr reports whether err is what opening a symbolic link
// without following it returns.
func isSymlinkErr(err error) bool { return errors.Is(err, unix.ELOOP) }

func (f *srcFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(f.fd, p)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f *srcFile) Seek(offset int64, whence int) (int64, error) {
	n, err := unix.Seek(f.fd, offset, whence)
	if err != nil {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: err}
	}
	return n, nil
}

func (f *srcFile) Close() error {
	if f.fd < 0 {
		return nil
	}
	err := unix.Close(f.fd)
	f.fd = -1
	if err != nil && !errors.Is(err, unix.EINTR) {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}
