// Package deletion holds the plans that delete artifact versions: a plan
// is computed without changing anything, printed with its plan_id, and
// executed only when confirmed, deleting exactly the versions it lists and
// only while each is still what was planned (see artifacts.Store.DeleteExact).
// It uses the one plan/confirmation mechanism of package internal/plan.
package deletion

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// ActionDelete is the action of a delete plan.
const ActionDelete = "delete"

// Selector values of a plan: "version=N", "latest" or "all-versions".
const (
	SelectorLatest      = "latest"
	SelectorAllVersions = "all-versions"
	selectorVersionPfx  = "version="
)

// MaxPlanBytes bounds a plan read from --confirm-file.
const MaxPlanBytes = 8 << 20

// Scope is a scope in a plan's JSON: kind and app, and the user and
// session when its kind has them.
type Scope struct {
	Kind    string `json:"kind"`
	App     string `json:"app"`
	User    string `json:"user,omitempty"`
	Session string `json:"session,omitempty"`
}

// ScopeOf converts s into its plan form, keeping only the parts its kind
// has.
func ScopeOf(s artifacts.Scope) Scope {
	out := Scope{Kind: string(s.Kind), App: s.App}
	switch s.Kind {
	case artifacts.KindUser:
		out.User = s.User
	case artifacts.KindSession:
		out.User, out.Session = s.User, s.Session
	}
	return out
}

// Scope returns the artifacts.Scope of the plan form.
func (s Scope) Scope() artifacts.Scope {
	return artifacts.Scope{Kind: artifacts.Kind(s.Kind), App: s.App, User: s.User, Session: s.Session}
}

// PlanVersion is one version a plan deletes: its number and what binds its
// bytes (the digest, and the layout's token where it keeps one; see
// artifacts.Record.Token).
type PlanVersion struct {
	Version int64  `json:"version"`
	Size    int64  `json:"size"`
	Digest  string `json:"digest"`
	Token   string `json:"token,omitempty"`
	// State is StateCorrupt for a version whose record does not decode:
	// Size and Digest are then those of its record file, and Token binds
	// its files' sizes and modification times (artifacts.BrokenVersion).
	State string `json:"state,omitempty"`
}

// StateCorrupt is the PlanVersion.State of a broken version.
const StateCorrupt = "corrupt"

// Ref returns the version as an artifacts.VersionRef.
func (v PlanVersion) Ref() artifacts.VersionRef {
	return artifacts.VersionRef{Version: v.Version, Size: v.Size, Digest: v.Digest, Token: v.Token}
}

// PlanBody is a delete plan without its plan_id: what would be deleted,
// from which store, scope and name, chosen by which selector. Its
// canonical JSON (see Canonical) is what plan_id hashes; the field order
// below is part of that definition and must never change.
type PlanBody struct {
	Action   string        `json:"action"`
	Store    string        `json:"store"`
	Scope    Scope         `json:"scope"`
	Name     string        `json:"name"`
	Selector string        `json:"selector"`
	Versions []PlanVersion `json:"versions"`
	// ReusedNumber is set when the layout hands a deleted number out again
	// (Capabilities.ReusesVersions) and the plan deletes the name's highest
	// version: the next save will take that number again. Execute refuses
	// such a plan unless ExecOptions.AllowNumberReuse.
	ReusedNumber *int64 `json:"reused_number,omitempty"`
	// Note says so in words, for the JSON reader.
	Note string `json:"note,omitempty"`
}

// Plan is a delete plan as printed and as given back to --confirm:
// the body's fields, then plan_id.
type Plan struct {
	PlanBody
	// PlanID is ID() of the body: lowercase hex SHA-256 of its canonical
	// JSON.
	PlanID string `json:"plan_id"`
	// Layout is the layout of the store, for the reader (ComputePlan
	// fills it). It is not part of the body plan_id hashes, so plans made
	// before it was added still confirm; a confirmation that names a
	// layout must name the store's (see Confirmation.Match).
	Layout string `json:"layout,omitempty"`
	// Broken names the planned versions found broken, with why: by the
	// listing (see artifacts.BrokenVersion), or by reading their payloads
	// (a payload whose bytes do not match its record). It is for the
	// reader and not part of the body, so plan_id does not hash it: the
	// versions' bindings already change when their files do.
	Broken []BrokenNote `json:"broken,omitempty"`
	// Unread lists the planned versions whose payloads were not read:
	// past the plan's read budget (PlanReadVersions, PlanReadBytes), or
	// unreadable (permission, I/O: not known to be broken). Every other
	// planned version's payload was read and matched its record, as far
	// as the layout can tell (a digest, or a size in google-adk-file).
	Unread []int64 `json:"unread,omitempty"`
}

