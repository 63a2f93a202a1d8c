package retention

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/deletion"
)

// MaxPlanBytes bounds a plan read by ReadConfirmation.
const MaxPlanBytes = 256 << 20

// Confirmation is a parsed confirmation of a prune plan: a plan_id alone,
// or the whole plan.
type Confirmation struct {
	// PlanID is the plan_id given, or the plan's plan_id field.
	PlanID string
	// Plan is the plan given; nil when only a plan_id was.
	Plan *Plan
}

// ParseConfirmation parses a plan_id (64 lowercase hex characters) or
// exactly one prune plan in JSON with no unknown field. Anything else is
// an *artifacts.Error with CodeInvalidArgument.
func ParseConfirmation(s string) (Confirmation, error) {
	return confirmation(plan.Parse[Plan](s, "prune plan"))
}

// ReadConfirmation reads a plan of at most MaxPlanBytes from r and parses
// it with ParseConfirmation.
func ReadConfirmation(r io.Reader) (Confirmation, error) {
	p, id, err := plan.Read[Plan](r, MaxPlanBytes, "prune plan")
	var pe *plan.ParseError
	if err != nil && !errors.As(err, &pe) {
		return Confirmation{}, err // reading failed
	}
	return confirmation(p, id, err)
}

func confirmation(p *Plan, id string, err error) (Confirmation, error) {
	if err != nil {
		return Confirmation{}, artifacts.Errorf(artifacts.CodeInvalidArgument, "confirm prune", nil, "%v", err)
	}
	if p != nil {
		return Confirmation{PlanID: p.PlanID, Plan: p}, nil
	}
	return Confirmation{PlanID: id}, nil
}

// AsOf returns the time the plan to compare with must be computed as of:
// the confirmed plan's as_of, so that ages are measured as they were when
// it was made; the zero time (now) for a plan_id alone.
func (c Confirmation) AsOf() (time.Time, error) {
	if c.Plan == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, c.Plan.AsOf)
	if err != nil {
		return time.Time{}, artifacts.Errorf(artifacts.CodeInvalidArgument, "confirm prune", nil, "the plan's as_of %q is not an RFC 3339 time", c.Plan.AsOf)
	}
	return t, nil
}

// Match decides whether the confirmation allows executing cur, the plan
// computed again just now (as of AsOf): nil when it does, else a
// *ConfirmationError saying why not (stale when versions changed).
func (c Confirmation) Match(cur *Plan) error {
	if c.Plan == nil {
		if c.PlanID == cur.PlanID {
			return nil
		}
		return &ConfirmationError{Stale: true, Msg: fmt.Sprintf(
			"stale confirmation: plan_id %s does not match the current plan %s (versions were added, deleted or changed since the plan was made, a version aged past a limit of the policy, or the id is for another plan); nothing was deleted",
			c.PlanID, cur.PlanID)}
	}
	p := c.Plan
	id, err := p.ID()
	if err != nil {
		return err
	}
	if p.PlanID != id {
		return &ConfirmationError{Msg: fmt.Sprintf(
			"refused: the confirmed plan was modified after it was made (its plan_id %q does not match its content, which hashes to %s); make a new plan; nothing was deleted", p.PlanID, id)}
	}
	if p.PolicyID != cur.PolicyID || p.Layout != cur.Layout {
		return &ConfirmationError{Msg: fmt.Sprintf(
			"refused: the confirmed plan is for another store, policy or scope filter (policy_id %s; this command's is %s); nothing was deleted", p.PolicyID, cur.PolicyID)}
	}
	if p.PlanID != cur.PlanID {
		return &ConfirmationError{Stale: true, Msg: "stale confirmation: the versions changed since the plan was made (" + diffBodies(p.Body(), cur.Body()) + "); nothing was deleted"}
	}
	return nil
}

// diffBodies describes how two plans' deletions differ.
func diffBodies(old, cur Body) string {
	type key struct {
		scope artifacts.Scope
		name  string
		ref   deletion.PlanVersion
	}
	set := func(b Body) map[key]bool {
		m := map[key]bool{}
		for _, n := range b.Prune {
			for _, r := range n.Versions {
				m[key{n.Scope, n.Name, r}] = true
			}
		}
		return m
	}
	o, c := set(old), set(cur)
	var gone, added []string
	desc := func(k key) string { return fmt.Sprintf("%q v%d in %s", k.name, k.ref.Version, k.scope) }
	for _, n := range old.Prune {
		for _, r := range n.Versions {
			if k := (key{n.Scope, n.Name, r}); !c[k] {
				gone = append(gone, desc(k))
			}
		}
	}
	for _, n := range cur.Prune {
		for _, r := range n.Versions {
			if k := (key{n.Scope, n.Name, r}); !o[k] {
				added = append(added, desc(k))
			}
		}
	}
	var parts []string
	list := func(what string, items []string) {
		if len(items) == 0 {
			return
		}
		if len(items) > 5 {
			items = append(items[:5:5], fmt.Sprintf("and %d more", len(items)-5))
		}
		parts = append(parts, what+": "+strings.Join(items, ", "))
	}
	list("planned but gone, changed or now kept", gone)
	list("now to prune but not planned", added)
	if len(parts) == 0 {
		return "same versions in another order"
	}
	return strings.Join(parts, "; ")
}
