//go:build unix

package mcpfs

import (
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// pollable returns a reader of r that waits for input in the Go runtime's
// poller rather than in a thread blocked in read, and a function that
// undoes that. A process's stdin is opened blocking: each read then holds
// an operating-system thread, the runtime's monitor takes the thread's
// processor away while it waits and keeps waking up, and a message costs
// several more thread switches than it needs. So when r is a pipe or a
// socket in blocking mode, pollable reads a duplicate of its descriptor
// set non-blocking (the mode belongs to the open file that both
// descriptors share); restore closes the duplicate and sets the mode back.
// Anything else (a terminal, a regular file, a file already non-blocking,
// any other io.Reader) is returned as it is.
func pollable(r io.Reader) (io.Reader, func()) {
	nothing := func() {}
	f, ok := r.(*os.File)
	if !ok {
		return r, nothing
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) == 0 {
		return r, nothing
	}
	// SyscallConn, not Fd: Fd would put a pollable file in blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return r, nothing
	}
	dup := -1
	var serr error
	if err := rc.Control(func(fd uintptr) {
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil || flags&unix.O_NONBLOCK != 0 {
			serr = unix.EALREADY // already non-blocking: left alone
			return
		}
		if dup, serr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0); serr != nil {
			return
		}
		if serr = unix.SetNonblock(dup, true); serr != nil {
			unix.Close(dup)
		}
	}); err != nil || serr != nil {
		return r, nothing
	}
	nf := os.NewFile(uintptr(dup), f.Name())
	return nf, func() {
		nf.Close()
		_ = rc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), false) })
	}
}
