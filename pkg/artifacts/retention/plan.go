package retention

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/deletion"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// ActionPrune is the action of a prune plan.
const ActionPrune = "prune"

// TimeFormat is how a plan writes times: RFC 3339 in UTC with
// milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Version is one version in a plan, kept or pruned, and why.
type Version struct {
	Version int64 `json:"version"`
	Size    int64 `json:"size"`
	// Digest and Token bind the version's bytes (see artifacts.VersionRef).
	Digest string `json:"digest"`
	Token  string `json:"token,omitempty"`
	// CreatedAt is the record's created_at; AgeSeconds is the plan's
	// time minus it (negative for a clock ahead).
	CreatedAt  string `json:"created_at"`
	AgeSeconds int64  `json:"age_seconds"`
	Reason     string `json:"reason"`
}

// Name is one name the policy applies to: its kept and pruned versions,
// each by ascending version.
type Name struct {
	Scope  artifacts.Scope `json:"scope"`
	Name   string          `json:"name"`
	Kept   []Version       `json:"kept"`
	Pruned []Version       `json:"pruned"`
}

// Problem is a version the walk found broken or could not read: never
// pruned, never counted.
type Problem struct {
	Scope *artifacts.Scope `json:"scope"`
	Name  string           `json:"name,omitempty"`
	artifacts.Problem
}

// Totals count a plan's versions and bytes.
type Totals struct {
	Scopes         int   `json:"scopes"`
	Names          int   `json:"names"`
	PrunedVersions int64 `json:"pruned_versions"`
	PrunedBytes    int64 `json:"pruned_bytes"`
	KeptVersions   int64 `json:"kept_versions"`
	KeptBytes      int64 `json:"kept_bytes"`
	Problems       int   `json:"problems"`
}

// Plan is a prune plan, as printed and as given back to confirm it. Its
// plan_id hashes the body (see Body), which holds what the plan deletes;
// the kept versions, reasons, ages, totals and notes describe it for
// people and are not part of the hash.
type Plan struct {
	Action   string           `json:"action"`
	Store    string           `json:"store"`
	Layout   string           `json:"layout"`
	Policy   Spec             `json:"policy"`
	Filter   *artifacts.Scope `json:"filter"`
	PolicyID string           `json:"policy_id"`
	// AsOf is the time the policy's durations are measured from.
	AsOf     string    `json:"as_of"`
	Names    []Name    `json:"names"`
	Totals   Totals    `json:"totals"`
	Problems []Problem `json:"problems"`
	// Notes state the layout's facts that bear on the plan.
	Notes  []string `json:"notes"`
	PlanID string   `json:"plan_id"`
}

// BodyName is one name's deletions in the body.
type BodyName struct {
	Scope    artifacts.Scope        `json:"scope"`
	Name     string                 `json:"name"`
	Versions []deletion.PlanVersion `json:"versions"`
}

// Body is what plan_id hashes: the store, layout, policy, filter and
// policy_id, and every version the plan deletes, names in the plan's
// order. Its field order is part of the definition.
type Body struct {
	Action   string           `json:"action"`
	Store    string           `json:"store"`
	Layout   string           `json:"layout"`
	Policy   Spec             `json:"policy"`
	Filter   *artifacts.Scope `json:"filter"`
	PolicyID string           `json:"policy_id"`
	Prune    []BodyName       `json:"prune"`
}

// Body returns the plan's body: names without pruned versions left out.
func (p *Plan) Body() Body {
	b := Body{Action: p.Action, Store: p.Store, Layout: p.Layout, Policy: p.Policy, Filter: p.Filter, PolicyID: p.PolicyID, Prune: []BodyName{}}
	for _, n := range p.Names {
		if len(n.Pruned) == 0 {
			continue
		}
		bn := BodyName{Scope: n.Scope, Name: n.Name, Versions: make([]deletion.PlanVersion, len(n.Pruned))}
		for i, v := range n.Pruned {
			bn.Versions[i] = deletion.PlanVersion{Version: v.Version, Size: v.Size, Digest: v.Digest, Token: v.Token}
		}
		b.Prune = append(b.Prune, bn)
	}
	return b
}

