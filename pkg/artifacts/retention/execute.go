package retention

import (
	"context"
	"fmt"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// ExecOptions bound and observe an execution.
type ExecOptions struct {
	// MaxDelete refuses a plan that deletes more versions (0: no bound).
	MaxDelete int64
	// MaxDeleteBytes refuses a plan that deletes more bytes (0: no bound).
	MaxDeleteBytes int64
	// Progress, when set, is called after each name, with the names done
	// and the names to do.
	Progress func(done, total int)
}

// Deleted is one version an execution deleted.
type Deleted struct {
	Scope   artifacts.Scope `json:"scope"`
	Name    string          `json:"name"`
	Version int64           `json:"version"`
	Size    int64           `json:"size"`
	Digest  string          `json:"digest"`
}

// Failure is a name whose planned versions were not all deleted.
type Failure struct {
	Scope artifacts.Scope `json:"scope"`
	Name  string          `json:"name"`
	// Versions are the planned versions not deleted.
	Versions []int64        `json:"versions"`
	Code     artifacts.Code `json:"code"`
	Reason   string         `json:"reason"`
}

// Result is what an execution did.
type Result struct {
	PlanID          string    `json:"plan_id"`
	PolicyID        string    `json:"policy_id"`
	Deleted         []Deleted `json:"deleted"`
	DeletedVersions int64     `json:"deleted_versions"`
	DeletedBytes    int64     `json:"deleted_bytes"`
	Failed          []Failure `json:"failed"`
}

// BoundError says a plan deletes more than a bound allows; nothing was
// deleted.
type BoundError struct {
	Versions, Bytes           int64
	MaxDelete, MaxDeleteBytes int64
}

// Error says which bound the plan exceeds.
func (e *BoundError) Error() string {
	if e.MaxDelete > 0 && e.Versions > e.MaxDelete {
		return fmt.Sprintf("the plan prunes %d versions, more than --max-delete %d; nothing was deleted", e.Versions, e.MaxDelete)
	}
	return fmt.Sprintf("the plan prunes %d bytes, more than --max-delete-bytes %d; nothing was deleted", e.Bytes, e.MaxDeleteBytes)
}

// ErrorCode returns "bound_exceeded".
func (e *BoundError) ErrorCode() string { return "bound_exceeded" }

// CheckBounds returns a *BoundError when p deletes more versions than
// maxDelete or more bytes than maxBytes (0: no bound).
func (p *Plan) CheckBounds(maxDelete, maxBytes int64) error {
	t := p.Totals
	if (maxDelete > 0 && t.PrunedVersions > maxDelete) || (maxBytes > 0 && t.PrunedBytes > maxBytes) {
		return &BoundError{Versions: t.PrunedVersions, Bytes: t.PrunedBytes, MaxDelete: maxDelete, MaxDeleteBytes: maxBytes}
	}
	return nil
}

// Execute deletes exactly the versions p prunes, name by name, each name's
// with Store.DeleteExact: a version whose bytes changed since the plan was
// made is not deleted, nor any other planned version of its name
// (CodeConflict). Callers confirm p first: Execute trusts that it is the
// plan they computed just now. A plan past a bound of opts is refused with
// a *BoundError before anything is deleted. Where the layout reuses
// version numbers, a name whose planned versions include its current
// highest version (higher versions were deleted since) is refused too.
// A failed name is recorded in Result.Failed and the others go on; the
// error is only for a done context, with what was deleted until then.
func Execute(ctx context.Context, st *artifacts.Store, p *Plan, opts ExecOptions) (*Result, error) {
	if err := p.CheckBounds(opts.MaxDelete, opts.MaxDeleteBytes); err != nil {
		return nil, err
	}
	body := p.Body()
	res := &Result{PlanID: p.PlanID, PolicyID: p.PolicyID, Deleted: []Deleted{}, Failed: []Failure{}}
	reuses := st.Capabilities().ReusesVersions
	for i, n := range body.Prune {
		if err := artifacts.CheckContext(ctx, "prune"); err != nil {
			return res, err
		}
		recs, err := deleteName(ctx, st, n, reuses)
		gone := map[int64]bool{}
		for _, r := range recs {
			gone[r.Version] = true
			res.Deleted = append(res.Deleted, Deleted{Scope: r.Scope, Name: r.Name, Version: r.Version, Size: r.Size, Digest: r.Digest})
			res.DeletedVersions++
			res.DeletedBytes = artifacts.AddSize(res.DeletedBytes, r.Size)
		}
		if err != nil {
			f := Failure{Scope: n.Scope, Name: n.Name, Versions: []int64{}, Code: artifacts.CodeOf(err), Reason: artifacts.ReasonOf(err)}
			for _, r := range n.Versions {
				if !gone[r.Version] {
					f.Versions = append(f.Versions, r.Version)
				}
			}
			res.Failed = append(res.Failed, f)
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(body.Prune))
		}
	}
	return res, nil
}

// deleteName deletes one name's planned versions.
func deleteName(ctx context.Context, st *artifacts.Store, n BodyName, reuses bool) ([]artifacts.Record, error) {
	if reuses {
		latest, err := st.Stat(ctx, n.Scope, n.Name, artifacts.Latest)
		if err != nil {
			return nil, err
		}
		for _, r := range n.Versions {
			if r.Version >= latest.Version {
				return nil, artifacts.Errorf(artifacts.CodeConflict, "prune", nil,
					"v%d is now the highest version (higher versions were deleted since the plan was made), and this layout would hand its number out again; not deleted", r.Version).With(n.Scope, n.Name, r.Version)
			}
		}
	}
	refs := make([]artifacts.VersionRef, len(n.Versions))
	for i, r := range n.Versions {
		refs[i] = r.Ref()
	}
	return st.DeleteExact(ctx, n.Scope, n.Name, refs)
}
