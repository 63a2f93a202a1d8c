// Package retention prunes artifact versions by policy: which versions of
// every name a retention policy keeps and which it deletes, as a plan
// first (ComputePlan), then the deletion of exactly that plan (Execute),
// through the portable artifacts.Store and so for every layout.
//
// A policy selects versions to prune (OlderThan, MIME, Name) and protects
// versions from pruning (KeepLast, KeepWithin, the latest version unless
// NoKeepLatest); a version is pruned when it is selected and nothing
// protects it. Where the layout reuses version numbers
// (Capabilities.ReusesVersions), a name's highest version is kept whatever
// the policy says, since deleting it would let the writer hand its number
// out again.
//
// A plan is bound to what it deletes: its plan_id hashes the store, the
// policy, the scope filter and, for every version it deletes, the
// version's number, size, digest and binding token. Execute deletes each
// name's planned versions with Store.DeleteExact, which refuses
// (CodeConflict) a version whose bytes changed since. The policy_id hashes
// the store, policy and filter only: confirming it ("run this policy")
// lets cron prune without a human, within the bounds ExecOptions sets.
package retention

import (
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/duration"
	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Policy is a retention policy. The zero Policy selects nothing: Validate
// requires at least one of KeepLast, KeepWithin and OlderThan, so that a
// policy never deletes everything but the latest by omission.
type Policy struct {
	// KeepLast keeps the KeepLast highest versions of every name (0: not
	// set).
	KeepLast int
	// KeepWithin keeps the versions created at most KeepWithin before the
	// plan's time (0: not set).
	KeepWithin time.Duration
	// NoKeepLatest lets the latest version of a name be pruned; by
	// default it is always kept.
	NoKeepLatest bool
	// OlderThan prunes only versions created more than OlderThan before
	// the plan's time (0: any age).
	OlderThan time.Duration
	// MIME prunes only versions whose MIME type matches this path.Match
	// pattern ("image/*"); empty for any.
	MIME string
	// Name considers only the names matching this path.Match pattern
	// ("*" does not cross "/": "logs/*"); empty for every name.
	Name string
}

// Validate refuses a policy that selects by nothing (no KeepLast,
// KeepWithin or OlderThan), negative values, durations that are not whole
// seconds and malformed patterns, with CodeInvalidArgument.
func (p Policy) Validate() error {
	bad := func(format string, args ...any) error {
		return artifacts.Errorf(artifacts.CodeInvalidArgument, "prune policy", nil, format, args...)
	}
	switch {
	case p.KeepLast < 0:
		return bad("keep-last %d is negative", p.KeepLast)
	case p.KeepWithin < 0:
		return bad("keep-within %s is negative", p.KeepWithin)
	case p.OlderThan < 0:
		return bad("older-than %s is negative", p.OlderThan)
	case p.KeepWithin%time.Second != 0 || p.OlderThan%time.Second != 0:
		return bad("durations must be whole seconds")
	case p.KeepLast == 0 && p.KeepWithin == 0 && p.OlderThan == 0:
		return bad("the policy says nothing about which versions to prune: give at least one of keep-last, keep-within and older-than")
	}
	for _, g := range []struct{ what, pat string }{{"mime", p.MIME}, {"name", p.Name}} {
		if _, err := path.Match(g.pat, ""); err != nil {
			return bad("%s pattern %q is malformed", g.what, g.pat)
		}
	}
	return nil
}

// Spec is the normalised form of a policy, as plans print it and as
// policy_id hashes it. Its field order is part of that definition.
type Spec struct {
	KeepLast   int    `json:"keep_last"`
	KeepWithin string `json:"keep_within"`
	KeepLatest bool   `json:"keep_latest"`
	OlderThan  string `json:"older_than"`
	MIME       string `json:"mime"`
	Name       string `json:"name"`
}

// Spec returns the normalised policy: durations as FormatDuration writes
// them ("" when not set), KeepLatest true unless NoKeepLatest.
func (p Policy) Spec() Spec {
	return Spec{
		KeepLast: p.KeepLast, KeepWithin: FormatDuration(p.KeepWithin), KeepLatest: !p.NoKeepLatest,
		OlderThan: FormatDuration(p.OlderThan), MIME: p.MIME, Name: p.Name,
	}
}

// Policy returns the policy the spec stands for.
func (s Spec) Policy() (Policy, error) {
	p := Policy{KeepLast: s.KeepLast, NoKeepLatest: !s.KeepLatest, MIME: s.MIME, Name: s.Name}
	var err error
	if s.KeepWithin != "" {
		if p.KeepWithin, err = ParseDuration(s.KeepWithin); err != nil {
			return Policy{}, err
		}
	}
	if s.OlderThan != "" {
		if p.OlderThan, err = ParseDuration(s.OlderThan); err != nil {
			return Policy{}, err
		}
	}
	return p, nil
}

// String describes the policy in the words of the command line's flags.
func (p Policy) String() string {
	var parts []string
	if p.KeepLast > 0 {
		parts = append(parts, "--keep-last "+strconv.Itoa(p.KeepLast))
	}
	if p.KeepWithin > 0 {
		parts = append(parts, "--keep-within "+FormatDuration(p.KeepWithin))
	}
	if p.NoKeepLatest {
		parts = append(parts, "--no-keep-latest")
	}
	if p.OlderThan > 0 {
		parts = append(parts, "--older-than "+FormatDuration(p.OlderThan))
	}
	if p.MIME != "" {
		parts = append(parts, "--mime "+p.MIME)
	}
	if p.Name != "" {
		parts = append(parts, "--name "+p.Name)
	}
	return strings.Join(parts, " ")
}

// Filter returns the scope filter of a plan: nil for the whole store.
func filterOf(f artifacts.Scope) *artifacts.Scope {
	if f.Kind == "" {
		return nil
	}
	return &f
}

// Under reports whether scope is inside the filter f: every scope when
// f's Kind is empty; for an app filter every scope of that app (its app
// scope, its users' and their sessions'); for a user filter that user's
// scope and its sessions'; for a session filter that session's scope.
func Under(scope, f artifacts.Scope) bool {
	switch f.Kind {
	case "":
		return true
	case artifacts.KindApp:
		return scope.App == f.App
	case artifacts.KindUser:
		return scope.Kind != artifacts.KindApp && scope.App == f.App && scope.User == f.User
	default:
		return scope == f
	}
}

// idBody is what policy_id hashes; its field order is part of the
// definition.
type idBody struct {
	Action string           `json:"action"`
	Store  string           `json:"store"`
	Policy Spec             `json:"policy"`
	Filter *artifacts.Scope `json:"filter"`
}

// PolicyID returns the policy_id of running policy p over the scopes
// under filter in the store whose canonical URI is store: the lowercase
// hex SHA-256 of the canonical JSON {"action":"prune","store","policy",
// "filter"} (filter null for the whole store).
func PolicyID(store string, p Policy, filter artifacts.Scope) (string, error) {
	return plan.ID(idBody{Action: ActionPrune, Store: store, Policy: p.Spec(), Filter: filterOf(filter)})
}

// ParseDuration parses a retention duration with the one parser of every
// duration (internal/duration: numbers with the units w, d, h, m and s, as
// "30d", "2w", "1d12h" or "90m"), and refuses any that is not a whole
// number of seconds, the resolution of a policy.
func ParseDuration(s string) (time.Duration, error) {
	d, err := duration.Parse(s)
	if err != nil {
		return 0, err
	}
	if d%time.Second != 0 {
		return 0, artifacts.Errorf(artifacts.CodeInvalidArgument, "parse duration", nil,
			"%q is not a retention duration: write whole seconds or more with units (w, d, h, m, s), e.g. 30d, 2w, 1d12h or 90m", s)
	}
	return d, nil
}

// FormatDuration formats d as the one duration formatter does
// (duration.Format: the largest unit first, 30d, 1d12h, 90m is 1h30m),
// which ParseDuration reads back; "" for 0. Plan ids hash its output.
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return duration.Format(d)
}
