// Package osutil holds the few operating-system specifics the project
// needs, so that every other package builds for Linux, macOS and Windows.
package osutil

import (
	"errors"
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