// The read budget of a plan: ComputePlan reads the payloads of at most
// PlanReadVersions versions and PlanReadBytes bytes, oldest first, so
// that a plan says which of them are healthy; fs verify reads them all.
const (
	PlanReadVersions = 100
	PlanReadBytes    = 64 << 20
)

// readBudget is the read budget ComputePlan uses; tests lower it.
var readBudget = struct {
	versions int
	bytes    int64
}{PlanReadVersions, PlanReadBytes}

// BrokenNote is a planned version found broken, and why.
type BrokenNote struct {
	Version int64  `json:"version"`
	Reason  string `json:"reason"`
}

// Canonical returns the canonical JSON of the body: the PlanBody struct
// marshalled by encoding/json (fields in the struct's fixed order, scope
// parts the kind lacks left out, no indentation, no trailing newline) with
// HTML escaping off, and versions as [] when there are none.
func (b PlanBody) Canonical() ([]byte, error) {
	if b.Versions == nil {
		b.Versions = []PlanVersion{}
	}
	return plan.Canonical(b)
}

// ID returns the body's plan_id: the lowercase hex SHA-256 of Canonical.
func (b PlanBody) ID() (string, error) {
	if b.Versions == nil {
		b.Versions = []PlanVersion{}
	}
	return plan.ID(b)
}

// NewPlan returns the plan of body with its plan_id filled in.
func NewPlan(body PlanBody) (Plan, error) {
	if body.Versions == nil {
		body.Versions = []PlanVersion{}
	}
	id, err := body.ID()
	if err != nil {
		return Plan{}, err
	}
	return Plan{PlanBody: body, PlanID: id}, nil
}

// SelectorString returns the selector's form in a plan: "version=N",
// "latest" or "all-versions".
func SelectorString(sel artifacts.Selector) string {
	switch sel.Kind {
	case artifacts.SelectVersion:
		return selectorVersionPfx + strconv.FormatInt(sel.Version, 10)
	case artifacts.SelectLatest:
		return SelectorLatest
	case artifacts.SelectAll:
		return SelectorAllVersions
	}
	return string(sel.Kind)
}

