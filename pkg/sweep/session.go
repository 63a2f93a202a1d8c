package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/deletion"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// ActionDeleteSession is the action of a session deletion plan.
const ActionDeleteSession = "delete-session"

// SessionArtifact is one name of the session scope whose every version a
// plan deletes.
type SessionArtifact struct {
	Name     string                 `json:"name"`
	Versions []deletion.PlanVersion `json:"versions"`
	// ReusedNumber is set in layouts that hand numbers out again
	// (Capabilities.ReusesVersions): the name's next save takes this
	// number, one a deleted version had. Executing the plan then needs
	// SessionOptions.AllowNumberReuse.
	ReusedNumber *int64 `json:"reused_number,omitempty"`
	// Note says so in words.
	Note string `json:"note,omitempty"`
}

// SessionPlanBody is a session deletion plan without its plan_id; its
// canonical JSON is what plan_id hashes, and the field order is part of
// that definition.
type SessionPlanBody struct {
	Action  string          `json:"action"`
	Scratch string          `json:"scratch"`
	Store   string          `json:"store"`
	Scope   artifacts.Scope `json:"scope"`
	// Workspace is the directory removed without a snapshot; nil when the
	// session has none.
	Workspace *PlanItem `json:"workspace"`
	// Artifacts are the names of the session scope deleted with every
	// version (--with-artifacts); empty otherwise.
	Artifacts []SessionArtifact `json:"artifacts"`
}

// SessionPlan is a session deletion plan as printed and as given back to
// confirm it: the body's fields, then plan_id.
type SessionPlan struct {
	SessionPlanBody
	PlanID string `json:"plan_id"`
	// Layout is the layout of Store, for the reader (the command line
	// fills it). It is not part of the body plan_id hashes: Store is.
	Layout string `json:"layout,omitempty"`
}

// Versions counts the artifact versions the plan deletes, and their bytes.
func (p *SessionPlan) Versions() (n int, bytes int64) {
	for _, a := range p.Artifacts {
		for _, v := range a.Versions {
			n++
			bytes = artifacts.AddSize(bytes, v.Size)
		}
	}
	return n, bytes
}

func newSessionPlan(body SessionPlanBody) (SessionPlan, error) {
	if body.Artifacts == nil {
		body.Artifacts = []SessionArtifact{}
	}
	id, err := plan.ID(body)
	return SessionPlan{SessionPlanBody: body, PlanID: id}, err
}

// SessionConfirmation is a parsed confirmation of a session deletion
// plan: a plan_id alone, or the whole plan.
type SessionConfirmation struct {
	PlanID string
	Plan   *SessionPlan
}

// ParseSessionConfirmation parses a plan_id or exactly one session
// deletion plan in JSON with no unknown field; anything else is an
// *artifacts.Error with CodeInvalidArgument.
func ParseSessionConfirmation(s string) (SessionConfirmation, error) {
	return sessionConfirmation(plan.Parse[SessionPlan](s, "session deletion plan"))
}

// ReadSessionConfirmation reads a plan of at most MaxPlanBytes from r and
// parses it with ParseSessionConfirmation.
func ReadSessionConfirmation(r io.Reader) (SessionConfirmation, error) {
	p, id, err := plan.Read[SessionPlan](r, MaxPlanBytes, "session deletion plan")
	var pe *plan.ParseError
	if err != nil && !errors.As(err, &pe) {
		return SessionConfirmation{}, err
	}
	return sessionConfirmation(p, id, err)
}

func sessionConfirmation(p *SessionPlan, id string, err error) (SessionConfirmation, error) {
	if err != nil {
		return SessionConfirmation{}, artifacts.Errorf(artifacts.CodeInvalidArgument, "ws delete confirm", nil, "%v", err)
	}
	if p != nil {
		return SessionConfirmation{PlanID: p.PlanID, Plan: p}, nil
	}
	return SessionConfirmation{PlanID: id}, nil
}

