package cmdutil

import (
	"errors"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// DefaultGCSPrefix is the object prefix used when a gs:// URI names only a
// bucket.
const DefaultGCSPrefix = artifacts.DefaultGCSPrefix

// Store URI schemes.
const (
	SchemeFile = artifacts.SchemeFile
	SchemeGCS  = artifacts.SchemeGCS
)

// StoreURI is a parsed --store value (see artifacts.Location).
type StoreURI = artifacts.Location

// ParseStoreURI parses a --store value with artifacts.ParseLocation: a
// directory path (relative paths are made absolute), file:///ABS/PATH
// (file://localhost/ABS/PATH too), or gs://BUCKET[/PREFIX]. Errors are
// *UsageError values (exit status 2).
func ParseStoreURI(s string) (StoreURI, error) {
	u, err := artifacts.ParseLocation(s)
	if err != nil {
		var e *artifacts.Error
		if errors.As(err, &e) {
			return StoreURI{}, &UsageError{Err: errors.New(e.Msg)}
		}
		return StoreURI{}, &UsageError{Err: err}
	}
	return u, nil
}
