package fsstore

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.ScopeSlotCounter = (*Store)(nil)

// ScopeSlots counts the scope slot files (.adk-scope-slot-K.reserve) of the
// store. A store with no v1/scopes yet has none. Together with the scope
// directories, which Walk reports, they decide how much of the store's
// scope capacity is used: a put refuses a new scope once either reaches
// MaxScanEntries/2, and neither ever goes down.
func (s *Store) ScopeSlots(ctx context.Context) (int, error) {
	const op = "count scope slots"
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return 0, err
	}
	d, err := osutil.OpenDir(s.scopes)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, ioErr(op, err)
	}
	defer d.Close()
	n := 0
	for {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return 0, err
		}
		names, err := d.Readdirnames(4096)
		for _, name := range names {
			if _, ok := ParseSlot(name, ScopeSlotPrefix); ok {
				n++
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
			break
		}
		if err != nil {
			return 0, ioErr(op, err)
		}
	}
	return n, nil
}

var _ artifacts.NameSlotCounter = (*Store)(nil)

// NameSlots counts the name slot files (.adk-name-slot-K.reserve) of the
// scope: every name it ever held, since a put claims one for each new name
// and nothing removes them. A scope the store never held has none.
func (s *Store) NameSlots(ctx context.Context, scope artifacts.Scope) (int, error) {
	const op = "count name slots"
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return 0, err
	}
	names, err := readNames(filepath.Join(s.scopes, scope.Hash(), NamesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, ioErr(op, err).With(scope, "", artifacts.NoVersion)
	}
	n := 0
	for _, name := range names {
		if _, ok := ParseSlot(name, NameSlotPrefix); ok {
			n++
		}
	}
	return n, nil
}