// Match decides whether the confirmation allows executing cur, the plan
// computed again just now: nil when it does, else a *ConfirmationError.
func (c SessionConfirmation) Match(cur SessionPlan) error {
	if c.Plan != nil {
		id, err := plan.ID(c.Plan.SessionPlanBody)
		if err != nil {
			return err
		}
		if id != c.Plan.PlanID {
			return &ConfirmationError{Msg: fmt.Sprintf(
				"refused: the confirmed plan was modified after it was made (its plan_id %q does not match its content, which hashes to %s); make a new plan; nothing was deleted", c.Plan.PlanID, id)}
		}
		p := c.Plan
		if p.Action != cur.Action || p.Scratch != cur.Scratch || p.Store != cur.Store || p.Scope != cur.Scope {
			return &ConfirmationError{Msg: fmt.Sprintf(
				"refused: the confirmed plan deletes %s under %s (store %s), not what this command deletes (%s under %s, store %s); nothing was deleted",
				p.Scope, p.Scratch, p.Store, cur.Scope, cur.Scratch, cur.Store)}
		}
	}
	if c.PlanID != cur.PlanID {
		return &ConfirmationError{Stale: true, Msg: fmt.Sprintf(
			"stale confirmation: plan_id %s does not match the current plan %s (the workspace was touched, or artifact versions were added, deleted or changed since the plan was made, or the id is for another plan); nothing was deleted",
			c.PlanID, cur.PlanID)}
	}
	return nil
}

// SessionOptions configure DeleteSession.
type SessionOptions struct {
	// Scratch is the scratch root. Required.
	Scratch string
	// Store receives the snapshot and holds the artifacts; required
	// unless Discard.
	Store *artifacts.Store
	// StoreURI is the store's canonical URI, recorded in plans.
	StoreURI string
	// Scope is the session scope to delete.
	Scope artifacts.Scope
	// Discard removes the workspace without a snapshot, under a confirmed
	// plan.
	Discard bool
	// WithArtifacts also deletes every version of every artifact of the
	// scope, under the same plan; it implies Discard (a snapshot would be
	// deleted with the rest).
	WithArtifacts bool
	// AllowNumberReuse allows a plan that deletes artifacts whose numbers
	// the layout will hand out again (SessionArtifact.ReusedNumber).
	AllowNumberReuse bool
	// Confirm is the confirmation of the plan (Discard, WithArtifacts);
	// nil for none: DeleteSession then returns the plan with a
	// *ConfirmationError, having changed nothing.
	Confirm *SessionConfirmation
	// Now is the clock (default time.Now).
	Now func() time.Time
	// BeforeExecute, when set, runs after planning and before the first
	// change (a lock refresh); its error stops the deletion.
	BeforeExecute func() error

	hook func(step, dir string) error
}

// SessionReport is what DeleteSession did.
type SessionReport struct {
	Scratch string
	Scope   artifacts.Scope
	// Dir is the session's directory name under the scratch root.
	Dir string
	// Workspace is the directory's item (removed, or why not); nil when
	// the session has no directory.
	Workspace *Item
	// Recovered lists what an interrupted deletion of the same directory
	// had left, and what became of it.
	Recovered []Item
	// Plan is the plan (Discard or WithArtifacts).
	Plan *SessionPlan
	// Deleted lists the artifact versions deleted.
	Deleted []artifacts.Record
}

// Problems returns 1 when the workspace could not be removed safely (it
// is then kept, and no artifact deleted), else 0.
func (r *SessionReport) Problems() int {
	if r.Workspace != nil && r.Workspace.Decision != Removed && r.Workspace.Decision != WouldRemove {
		return 1
	}
	return 0
}

