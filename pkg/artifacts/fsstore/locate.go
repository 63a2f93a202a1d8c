package fsstore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.Locator = (*Store)(nil)

// locateRoles are the files of a version, in the order Locate lists them.
var locateRoles = []struct{ role, suffix string }{{"record", "meta"}, {"payload", "data"}, {"reservation", "reserve"}}

// Locate returns the record, payload and reservation files of a version
// (absolute paths), whether or not they exist.
func (s *Store) Locate(ctx context.Context, scope artifacts.Scope, name string, version int64) ([]artifacts.LocatedFile, error) {
	return LocateRoot(ctx, s.root, scope, name, version)
}

// LocateRoot is Locate in the v1 store at root, which need not exist (a
// missing root has every file missing).
func LocateRoot(ctx context.Context, root string, scope artifacts.Scope, name string, version int64) ([]artifacts.LocatedFile, error) {
	dir := filepath.Join(root, LayoutDir, ScopesDir, scope.Hash(), NamesDir, artifacts.NameHash(name))
	out := make([]artifacts.LocatedFile, 0, len(locateRoles))
	for _, r := range locateRoles {
		if err := ctx.Err(); err != nil {
			return nil, artifacts.Errorf(artifacts.CodeCanceled, "locate", err, "")
		}
		lf := artifacts.LocatedFile{Role: r.role, Location: filepath.Join(dir, VersionFile(version, r.suffix))}
		fi, err := os.Lstat(lf.Location)
		switch {
		case err == nil:
			lf.Exists, lf.Size = true, fi.Size()
		case !errors.Is(err, fs.ErrNotExist):
			return nil, ioErr("locate", err).With(scope, name, version)
		}
		out = append(out, lf)
	}
	return out, nil
}
