package sweep

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// ActionDiscard is the action of a discard plan.
const ActionDiscard = "discard"

// MaxPlanBytes bounds a plan read by ReadConfirmation.
const MaxPlanBytes = 64 << 20

// PlanItem is one workspace directory a discard plan removes without a
// snapshot.
type PlanItem struct {
	Dir        string          `json:"dir"`
	Scope      artifacts.Scope `json:"scope"`
	Bytes      int64           `json:"bytes"`
	Files      int             `json:"files"`
	LastAccess string          `json:"last_access"`
	// Fingerprint is Fingerprint.Hex of the directory when planned: any
	// change to the tree or the last access changes it.
	Fingerprint string `json:"fingerprint"`
}

// PlanBody is a discard plan without its plan_id. Its canonical JSON (see
// Canonical) is what plan_id hashes; the field order is part of that
// definition and must never change.
type PlanBody struct {
	Action string `json:"action"`
	// Scratch is the absolute scratch root.
	Scratch string `json:"scratch"`
	// Idle is the --idle threshold, as time.Duration formats it.
	Idle string `json:"idle"`
	// Items are the directories to discard, sorted by name.
	Items []PlanItem `json:"items"`
}

// Plan is a discard plan as printed and as given back to confirm it: the
// body's fields, then plan_id.
type Plan struct {
	PlanBody
	// PlanID is the lowercase hex SHA-256 of the body's canonical JSON.
	PlanID string `json:"plan_id"`
	// Store and Layout name the store the sweep was run with, for the
	// reader (the command line fills them). A discard snapshots nothing,
	// so they are not part of the body plan_id hashes, and a confirmation
	// without them (or with others) confirms the same plan.
	Store  string `json:"store,omitempty"`
	Layout string `json:"layout,omitempty"`
}

// Canonical returns the canonical JSON of the body: encoding/json in the
// struct's field order, no indentation, HTML escaping off, no trailing
// newline, items as [] when there are none.
func (b PlanBody) Canonical() ([]byte, error) {
	if b.Items == nil {
		b.Items = []PlanItem{}
	}
	return plan.Canonical(b)
}

// ID returns the body's plan_id.
func (b PlanBody) ID() (string, error) {
	if b.Items == nil {
		b.Items = []PlanItem{}
	}
	return plan.ID(b)
}

// NewPlan returns the plan of body with its plan_id filled in.
func NewPlan(body PlanBody) (Plan, error) {
	if body.Items == nil {
		body.Items = []PlanItem{}
	}
	id, err := body.ID()
	if err != nil {
		return Plan{}, err
	}
	return Plan{PlanBody: body, PlanID: id}, nil
}

// ConfirmationError says a discard needs a confirmation, or that the one
// given does not match the plan computed again; nothing was changed. It is
// the one confirmation error of every plan-then-confirm command (exit
// status 4).
type ConfirmationError = plan.ConfirmationError

// Confirmation is a parsed confirmation: a plan_id alone, or a whole plan.
type Confirmation struct {
	// PlanID is the plan_id given, or the plan's plan_id field.
	PlanID string
	// Plan is the plan given; nil when only a plan_id was.
	Plan *Plan
}

// ParseConfirmation parses a plan_id (64 lowercase hex characters) or
// exactly one discard plan in JSON with no unknown field. Anything else
// is an *artifacts.Error with CodeInvalidArgument.
func ParseConfirmation(s string) (Confirmation, error) {
	return confirmation(plan.Parse[Plan](s, "discard plan"))
}

func confirmation(p *Plan, id string, err error) (Confirmation, error) {
	if err != nil {
		return Confirmation{}, artifacts.Errorf(artifacts.CodeInvalidArgument, "sweep confirm", err, "")
	}
	if p != nil {
		return Confirmation{PlanID: p.PlanID, Plan: p}, nil
	}
	return Confirmation{PlanID: id}, nil
}

// ReadConfirmation reads a plan of at most MaxPlanBytes from r and parses
// it with ParseConfirmation.
func ReadConfirmation(r io.Reader) (Confirmation, error) {
	p, id, err := plan.Read[Plan](r, MaxPlanBytes, "discard plan")
	var pe *plan.ParseError
	if err != nil && !errors.As(err, &pe) {
		return Confirmation{}, err // reading failed
	}
	return confirmation(p, id, err)
}

// Match decides whether the confirmation allows executing cur, the plan
// computed again just now: nil when it does, else a *ConfirmationError.
func (c Confirmation) Match(cur Plan) error {
	if c.Plan == nil {
		if c.PlanID == cur.PlanID {
			return nil
		}
		return &ConfirmationError{Stale: true, Msg: fmt.Sprintf(
			"stale confirmation: plan_id %s does not match the current plan %s (a workspace was touched, added or removed since the plan was made, or the id is for another plan); nothing was removed",
			c.PlanID, cur.PlanID)}
	}
	p := c.Plan
	id, err := p.PlanBody.ID()
	if err != nil {
		return err
	}
	if p.PlanID != id {
		return &ConfirmationError{Msg: fmt.Sprintf(
			"refused: the confirmed plan was modified after it was made (its plan_id %q does not match its content, which hashes to %s); make a new plan; nothing was removed", p.PlanID, id)}
	}
	if p.Action != cur.Action || p.Scratch != cur.Scratch || p.Idle != cur.Idle {
		return &ConfirmationError{Msg: fmt.Sprintf(
			"refused: the confirmed plan is for %s under %s idle %s, not for this command (%s under %s idle %s); nothing was removed",
			p.Action, p.Scratch, p.Idle, cur.Action, cur.Scratch, cur.Idle)}
	}
	if p.PlanID != cur.PlanID {
		return &ConfirmationError{Stale: true, Msg: "stale confirmation: the workspaces changed since the plan was made (" + diffItems(p.Items, cur.Items) + "); nothing was removed"}
	}
	return nil
}

func diffItems(old, cur []PlanItem) string {
	idx := func(items []PlanItem) map[string]PlanItem {
		m := make(map[string]PlanItem, len(items))
		for _, it := range items {
			m[it.Dir] = it
		}
		return m
	}
	o, c := idx(old), idx(cur)
	var gone, added, changed []string
	for _, it := range old {
		n, ok := c[it.Dir]
		switch {
		case !ok:
			gone = append(gone, it.Dir)
		case n != it:
			changed = append(changed, it.Dir)
		}
	}
	for _, it := range cur {
		if _, ok := o[it.Dir]; !ok {
			added = append(added, it.Dir)
		}
	}
	var parts []string
	list := func(what string, dirs []string) {
		if len(dirs) == 0 {
			return
		}
		if len(dirs) > 5 {
			dirs = append(dirs[:5:5], fmt.Sprintf("and %d more", len(dirs)-5))
		}
		parts = append(parts, what+": "+strings.Join(dirs, " "))
	}
	list("no longer to discard", gone)
	list("touched", changed)
	list("now to discard", added)
	if len(parts) == 0 {
		return "same workspaces in another order"
	}
	return strings.Join(parts, "; ")
}