// DeleteSession removes the workspace of one session that has ended,
// whatever its idleness, by the protocol of a sweep: without Discard it
// snapshots the tree into the store (unless the latest snapshot already
// holds it), verifies the snapshot, and removes the directory through a
// tombstone. With Discard it removes it without a snapshot, and with
// WithArtifacts it deletes, too, every version of every artifact of the
// scope (each name's with DeleteExact, bound to the planned bytes); both
// need a confirmed plan (SessionPlan). The workspace goes first: when it
// cannot be removed safely no artifact is deleted. The caller holds the
// scratch root's lock (LockFile). A tombstone that an interrupted deletion
// of this directory left is dealt with first, as the next sweep would.
//
// A session with no directory is CodeNotFound, unless WithArtifacts finds
// artifacts to delete; a directory whose index is not this scope's is
// reported as skipped and never removed.
func DeleteSession(ctx context.Context, opts SessionOptions) (*SessionReport, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := opts.Scope.Validate(); err != nil {
		return nil, err
	}
	if opts.Scope.Kind != artifacts.KindSession {
		return nil, artifacts.Errorf(artifacts.CodeInvalidScope, "ws delete", nil, "%s is not a session scope", opts.Scope)
	}
	if opts.WithArtifacts {
		opts.Discard = true
	}
	if opts.Store == nil && (!opts.Discard || opts.WithArtifacts) {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "ws delete", nil, "a store is needed to snapshot the workspace or delete its artifacts")
	}
	sopts := Options{Scratch: opts.Scratch, Store: opts.Store, Discard: opts.Discard, Now: opts.Now, Workers: 1, hook: opts.hook}
	s := &sweeper{opts: sopts, now: opts.Now(), anyIdle: true}
	var err error
	if s.inspect, err = workspace.New(workspace.Options{Scratch: opts.Scratch, Now: func() time.Time { return s.now }}); err != nil {
		return nil, err
	}
	defer s.inspect.Close()
	s.scratch = s.inspect.Scratch()
	if !opts.Discard {
		if s.snap, err = workspace.New(workspace.Options{Scratch: opts.Scratch, Store: opts.Store, Now: opts.Now}); err != nil {
			return nil, err
		}
		defer s.snap.Close()
	}
	if s.root, err = os.OpenRoot(s.scratch); err != nil {
		return nil, artifacts.Errorf(artifacts.CodeIO, "ws delete", err, "%s", s.scratch)
	}
	defer s.root.Close()

	dir := workspace.DirName(opts.Scope.App, opts.Scope.User, opts.Scope.Session)
	rep := &SessionReport{Scratch: s.scratch, Scope: opts.Scope, Dir: dir}
	confirmed := opts.Confirm != nil

	// What an interrupted deletion of this directory left is finished (or
	// restored) first; without a confirmation, only reported.
	all, err := listNames(s.root)
	if err != nil {
		return nil, artifacts.Errorf(artifacts.CodeIO, "ws delete", err, "listing %s", s.scratch)
	}
	var ours []string
	for _, n := range all {
		if strings.HasPrefix(n, TombstonePrefix+dir+"-") {
			ours = append(ours, n)
		}
	}
	slices.Sort(ours)
	dry := opts.Discard && !confirmed
	rep.Recovered = s.recover(ctx, ours, dry)

	e, err := s.sessionEntry(ctx, dir, opts.Scope)
	if err != nil {
		return nil, err
	}
	if e != nil {
		it := e.item
		rep.Workspace = &it
		if !e.cand {
			return rep, nil
		}
	}
	var sp SessionPlan
	if opts.Discard {
		body := SessionPlanBody{Action: ActionDeleteSession, Scratch: s.scratch, Store: opts.StoreURI, Scope: opts.Scope}
		if e != nil {
			body.Workspace = &PlanItem{
				Dir: dir, Scope: e.scope, Bytes: e.fp.Bytes, Files: e.fp.Files,
				LastAccess:  e.fp.LastAccess.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
				Fingerprint: e.fp.Hex(),
			}
		}
		if opts.WithArtifacts {
			if body.Artifacts, err = sessionArtifacts(ctx, opts.Store, opts.Scope); err != nil {
				return nil, err
			}
		}
		if body.Workspace == nil && len(body.Artifacts) == 0 {
			return nil, noWorkspace(opts.Scope, s.scratch, dir, opts.WithArtifacts)
		}
		if sp, err = newSessionPlan(body); err != nil {
			return nil, err
		}
		rep.Plan = &sp
		var cerr error
		if !confirmed {
			cerr = &ConfirmationError{Msg: "confirmation required: nothing was deleted; confirm plan " + sp.PlanID}
		} else {
			cerr = opts.Confirm.Match(sp)
		}
		if cerr != nil {
			if rep.Workspace != nil {
				rep.Workspace.Decision = WouldRemove
				rep.Workspace.Reason = "would discard without a snapshot under plan " + sp.PlanID
			}
			return rep, cerr
		}
		for _, a := range sp.Artifacts {
			if a.ReusedNumber != nil && !opts.AllowNumberReuse {
				return rep, &ConfirmationError{Msg: fmt.Sprintf(
					"refused: %q: %s; to delete anyway, confirm again with --allow-number-reuse; nothing was deleted", a.Name, a.Note)}
			}
		}
		s.planID = sp.PlanID
	} else if e == nil {
		if len(rep.Recovered) > 0 {
			return rep, nil // an interrupted delete was finished (or undone)
		}
		return nil, noWorkspace(opts.Scope, s.scratch, dir, false)
	}
	if opts.BeforeExecute != nil {
		if err := opts.BeforeExecute(); err != nil {
			return nil, err
		}
	}
	if e != nil {
		s.removeOne(ctx, e)
		it := e.item
		rep.Workspace = &it
		if it.Decision != Removed {
			return rep, nil
		}
	}
	for _, a := range sp.Artifacts {
		refs := make([]artifacts.VersionRef, len(a.Versions))
		for i, v := range a.Versions {
			refs[i] = v.Ref()
		}
		recs, err := opts.Store.DeleteExact(ctx, opts.Scope, a.Name, refs)
		rep.Deleted = append(rep.Deleted, recs...)
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// noWorkspace is the error for a session with nothing to delete.
func noWorkspace(scope artifacts.Scope, scratch, dir string, withArtifacts bool) error {
	what := "has no workspace under the scratch root"
	if withArtifacts {
		what = "has no workspace under the scratch root and no artifacts in the store"
	}
	return artifacts.Errorf(artifacts.CodeNotFound, "ws delete", nil, "%s %s %s (looked for %s)", scope, what, scratch, dir)
}

// sessionEntry plans the session's directory: nil when there is none.
func (s *sweeper) sessionEntry(ctx context.Context, dir string, scope artifacts.Scope) (*entry, error) {
	if _, err := s.root.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, artifacts.Errorf(artifacts.CodeIO, "ws delete", err, "%s", dir)
	}
	e := s.planOne(ctx, dir)
	if e == nil {
		return nil, nil
	}
	if e.item.Scope != nil && *e.item.Scope != scope {
		e.cand = false
		e.item.Decision = Skipped
		e.item.Reason = fmt.Sprintf("its index names %s, not %s; never removed", *e.item.Scope, scope)
	}
	return e, nil
}

