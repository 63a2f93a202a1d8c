package sweep

import (
	"context"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

func recordToken(artifacts.Record) string { return "" }

// deleteExact deletes exactly vs of name, checking each first.
func deleteExact(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string, vs []SessionVersion) ([]artifacts.Record, error) {
	for _, v := range vs {
		rec, err := st.Stat(ctx, scope, name, v.Version)
		if err != nil || rec.Size != v.Size || rec.Digest != v.Digest {
			return nil, artifacts.Errorf(artifacts.CodeConflict, "delete exact", err, "v%d changed", v.Version).With(scope, name, v.Version)
		}
	}
	var out []artifacts.Record
	for _, v := range vs {
		recs, err := st.Delete(ctx, scope, name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: v.Version})
		out = append(out, recs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}
