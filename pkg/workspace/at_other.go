//go:build !linux

package workspace

import (
	"errors"
	"os"
)

// createAt is not available here: the caller creates the file through
// the root.
func createAt(*os.File, string, os.FileMode) (*os.File, error) { return nil, errors.ErrUnsupported }

// renameAt is not available here: the caller renames through the root.
func renameAt(*os.File, string, string) error { return errors.ErrUnsupported }