// ComputePlan reads, without changing anything, the records of every
// version sel targets in name and returns the plan that deletes them from
// the store whose canonical URI is store. It reads each targeted record
// (every record for all-versions) and, within the read budget, each
// targeted payload, so that the plan names a version whose bytes are
// damaged (Plan.Broken) or were not read (Plan.Unread); a version whose
// payload is damaged or missing is planned like any other. A name with
// nothing to delete is not_found.
//
// In a store that lists broken versions (artifacts.Store.CanListBroken) a
// broken version is planned like the others and named in Plan.Broken with
// why: --version V and all-versions plan a version whose record does not
// decode or does not belong bound to its files (PlanVersion.State
// StateCorrupt), and latest is the name's highest version number even
// when that version is broken. Elsewhere a record that does not decode
// stops the plan with corrupt_artifact.
func ComputePlan(ctx context.Context, st *artifacts.Store, store string, scope artifacts.Scope, name string, sel artifacts.Selector) (Plan, error) {
	body := PlanBody{
		Action:   ActionDelete,
		Store:    store,
		Scope:    ScopeOf(scope),
		Name:     name,
		Selector: SelectorString(sel),
		Versions: []PlanVersion{},
	}
	if err := sel.Check("plan delete"); err != nil {
		return Plan{}, err
	}
	var found found
	var err error
	switch sel.Kind {
	case artifacts.SelectVersion:
		found, err = planVersion(ctx, st, scope, name, sel.Version)
	case artifacts.SelectLatest:
		found, err = planLatest(ctx, st, scope, name)
	case artifacts.SelectAll:
		found, err = listAll(ctx, st, scope, name, "")
		if artifacts.IsNotFound(err) || err == nil && len(found.versions) == 0 {
			return Plan{}, artifacts.Errorf(artifacts.CodeNotFound, "plan delete", nil, "no published version").With(scope, name, artifacts.NoVersion)
		}
	}
	if err != nil {
		return Plan{}, err
	}
	body.Versions = found.versions
	if caps := st.Capabilities(); caps.ReusesVersions {
		// An all-versions plan already listed every version: the next
		// save takes the first number. Others list the name once more.
		next := caps.FirstVersion
		if sel.Kind != artifacts.SelectAll {
			if next, err = NextAfter(ctx, st, scope, name, body.Versions); err != nil {
				return Plan{}, err
			}
		}
		if next >= 0 {
			body.ReusedNumber = &next
			body.Note = ReuseNote(caps.Layout, next)
		}
	}
	p, err := NewPlan(body)
	if err != nil {
		return Plan{}, err
	}
	p.Layout = st.Capabilities().Layout
	p.Broken = found.broken
	if err := checkPayloads(ctx, st, scope, name, &p); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// checkPayloads reads the payloads of p's versions not already known to be
// broken, oldest first, within the read budget: a payload that does not
// match its record is added to p.Broken, one not read to p.Unread.
func checkPayloads(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string, p *Plan) error {
	known := map[int64]bool{}
	for _, b := range p.Broken {
		known[b.Version] = true
	}
	var n int
	var bytes int64
	for _, v := range p.Versions {
		if known[v.Version] || v.State == StateCorrupt {
			continue
		}
		if n >= readBudget.versions || bytes+v.Size > readBudget.bytes {
			p.Unread = append(p.Unread, v.Version)
			continue
		}
		n++
		bytes += v.Size
		err := readPayload(ctx, st, scope, name, v.Version)
		switch {
		case err == nil:
		case artifacts.CodeOf(err) == artifacts.CodeCorrupt:
			p.Broken = append(p.Broken, BrokenNote{Version: v.Version, Reason: artifacts.ReasonOf(err)})
		case ctx.Err() != nil:
			return err
		default:
			// Unreadable is not broken, and a version deleted meanwhile
			// makes the confirmation stale anyway.
			p.Unread = append(p.Unread, v.Version)
		}
	}
	slices.SortFunc(p.Broken, func(a, b BrokenNote) int { return cmp.Compare(a.Version, b.Version) })
	return nil
}

// readPayload reads version v of name to its end, through the verifying
// reader: an error of code CodeCorrupt says its bytes do not match.
func readPayload(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string, v int64) error {
	r, err := st.Get(ctx, scope, name, v)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(io.Discard, r)
	return err
}

// found is what a plan targets: the versions, ascending, and the broken
// ones among them.
type found struct {
	versions []PlanVersion
	broken   []BrokenNote
}

// add adds the versions and broken versions of a listing's page.
func (f *found) add(page artifacts.VersionPage) {
	for _, r := range page.Items {
		f.versions = append(f.versions, PlanVersion{Version: r.Version, Size: r.Size, Digest: r.Digest, Token: r.Token})
	}
	for _, b := range page.Broken {
		if b.Record == nil {
			f.versions = append(f.versions, brokenVersion(b))
		}
		f.broken = append(f.broken, BrokenNote{Version: b.Problem.Version, Reason: b.Problem.Reason})
	}
	slices.SortFunc(f.versions, func(a, b PlanVersion) int { return cmp.Compare(a.Version, b.Version) })
	slices.SortFunc(f.broken, func(a, b BrokenNote) int { return cmp.Compare(a.Version, b.Version) })
}

// only keeps version v alone (and its note, if it is broken).
func (f found) only(v PlanVersion) found {
	out := found{versions: []PlanVersion{v}}
	for _, b := range f.broken {
		if b.Version == v.Version {
			out.broken = append(out.broken, b)
		}
	}
	return out
}

// brokenVersion is the PlanVersion of a version whose record does not
// decode or does not belong, bound to its files.
func brokenVersion(b artifacts.BrokenVersion) PlanVersion {
	return PlanVersion{Version: b.Problem.Version, Size: b.Ref.Size, Digest: b.Ref.Digest, Token: b.Ref.Token, State: StateCorrupt}
}

// listAll lists every version of name after cursor, broken ones included
// where the store can list them.
func listAll(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name, cursor string) (found, error) {
	var f found
	limit := st.Capabilities().MaxPageLimit
	for {
		page, err := st.ListVersions(ctx, scope, name, artifacts.ListOptions{Limit: limit, Cursor: cursor, IncludeBroken: st.CanListBroken()})
		if err != nil {
			return found{}, err
		}
		f.add(page)
		if page.NextCursor == "" || page.NextCursor == cursor {
			return f, nil
		}
		cursor = page.NextCursor
	}
}

// planVersion plans version v: its record, or, when the record does not
// decode and the store can list broken versions, its files.
func planVersion(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string, v int64) (found, error) {
	r, err := st.Stat(ctx, scope, name, v)
	if err == nil {
		pv := PlanVersion{Version: r.Version, Size: r.Size, Digest: r.Digest, Token: r.Token}
		if !st.CanListBroken() {
			return found{versions: []PlanVersion{pv}}, nil
		}
		// The record decodes: say so when the payload is broken.
		f := found{versions: []PlanVersion{pv}}
		if b, berr := st.BrokenVersionAt(ctx, scope, name, v); berr == nil {
			f.broken = []BrokenNote{{Version: v, Reason: b.Problem.Reason}}
		} else if !artifacts.IsNotFound(berr) {
			return found{}, berr
		}
		return f, nil
	}
	if !st.CanListBroken() || !brokenCode(err) {
		return found{}, err
	}
	b, berr := st.BrokenVersionAt(ctx, scope, name, v)
	if berr != nil || b.Record != nil {
		return found{}, err
	}
	return found{versions: []PlanVersion{brokenVersion(b)}, broken: []BrokenNote{{Version: v, Reason: b.Problem.Reason}}}, nil
}

// brokenCode reports whether a Stat that failed with err may have met a
// version a listing with IncludeBroken reports: a record that does not
// decode, or (in layouts that count version directories without a record)
// one that is not there.
func brokenCode(err error) bool {
	return artifacts.CodeOf(err) == artifacts.CodeCorrupt || artifacts.IsNotFound(err)
}

// planLatest plans the name's highest version number, broken or not: the
// latest record, and any broken version above it.
func planLatest(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string) (found, error) {
	r, err := st.Stat(ctx, scope, name, artifacts.Latest)
	if !st.CanListBroken() {
		if err != nil {
			return found{}, err
		}
		return found{versions: []PlanVersion{{Version: r.Version, Size: r.Size, Digest: r.Digest, Token: r.Token}}}, nil
	}
	cursor := ""
	switch {
	case err == nil:
		// Only the latest record and what lies above it are listed.
		if r.Version > st.Capabilities().FirstVersion {
			cursor = strconv.FormatInt(r.Version-1, 10)
		}
	case !brokenCode(err):
		return found{}, err
	}
	f, lerr := listAll(ctx, st, scope, name, cursor)
	if lerr != nil {
		if err != nil && artifacts.IsNotFound(lerr) {
			return found{}, err
		}
		return found{}, lerr
	}
	if len(f.versions) == 0 {
		if err != nil {
			return found{}, err
		}
		return found{}, artifacts.Errorf(artifacts.CodeNotFound, "plan delete", nil, "no published version").With(scope, name, artifacts.NoVersion)
	}
	return f.only(f.versions[len(f.versions)-1]), nil
}

// NextAfter returns the number a layout that reuses numbers
// (Capabilities.ReusesVersions: the next save takes the highest published
// number plus one) would hand out after deleting planned: -1 when the plan
// keeps the name's highest version, so no number is handed out again.
// When the highest goes, the next save takes one above the highest version
// left (or the first version when none is left), a number some version
// of this name had before. Broken versions count, where the store can
// list them: the layout's writer counts them too.
func NextAfter(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string, planned []PlanVersion) (int64, error) {
	gone := make(map[int64]bool, len(planned))
	for _, v := range planned {
		gone[v.Version] = true
	}
	f, err := listAll(ctx, st, scope, name, "")
	if err != nil {
		return 0, err
	}
	highest, left := int64(-1), int64(-1)
	for _, v := range f.versions {
		highest = max(highest, v.Version)
		if !gone[v.Version] {
			left = max(left, v.Version)
		}
	}
	if highest < 0 || !gone[highest] {
		return -1, nil
	}
	if left < 0 {
		return st.Capabilities().FirstVersion, nil
	}
	return left + 1, nil
}

// ReuseNote says that after the plan the writer of layout hands out v, a
// number a version of the name had before, on the next save.
func ReuseNote(layout string, v int64) string {
	who := "the store"
	if strings.HasPrefix(layout, "google-adk") {
		who = "ADK"
	}
	return fmt.Sprintf("the plan deletes the highest version: %s will hand out v%d again on the next save (layout %s reuses numbers)", who, v, layout)
}

// ExecOptions are the options of Execute.
type ExecOptions struct {
	// AllowNumberReuse allows a plan whose ReusedNumber is set.
	AllowNumberReuse bool
}

// Execute deletes exactly the versions of p, a plan already matched
// against the store (see Confirmation.Match), through
// artifacts.Store.DeleteExact, and its broken versions through
// artifacts.Store.DeleteBroken: a version that changed or went since it
// was planned is a stale *plan.ConfirmationError and nothing is deleted
// (the broken versions are checked first, then the others, and the
// broken ones are deleted last). A plan that lets the layout reuse a
// number is refused with a *plan.ConfirmationError unless
// opts.AllowNumberReuse. It returns the records deleted, by version, also
// when a later deletion failed; those of broken versions whose record
// does not decode carry only their number.
func Execute(ctx context.Context, st *artifacts.Store, p Plan, opts ExecOptions) ([]artifacts.Record, error) {
	if p.ReusedNumber != nil && !opts.AllowNumberReuse {
		return nil, &plan.ConfirmationError{Msg: fmt.Sprintf(
			"refused: %s; to delete it anyway, confirm again with --allow-number-reuse; nothing was deleted", p.Note)}
	}
	var refs []artifacts.VersionRef
	var broken []PlanVersion
	for _, v := range p.Versions {
		if v.State == StateCorrupt {
			broken = append(broken, v)
			continue
		}
		refs = append(refs, v.Ref())
	}
	scope := p.Scope.Scope()
	stale := func(err error) error {
		return &plan.ConfirmationError{Stale: true, Msg: fmt.Sprintf(
			"stale confirmation: %s; nothing was deleted", artifacts.ReasonOf(err))}
	}
	for _, v := range broken {
		if err := checkBroken(ctx, st, scope, p.Name, v); err != nil {
			if artifacts.CodeOf(err) == artifacts.CodeConflict || artifacts.IsNotFound(err) {
				return nil, stale(err)
			}
			return nil, err
		}
	}
	var done []artifacts.Record
	var err error
	if len(refs) > 0 {
		done, err = st.DeleteExact(ctx, scope, p.Name, refs)
	}
	for _, v := range broken {
		if err != nil {
			break
		}
		if err = st.DeleteBroken(ctx, scope, p.Name, v.Ref()); err == nil {
			done = append(done, artifacts.Record{Scope: scope, Name: p.Name, Version: v.Version})
		}
	}
	slices.SortFunc(done, func(a, b artifacts.Record) int { return cmp.Compare(a.Version, b.Version) })
	if len(done) == 0 && (artifacts.CodeOf(err) == artifacts.CodeConflict || artifacts.IsNotFound(err)) {
		return nil, stale(err)
	}
	return done, err
}

// checkBroken checks, without deleting, that the broken version v is
// still bound as planned: CodeConflict when its files changed, CodeNotFound
// when it is gone or no longer broken.
func checkBroken(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string, v PlanVersion) error {
	b, err := st.BrokenVersionAt(ctx, scope, name, v.Version)
	if err != nil {
		return err
	}
	if b.Record != nil || b.Ref != v.Ref() {
		return artifacts.Errorf(artifacts.CodeConflict, "delete", nil, "the files of version %d changed since it was planned", v.Version).With(scope, name, v.Version)
	}
	return nil
}

// Confirmation is a parsed --confirm or --confirm-file value: a plan_id
// alone, or a whole plan.
type Confirmation struct {
	// PlanID is the plan_id given, or the plan's plan_id field.
	PlanID string
	// Plan is the plan given, nil when only a plan_id was.
	Plan *Plan
}

// ParseConfirmation parses a confirmation: a plan_id (64 lowercase hex
// characters), or exactly one plan JSON object with no unknown field. A
// value that is neither is a *plan.ParseError. It does not check the
// plan's integrity; Match does.
func ParseConfirmation(s string) (Confirmation, error) {
	return confirmation(plan.Parse[Plan](s, "delete plan"))
}

func confirmation(p *Plan, id string, err error) (Confirmation, error) {
	if err != nil {
		return Confirmation{}, err
	}
	if p != nil {
		return Confirmation{PlanID: p.PlanID, Plan: p}, nil
	}
	return Confirmation{PlanID: id}, nil
}

// ReadConfirmation reads a plan from r (a --confirm-file), at most
// MaxPlanBytes, and parses it with ParseConfirmation: a confirmation that
// is neither is a *plan.ParseError, and a read failure is returned as is.
func ReadConfirmation(r io.Reader) (Confirmation, error) {
	return confirmation(plan.Read[Plan](r, MaxPlanBytes, "delete plan"))
}

// Match decides whether the confirmation allows executing cur, the plan
// computed again just now. It returns nil when it does, and otherwise a
// *plan.ConfirmationError (exit status 4) saying why not:
//   - a plan whose plan_id does not match its own content was modified
//     after it was made (confirmation_required);
//   - a plan for another store, scope, name or selector
//     (confirmation_required);
//   - a plan, or a plan_id, that differs from cur: versions were added or
//     removed since (stale_confirmation).
func (c Confirmation) Match(cur Plan) error {
	if c.Plan == nil {
		if c.PlanID == cur.PlanID {
			return nil
		}
		return &plan.ConfirmationError{Stale: true, Msg: fmt.Sprintf(
			"stale confirmation: plan_id %s does not match the current plan %s (versions were added or removed since the plan was made, or the id is for another plan); nothing was deleted",
			c.PlanID, cur.PlanID)}
	}
	p := c.Plan
	id, err := p.PlanBody.ID()
	if err != nil {
		return err
	}
	if p.PlanID != id {
		return &plan.ConfirmationError{Msg: fmt.Sprintf(
			"refused: the confirmed plan was modified after it was made (its plan_id %q does not match its content, which hashes to %s); make a new plan; nothing was deleted",
			p.PlanID, id)}
	}
	if p.Action != cur.Action || p.Store != cur.Store || p.Scope != cur.Scope || p.Name != cur.Name || p.Selector != cur.Selector {
		return &plan.ConfirmationError{Msg: fmt.Sprintf(
			"refused: the confirmed plan is for %s %q in %s of %s by %s, not for this command (%s %q in %s of %s by %s); nothing was deleted",
			p.Action, p.Name, describeScope(p.Scope), p.Store, p.Selector,
			cur.Action, cur.Name, describeScope(cur.Scope), cur.Store, cur.Selector)}
	}
	if p.Layout != "" && cur.Layout != "" && p.Layout != cur.Layout {
		return &plan.ConfirmationError{Msg: fmt.Sprintf(
			"refused: the confirmed plan is for a store of layout %s, but %s is now read as %s; nothing was deleted",
			p.Layout, cur.Store, cur.Layout)}
	}
	if p.PlanID != cur.PlanID {
		return &plan.ConfirmationError{Stale: true, Msg: fmt.Sprintf(
			"stale confirmation: the versions changed since the plan was made (%s); nothing was deleted",
			diffVersions(p.Versions, cur.Versions))}
	}
	return nil
}

// describeScope formats a JSON scope like artifacts.Scope.String.
func describeScope(s Scope) string { return s.Scope().String() }

// diffVersions describes how the versions of two plans differ.
func diffVersions(old, cur []PlanVersion) string {
	in := func(vs []PlanVersion, v PlanVersion) bool {
		for _, w := range vs {
			if w == v {
				return true
			}
		}
		return false
	}
	var gone, added []string
	for _, v := range old {
		if !in(cur, v) {
			gone = append(gone, "v"+strconv.FormatInt(v.Version, 10))
		}
	}
	for _, v := range cur {
		if !in(old, v) {
			added = append(added, "v"+strconv.FormatInt(v.Version, 10))
		}
	}
	var parts []string
	if len(gone) > 0 {
		parts = append(parts, "planned but gone or changed: "+strings.Join(gone, " "))
	}
	if len(added) > 0 {
		parts = append(parts, "now targeted but not planned: "+strings.Join(added, " "))
	}
	if len(parts) == 0 {
		return "same versions in another order"
	}
	return strings.Join(parts, "; ")
}