// sessionArtifacts lists every version of every name of scope, bound to
// its bytes; none when the scope has no artifact.
func sessionArtifacts(ctx context.Context, st *artifacts.Store, scope artifacts.Scope) ([]SessionArtifact, error) {
	out := []SessionArtifact{}
	caps := st.Capabilities()
	limit := caps.MaxPageLimit
	cursor := ""
	for {
		page, err := st.ListNames(ctx, scope, artifacts.ListOptions{Limit: limit, Cursor: cursor})
		if artifacts.IsNotFound(err) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for _, n := range page.Items {
			a := SessionArtifact{Name: n.Name, Versions: []deletion.PlanVersion{}}
			vc := ""
			for {
				vp, err := st.ListVersions(ctx, scope, n.Name, artifacts.ListOptions{Limit: limit, Cursor: vc})
				if err != nil && !artifacts.IsNotFound(err) {
					return nil, err
				}
				for _, r := range vp.Items {
					a.Versions = append(a.Versions, deletion.PlanVersion{Version: r.Version, Size: r.Size, Digest: r.Digest, Token: r.Token})
				}
				if err != nil || vp.NextCursor == "" || vp.NextCursor == vc {
					break
				}
				vc = vp.NextCursor
			}
			if len(a.Versions) > 0 {
				if caps.ReusesVersions {
					// Every version goes, so the next save starts again at
					// the first number.
					first := caps.FirstVersion
					a.ReusedNumber, a.Note = &first, deletion.ReuseNote(caps.Layout, first)
				}
				out = append(out, a)
			}
		}
		if page.NextCursor == "" || page.NextCursor == cursor {
			return out, nil
		}
		cursor = page.NextCursor
	}
}