// ID returns the plan_id of the plan's body: the lowercase hex SHA-256 of
// its canonical JSON (internal/plan.Canonical).
func (p *Plan) ID() (string, error) { return plan.ID(p.Body()) }

// Options say what to plan.
type Options struct {
	// Store is the store's canonical URI, recorded in the plan and hashed
	// into its ids.
	Store string
	// Policy is the retention policy.
	Policy Policy
	// Filter limits the plan to the scopes Under it; the zero Scope is the
	// whole store.
	Filter artifacts.Scope
	// Now is the time the policy's durations are measured from.
	Now time.Time
}

// ComputePlan reads, without changing anything, the record of every
// version under the filter (never a payload but checkpoint manifests) and
// returns the plan that applies the policy to them. The versions of the
// incremental snapshot format (pkg/workspace/checkpoint) are always kept,
// with the reason: manifests (their retention is the format's own) and
// packs (those a manifest uses, those none uses, which fs repair removes
// after its grace period, and those whose use is not known). It walks the store (artifacts.Walker); a
// store that cannot be walked is CodeUnsupported. A version whose record
// does not decode or could not be read is a Problem: never pruned, and it
// does not count toward keep-last. A filter under which the store holds
// nothing, and a name pattern no name matches, are CodeNotFound: a typo is
// not an empty plan.
func ComputePlan(ctx context.Context, st *artifacts.Store, opts Options) (*Plan, error) {
	if err := opts.Policy.Validate(); err != nil {
		return nil, err
	}
	if opts.Filter.Kind != "" {
		if err := opts.Filter.Validate(); err != nil {
			return nil, err
		}
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	caps := st.Capabilities()
	pid, err := PolicyID(opts.Store, opts.Policy, opts.Filter)
	if err != nil {
		return nil, err
	}
	p := &Plan{
		Action: ActionPrune, Store: opts.Store, Layout: caps.Layout, Policy: opts.Policy.Spec(),
		Filter: filterOf(opts.Filter), PolicyID: pid, AsOf: opts.Now.UTC().Format(TimeFormat),
		Names: []Name{}, Problems: []Problem{}, Notes: notes(caps),
	}
	d := decider{p: opts.Policy, caps: caps, now: opts.Now.UnixMilli()}
	var mu sync.Mutex
	scopes := map[artifacts.Scope]bool{}
	var sawScope, sawName bool // under the filter; matching the name pattern
	err = st.Walk(ctx, func(u artifacts.ScopeUsage) error {
		if u.Known && !Under(u.Scope, opts.Filter) {
			return nil
		}
		var names []Name
		var probs []Problem
		matched := false
		ck, err := checkpointReasons(ctx, st, u)
		if err != nil {
			return err
		}
		for _, n := range u.Names {
			if !u.Known || n.Name == "" {
				// Whose it is cannot be told: reported whatever the filter,
				// so that nothing is pruned around it unseen.
				for _, pr := range n.Problems {
					probs = append(probs, Problem{Name: n.Name, Problem: pr})
				}
				continue
			}
			if opts.Policy.Name != "" {
				if ok, _ := path.Match(opts.Policy.Name, n.Name); !ok {
					continue
				}
			}
			matched = true
			sc := u.Scope
			for _, pr := range n.Problems {
				probs = append(probs, Problem{Scope: &sc, Name: n.Name, Problem: pr})
			}
			if len(n.Records) > 0 {
				names = append(names, d.decide(u.Scope, n.Name, n.Records, ck))
			}
		}
		mu.Lock()
		defer mu.Unlock()
		sawScope = sawScope || (u.Known && len(u.Names) > 0)
		sawName = sawName || matched
		if len(names) > 0 {
			scopes[u.Scope] = true
		}
		p.Names = append(p.Names, names...)
		p.Problems = append(p.Problems, probs...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case opts.Filter.Kind != "" && !sawScope:
		return nil, artifacts.Errorf(artifacts.CodeNotFound, "plan prune", nil, "the store holds nothing under %s", opts.Filter)
	case opts.Policy.Name != "" && !sawName:
		return nil, artifacts.Errorf(artifacts.CodeNotFound, "plan prune", nil, "no name in the scopes pruned matches %q (* does not cross /)", opts.Policy.Name)
	}
	slices.SortFunc(p.Names, func(a, b Name) int {
		return cmp.Or(compareScope(a.Scope, b.Scope), strings.Compare(a.Name, b.Name))
	})
	slices.SortFunc(p.Problems, func(a, b Problem) int {
		var sa, sb artifacts.Scope
		if a.Scope != nil {
			sa = *a.Scope
		}
		if b.Scope != nil {
			sb = *b.Scope
		}
		return cmp.Or(compareScope(sa, sb), strings.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version), strings.Compare(a.Path, b.Path))
	})
	p.total(len(scopes))
	if p.PlanID, err = p.ID(); err != nil {
		return nil, err
	}
	return p, nil
}

func compareScope(a, b artifacts.Scope) int {
	return cmp.Or(strings.Compare(string(a.Kind), string(b.Kind)), strings.Compare(a.App, b.App),
		strings.Compare(a.User, b.User), strings.Compare(a.Session, b.Session))
}

func (p *Plan) total(scopes int) {
	t := Totals{Scopes: scopes, Names: len(p.Names), Problems: len(p.Problems)}
	for _, n := range p.Names {
		for _, v := range n.Kept {
			t.KeptVersions++
			t.KeptBytes = artifacts.AddSize(t.KeptBytes, v.Size)
		}
		for _, v := range n.Pruned {
			t.PrunedVersions++
			t.PrunedBytes = artifacts.AddSize(t.PrunedBytes, v.Size)
		}
	}
	p.Totals = t
}

// notes states the layout's facts that bear on a prune.
func notes(c artifacts.Capabilities) []string {
	if c.ReusesVersions {
		return []string{fmt.Sprintf("the %s layout reuses version numbers: the highest version of every name is kept whatever the policy says (deleting it would let the writer hand its number out again)", c.Layout)}
	}
	return []string{fmt.Sprintf("the %s layout never reuses version numbers: a pruned version keeps its reservation, so its number is never handed out again and the name's version capacity (%d reservations in its life) is not returned; the bytes are", c.Layout, c.VersionCapacity())}
}

// The reasons a plan gives for keeping the versions of the incremental
// snapshot format (pkg/workspace/checkpoint), whatever the policy.
const (
	// ReasonCheckpointManifest: a checkpoint manifest; their retention is
	// the format's own (--ws-max-snapshots).
	ReasonCheckpointManifest = "checkpoint manifest: kept by the format's own retention (--ws-max-snapshots), never pruned"
	// ReasonCheckpointPackUsed prefixes the manifests that use a pack.
	ReasonCheckpointPackUsed = "checkpoint pack used by "
	// ReasonCheckpointPackUnused: a pack no manifest names.
	ReasonCheckpointPackUnused = "checkpoint pack no manifest names: fs repair removes it after its grace period"
	// ReasonCheckpointPackUnknown: a pack of a scope with a manifest that
	// does not read, or one published while the plan was made.
	ReasonCheckpointPackUnknown = "checkpoint pack: which manifests use it is not known (a manifest does not read, or it is new); never pruned"
)

// checkpointReasons returns, for a scope's records, why a version of the
// checkpoint format is kept ("" for any other version). It reads the
// scope's manifests only when the scope is a session scope holding
// format versions.
func checkpointReasons(ctx context.Context, st *artifacts.Store, u artifacts.ScopeUsage) (func(artifacts.Record) string, error) {
	none := func(artifacts.Record) string { return "" }
	if !checkpoint.HasCheckpoints(u) {
		return none, nil
	}
	refs, err := checkpoint.ReadRefs(ctx, st, u.Scope, zipsafe.Limits{})
	if err != nil && ctx.Err() != nil {
		return nil, err
	}
	if err != nil {
		// Which packs are used is not known: every one is kept.
		refs = &checkpoint.ScopeRefs{Unread: map[checkpoint.Ref]error{{}: err}}
	}
	known := map[checkpoint.Ref]bool{}
	for _, p := range refs.Packs {
		known[checkpoint.Ref{Name: p.Name, Version: p.Version}] = true
	}
	return func(r artifacts.Record) string {
		ref := checkpoint.Ref{Name: r.Name, Version: r.Version}
		switch {
		case checkpoint.IsManifest(r):
			return ReasonCheckpointManifest
		case !checkpoint.IsPack(r):
			return ""
		case len(refs.Unread) > 0 || !known[ref]:
			return ReasonCheckpointPackUnknown
		}
		users := refs.Users(ref)
		if len(users) == 0 {
			return ReasonCheckpointPackUnused
		}
		if len(users) > 3 {
			return fmt.Sprintf("%s%d manifests, %s to %s", ReasonCheckpointPackUsed, len(users), users[0], users[len(users)-1])
		}
		names := make([]string, len(users))
		for i, m := range users {
			names[i] = m.String()
		}
		return ReasonCheckpointPackUsed + strings.Join(names, ", ")
	}, nil
}

// decider applies a policy to one name's records.
type decider struct {
	p    Policy
	caps artifacts.Capabilities
	now  int64 // ms
}

// decide sorts recs (ascending) into kept and pruned.
func (d decider) decide(scope artifacts.Scope, name string, recs []artifacts.Record, ck func(artifacts.Record) string) Name {
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b artifacts.Record) int { return cmp.Compare(a.Version, b.Version) })
	n := Name{Scope: scope, Name: name, Kept: []Version{}, Pruned: []Version{}}
	for i, r := range recs {
		v := Version{
			Version: r.Version, Size: r.Size, Digest: r.Digest, Token: r.Token,
			CreatedAt: r.Created().Format(TimeFormat), AgeSeconds: (d.now - r.CreatedAt) / 1000,
		}
		why := ck(r)
		if why == "" {
			why = d.keep(r, len(recs)-1-i)
		}
		if why != "" {
			v.Reason = why
			n.Kept = append(n.Kept, v)
			continue
		}
		v.Reason = d.pruneReason()
		n.Pruned = append(n.Pruned, v)
	}
	return n
}

