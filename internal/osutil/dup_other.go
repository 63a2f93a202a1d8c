//go:build !unix

package osutil

import (
	"errors"
	"os"
)

// DupFile is not supported here; callers fall back to f itself.
func DupFile(f *os.File) (*os.File, error) { return nil, errors.ErrUnsupported }
