package adkfile

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"strconv"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.Locator = (*Store)(nil)

// Locate returns the metadata.json ("record") and payload files of a
// version (absolute paths), whether or not they exist. It reads no
// metadata.json; the payload of a file reference does not exist.
func (s *Store) Locate(ctx context.Context, scope artifacts.Scope, name string, version int64) ([]artifacts.LocatedFile, error) {
	const op = "locate"
	dir, base, err := s.nameDir(op, scope, name)
	if err != nil {
		return nil, notFoundFor(err, scope, name)
	}
	vdir := path.Join(dir, VersionsDir, strconv.FormatInt(version, 10))
	var out []artifacts.LocatedFile
	for _, f := range []struct{ role, file string }{{"record", MetadataFile}, {"payload", base}} {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return nil, err
		}
		rel := path.Join(vdir, f.file)
		lf := artifacts.LocatedFile{Role: f.role, Location: s.abs(rel)}
		fi, err := s.root.Lstat(rel)
		switch {
		case err == nil:
			lf.Exists, lf.Size = true, fi.Size()
		case !errors.Is(err, fs.ErrNotExist):
			return nil, withArtifact(fsErr(op, lf.Location, err), scope, name, version)
		}
		out = append(out, lf)
	}
	return out, nil
}