// keep says why the version of rank (0: the highest) is kept, or "" when
// the policy prunes it.
func (d decider) keep(r artifacts.Record, rank int) string {
	age := d.now - r.CreatedAt
	switch {
	case rank == 0 && d.caps.ReusesVersions:
		return "highest version: this layout would hand its number out again"
	case rank == 0 && !d.p.NoKeepLatest:
		return "latest version"
	case d.p.KeepLast > 0 && rank < d.p.KeepLast:
		return "one of the last " + strconv.Itoa(d.p.KeepLast)
	case d.p.KeepWithin > 0 && age <= d.p.KeepWithin.Milliseconds():
		return "created within " + FormatDuration(d.p.KeepWithin)
	case d.p.MIME != "" && !matchMIME(d.p.MIME, r.MIMEType):
		return fmt.Sprintf("MIME type %s does not match %s", r.MIMEType, d.p.MIME)
	case d.p.OlderThan > 0 && age <= d.p.OlderThan.Milliseconds():
		return "not older than " + FormatDuration(d.p.OlderThan)
	}
	return ""
}

func matchMIME(pattern, mime string) bool {
	ok, _ := path.Match(pattern, mime)
	return ok
}

// pruneReason says why the policy prunes a version it does not keep.
func (d decider) pruneReason() string {
	var parts []string
	if d.p.KeepLast > 0 {
		parts = append(parts, "not one of the last "+strconv.Itoa(d.p.KeepLast))
	}
	if d.p.KeepWithin > 0 {
		parts = append(parts, "created more than "+FormatDuration(d.p.KeepWithin)+" ago")
	}
	if d.p.OlderThan > 0 {
		parts = append(parts, "older than "+FormatDuration(d.p.OlderThan))
	}
	if d.p.MIME != "" {
		parts = append(parts, "MIME type matches "+d.p.MIME)
	}
	return strings.Join(parts, ", ")
}
