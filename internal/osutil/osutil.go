// Package osutil holds the few operating-system specifics the project
// needs, so that every other package builds for Linux, macOS and Windows.
package osutil

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// SyncDir fsyncs a directory, so that the entries created, renamed or
// removed in it survive a crash.
func SyncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ErrTooLarge is returned by ReadFileMax for a file past its limit.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is matched (errors.Is) by a *NotRegularError.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError says a file that must be a regular file is something
// else: a symbolic link, a named pipe (FIFO), a device, a socket or a
// directory. The file was not read.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the type bits found
}

// Error names the file and what it is.
func (e *NotRegularError) Error() string {
	return e.Path + " is " + KindOf(e.Mode) + ", not a regular file"
}

// Is reports whether target is ErrNotRegular.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// KindOf describes the file type of mode in words: "a regular file",
// "a directory", "a symbolic link", "a named pipe (FIFO)", "a device",
// "a socket".
func KindOf(mode fs.FileMode) string {
	switch t := mode.Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// OpenRegular opens path for reading without following a symbolic link in
// its last element and without blocking on a named pipe, and checks with
// fstat that what it opened is a regular file; anything else gives a
// *NotRegularError and nothing is read. The caller closes the file.
func OpenRegular(path string) (*os.File, error) {
	if err := refuseLink(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|OpenNoFollow, 0)
	if err != nil {
		return nil, notRegular(path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, nil
}

// OpenDir opens a directory for listing without following a symbolic link
// in its last element and without blocking on a named pipe planted in its
// place; anything that is not a directory, a symbolic link included,
// gives a *NotDirError.
func OpenDir(path string) (*os.File, error) {
	if err := refuseLink(path); err != nil {
		return nil, &NotDirError{Path: path, Mode: fs.ModeSymlink}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|OpenNoFollow|openDirectory, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.IsDir() {
			return nil, &NotDirError{Path: path, Mode: fi.Mode()}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.IsDir() {
		f.Close()
		return nil, &NotDirError{Path: path, Mode: fi.Mode()}
	}
	return f, nil
}

// NotDirError says a path that must be a directory is something else.
type NotDirError struct {
	Path string
	Mode fs.FileMode
}

// Error names the path and what it is.
func (e *NotDirError) Error() string { return e.Path + " is " + KindOf(e.Mode) + ", not a directory" }

// ReadSettingsFile reads a small file that may be reached through symbolic
// links (a configuration file, say) but must be a regular file in the end:
// it is opened without blocking on a named pipe and checked with fstat
// before a byte is read, so a FIFO or a device (/dev/zero) gives a
// *NotRegularError instead of a hang or an endless read. A file of more
// than max bytes gives ErrTooLarge.
func ReadSettingsFile(path string, max int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|OpenNonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	if fi.Size() > int64(max) {
		return nil, ErrTooLarge
	}
	return readAllMax(f, max)
}

// readAllMax reads r to its end, or gives ErrTooLarge past max bytes.
func readAllMax(r io.Reader, max int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, ErrTooLarge
	}
	return b, nil
}
