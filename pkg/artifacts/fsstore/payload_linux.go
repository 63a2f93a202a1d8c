package fsstore

import (
	"errors"
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// openPayloadFast opens the payload file at path for reading in one system
// call that refuses a symbolic link anywhere in the path (openat2 with
// RESOLVE_NO_SYMLINKS: stricter than the checks of nameDir and
// osutil.OpenRegular, which it replaces), without blocking on a named
// pipe, and returns it with its size if it is a regular file. ok is false
// whenever that does not work out (a symbolic link above the store, a
// missing file, a kernel without openat2, anything but a regular file):
// the caller then takes the ordinary path, which tells what is wrong.
//
// The file is read through its descriptor: an *os.File costs several
// system calls more per open (fcntl, epoll_ctl), which is much of the cost
// of verifying a small payload.
func openPayloadFast(path string) (f payloadBody, size int64, ok bool) {
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOFOLLOW, Resolve: unix.RESOLVE_NO_SYMLINKS}
	var fd int
	var err error
	for {
		fd, err = unix.Openat2(unix.AT_FDCWD, path, &how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, 0, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, 0, false
	}
	return &payloadFile{fd: fd, path: path, size: st.Size}, st.Size, true
}

// payloadFile is a payload file read through its descriptor.
type payloadFile struct {
	fd   int
	path string
	size int64 // as fstat gave it when the file was opened
	off  int64 // read so far
}

// Read reads from the current offset. Once it has read the size the file
// had when it was opened, it says io.EOF without asking the kernel again
// (a payload is never appended to: this saves a read per small payload);
// a file cut shorter meanwhile ends where the kernel says.
func (f *payloadFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if f.off >= f.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), f.size-f.off)]
	for {
		n, err := unix.Read(f.fd, p)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, &fs.PathError{Op: "read", Path: f.path, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		f.off += int64(n)
		return n, nil
	}
}

// ReadAt reads len(p) bytes at off, or fewer with an error.
func (f *payloadFile) ReadAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.Pread(f.fd, p[done:], off+int64(done))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return done, &fs.PathError{Op: "read", Path: f.path, Err: err}
		case n == 0:
			return done, io.EOF
		}
		done += n
	}
	return done, nil
}

// Close closes the descriptor (once).
func (f *payloadFile) Close() error {
	if f.fd < 0 {
		return nil
	}
	err := unix.Close(f.fd)
	f.fd = -1
	if err != nil && !errors.Is(err, unix.EINTR) {
		return &fs.PathError{Op: "close", Path: f.path, Err: err}
	}
	return nil
}
