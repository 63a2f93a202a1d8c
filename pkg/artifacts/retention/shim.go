package retention

import (
	"context"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// ConfirmationError says a prune needs a confirmation, or that the one
// given does not match the plan computed again; nothing was changed.
type ConfirmationError struct {
	Stale bool
	Msg   string
}

// Error returns Msg.
func (e *ConfirmationError) Error() string { return e.Msg }

// ErrorCode returns "stale_confirmation" or "confirmation_required".
func (e *ConfirmationError) ErrorCode() string {
	if e.Stale {
		return "stale_confirmation"
	}
	return "confirmation_required"
}

func recordToken(artifacts.Record) string { return "" }

// deleteExact deletes exactly refs of name, checking each against the
// current record first.
func deleteExact(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string, refs []Ref) ([]artifacts.Record, error) {
	for _, r := range refs {
		rec, err := st.Stat(ctx, scope, name, r.Version)
		if err != nil {
			if artifacts.IsNotFound(err) {
				return nil, artifacts.Errorf(artifacts.CodeConflict, "delete exact", err, "v%d is gone", r.Version).With(scope, name, r.Version)
			}
			return nil, err
		}
		if rec.Size != r.Size || rec.Digest != r.Digest {
			return nil, artifacts.Errorf(artifacts.CodeConflict, "delete exact", nil, "v%d changed", r.Version).With(scope, name, r.Version)
		}
	}
	var out []artifacts.Record
	for _, r := range refs {
		recs, err := st.Delete(ctx, scope, name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: r.Version})
		out = append(out, recs...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

const latestVersion = 0
