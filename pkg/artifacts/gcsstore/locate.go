package gcsstore

import (
	"context"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.Locator = (*Store)(nil)

// Locate returns the record, payload and reservation objects of a version
// (gs://BUCKET/OBJECT), whether or not they exist. It reads their
// attributes only.
func (s *Store) Locate(ctx context.Context, scope artifacts.Scope, name string, version int64) ([]artifacts.LocatedFile, error) {
	roles := []struct {
		role   string
		suffix Suffix
	}{{"record", SuffixMeta}, {"payload", SuffixData}, {"reservation", SuffixReserve}}
	out := make([]artifacts.LocatedFile, 0, len(roles))
	for _, r := range roles {
		obj := s.ObjectName(scope, name, version, r.suffix)
		lf := artifacts.LocatedFile{Role: r.role, Location: "gs://" + s.bucket + "/" + obj}
		attrs, err := s.bkt().Object(obj).Attrs(ctx)
		switch {
		case err == nil:
			lf.Exists, lf.Size = true, attrs.Size
		case !isNotExist(err):
			return nil, classify(ctx, "locate", err, "inspecting %s", lf.Location).With(scope, name, version)
		}
		out = append(out, lf)
	}
	return out, nil
}
