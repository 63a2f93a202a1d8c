// Package quota reports how much of its lifetime capacity an artifact store
// has used, and how full the per-session scratch workspaces are.
//
// The store side follows the v1 layout's ceilings, which deletion never
// gives back: a store holds at most MaxScanEntries/2 scopes, a scope at most
// MaxScanEntries/2 names, and a name at most MaxScanEntries/3 reservations
// (version numbers ever handed out). A report counts, per scope, the names,
// published versions and their bytes, the largest published version, the
// name slots used and the fullest name's reservations, and names the
// binding limit: whichever of the two is closer to its ceiling.
//
// It works on any store whose driver can walk it, reading records and
// never payloads, but the checkpoint manifests of each session scope
// reported that holds incremental snapshots (for live bytes and
// unreferenced packs: see ScopeUsage.Checkpoints and SnapshotUsage). For the scope count it also asks the store for its scope
// slots (artifacts.Store.ScopeSlots); it never reads a layout itself.
//
// The workspace side measures every session directory under a scratch
// root (through workspace.Manager.ListWorkspaces) against byte and file
// limits.
package quota

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// DefaultWarnPercent is the usage, in percent, at and above which a row is
// marked as a warning when Options.WarnPercent is zero.
const DefaultWarnPercent = 80

// The limits a report names as binding.
const (
	// LimitScopes is the store's scope ceiling (MaxScanEntries/2).
	LimitScopes = "scopes"
	// LimitNameSlots is a scope's name ceiling (MaxScanEntries/2).
	LimitNameSlots = "name_slots"
	// LimitReservations is a name's reservation ceiling (MaxScanEntries/3).
	LimitReservations = "reservations"
	// LimitBytes is a workspace's byte limit.
	LimitBytes = "bytes"
	// LimitFiles is a workspace's file limit.
	LimitFiles = "files"
)

// WorkspaceLimits are the limits workspaces are measured against. Zero
// fields select DefaultWorkspaceLimits.
type WorkspaceLimits struct {
	// MaxBytes is the bytes a workspace may hold (the quota ledger's
	// total limit).
	MaxBytes int64 `json:"max_bytes"`
	// MaxFiles is the number of regular files a workspace may hold.
	MaxFiles int `json:"max_files"`
}

// DefaultWorkspaceLimits returns the limits used when none are given. The
// workspace quota ledger is unlimited by default, so these are the bounds
// every workspace must stay within to be snapshotted and hydrated again:
// zipsafe's default archive limits (4 GiB, 100,000 entries), which
// workspace.Manager uses unless told otherwise.
func DefaultWorkspaceLimits() WorkspaceLimits {
	l := zipsafe.DefaultLimits()
	return WorkspaceLimits{MaxBytes: l.MaxBytes, MaxFiles: l.MaxEntries}
}

// Options select what a report covers and how rows are judged.
type Options struct {
	// URI is the store's URI as the report names it (StoreUsage.URI): for
	// the command line, the canonical --store value.
	URI string
	// Scope, when not nil, restricts the scope rows (and the workspace
	// rows) to that scope; the store totals still cover the whole store.
	Scope *artifacts.Scope
	// Scratch is the scratch root whose workspaces are reported; empty for
	// none.
	Scratch string
	// WorkspaceLimits are the workspace limits (zero fields: defaults;
	// with SnapshotFormat FormatZip, a zero MaxBytes is the layout's
	// largest payload when that is smaller, since a zip snapshot is one).
	WorkspaceLimits WorkspaceLimits
	// WarnPercent marks rows whose usage is at or above it (0: 80).
	WarnPercent float64
	// FailOverPercent counts rows whose usage is above it in Report.Over;
	// 0 disables it.
	FailOverPercent float64
	// ScopeSlots overrides how the store's scope slots are counted; nil
	// means asking the store (artifacts.Store.ScopeSlots).
	ScopeSlots func(ctx context.Context) (int, error)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxSnapshots and MaxStoreBytes are the retention and the
	// store-bytes ceiling session snapshots are measured against (zero:
	// checkpoint.DefaultMaxSnapshots, and no ceiling); SnapshotFormat the
	// format they are written in (zero: FormatAuto), which decides
	// whether a zip's payload and version ceilings can stop them (see
	// SnapshotUsage).
	MaxSnapshots   int
	MaxStoreBytes  int64
	SnapshotFormat workspace.SnapshotFormat
	// Progress, when not nil, is called after each scope with the
	// published versions (records read) and their bytes so far.
	Progress func(versions, bytes int64)
}

// Report is the result of Compute. Its JSON form is the -o json output of
// "agentstore quota report" (cli.md): store, scopes and workspaces, plus
// the thresholds and counters.
type Report struct {
	// Store is the store's totals and its scope headroom.
	Store StoreUsage `json:"store"`
	// Scopes has one row per scope, fullest first.
	Scopes []ScopeUsage `json:"scopes"`
	// Workspaces has one row per session directory, fullest first; empty
	// without a scratch root.
	Workspaces []WorkspaceUsage `json:"workspaces"`
	// Snapshots has one row per session scope holding workspace
	// snapshots (of either format), closest to a limit first.
	Snapshots []SnapshotUsage `json:"snapshots"`
	// Scratch is the scratch root reported, "" for none.
	Scratch string `json:"scratch,omitempty"`
	// WorkspaceLimits are the limits workspaces were measured against.
	WorkspaceLimits *WorkspaceLimits `json:"workspace_limits,omitempty"`
	// ScopesTotal and WorkspacesTotal count the rows before Top.
	ScopesTotal     int `json:"scopes_total"`
	WorkspacesTotal int `json:"workspaces_total"`
	SnapshotsTotal  int `json:"snapshots_total"`
	// WarnPercent and FailOverPercent are the thresholds applied
	// (FailOverPercent 0: none).
	WarnPercent     float64 `json:"warn_percent"`
	FailOverPercent float64 `json:"fail_over_percent"`
	// Warnings counts the rows (store, scopes, workspaces) at or above
	// WarnPercent; Over those above FailOverPercent. Both count every row,
	// not only those Top keeps.
	Warnings int `json:"warnings"`
	Over     int `json:"over"`
	// OverItems describes the rows counted in Over, fullest first.
	OverItems []string `json:"over_items,omitempty"`
	// GeneratedAt is when the report was made.
	GeneratedAt time.Time `json:"-"`
}

// StoreUsage is the store-wide part of a report.
type StoreUsage struct {
	// URI is the store's URI (Options.URI).
	URI string `json:"uri"`
	// Layout is the store's layout ("erlang-fs", "erlang-fs-sharded",
	// "erlang-gcs", "memory").
	Layout string `json:"layout"`
	// Adapter is the store adapter's name ("fs", "fs-sharded", "gcs",
	// "memory").
	Adapter string `json:"adapter"`
	// Scopes is the capacity used of ScopeCapacity: the larger of the scope
	// slots and the scope directories (or prefixes). Where the ceiling is
	// per shard (PerShard), it is the scope slots of the fullest shard.
	Scopes int `json:"scopes"`
	// PerShard is true when ScopeCapacity bounds each shard rather than
	// the store (artifacts.Capabilities.ScopeCeilingPerShard).
	PerShard bool `json:"per_shard,omitempty"`
	// NoCeilings is true when the layout has no lifetime ceilings
	// (artifacts.Capabilities.NoCeilings): every capacity is then 0 and
	// no usage is judged against the thresholds.
	NoCeilings bool `json:"no_ceilings,omitempty"`
	// ScopeCapacity is MaxScanEntries/2.
	ScopeCapacity int `json:"scope_capacity"`
	// ScopeSlots is the number of scope slot files, -1 when the store has
	// none to count (Cloud Storage); ScopeDirs the scope directories or
	// prefixes found by the walk.
	ScopeSlots int `json:"scope_slots"`
	ScopeDirs  int `json:"scope_dirs"`
	// UsagePercent is Scopes of ScopeCapacity, in percent.
	UsagePercent float64 `json:"usage_percent"`
	// Warn and Over say whether UsagePercent crossed the thresholds.
	Warn bool `json:"warn"`
	Over bool `json:"over"`
	// MaxScanEntries sets every ceiling; NameCapacity and
	// ReservationCapacity are the per-scope and per-name ceilings.
	MaxScanEntries      int `json:"max_scan_entries"`
	NameCapacity        int `json:"name_capacity"`
	ReservationCapacity int `json:"reservation_capacity"`
	// Names, Versions and Bytes total the published names, versions and
	// payload bytes of the whole store.
	Names    int   `json:"names"`
	Versions int64 `json:"versions"`
	Bytes    int64 `json:"bytes"`
	// Problems counts records found broken by the walk (see
	// artifacts.NameUsage.Problems, and records stating an impossible
	// size); their versions are not counted.
	Problems int `json:"problems"`
	// Unreadable counts versions the walk could not read (permission or
	// I/O errors); they are not problems and not counted.
	Unreadable int `json:"unreadable"`
	// Foreign counts the objects or files in the store's namespace that
	// are not part of its layout (artifacts.CodeForeign): skipped.
	Foreign int `json:"foreign"`
	// Note says, for a layout without lifetime ceilings (NoCeilings), that
	// no capacity is measured.
	Note string `json:"note,omitempty"`
	// UnreadableCode is permission_denied or io_error when Unreadable > 0.
	UnreadableCode artifacts.Code `json:"-"`
}

// ScopeUsage is one scope's row.
type ScopeUsage struct {
	// Scope is nil when no record of the scope decodes (every version
	// deleted, say); Hash always identifies it.
	Scope *artifacts.Scope `json:"scope"`
	Hash  string           `json:"scope_hash"`
	// Names counts the names with at least one published version;
	// Versions and Bytes the published versions and their payload bytes.
	Names    int   `json:"names"`
	Versions int64 `json:"versions"`
	Bytes    int64 `json:"bytes"`
	// Largest is the largest published version; nil when there is none.
	Largest *Largest `json:"largest"`
	// NameSlots is the capacity used of NameCapacity: every name the scope
	// ever held, deleted or not.
	NameSlots    int `json:"name_slots"`
	NameCapacity int `json:"name_capacity"`
	// FullestName is the name with the most reservations; nil when the
	// scope has no name directory.
	FullestName *FullestName `json:"fullest_name"`
	// BindingLimit is LimitNameSlots or LimitReservations, whichever is
	// closer to its ceiling; UsagePercent is how close, in percent.
	BindingLimit string  `json:"binding_limit"`
	UsagePercent float64 `json:"usage_percent"`
	// Warn and Over say whether UsagePercent crossed the thresholds.
	Warn bool `json:"warn"`
	Over bool `json:"over"`
	// Problems counts the scope's records found broken (impossible sizes
	// included: they are not in Versions and Bytes).
	Problems int `json:"problems"`
	// Unreadable counts the scope's versions that could not be read
	// (permission or I/O errors): not problems, not in the counts.
	Unreadable int `json:"unreadable"`
	// Checkpoints is what the incremental snapshots of a session scope
	// hold (pkg/workspace/checkpoint: manifests and packs, stored bytes,
	// live and dead bytes); nil when the scope has none. Their versions
	// and bytes are in Versions and Bytes too.
	Checkpoints *checkpoint.Usage `json:"checkpoints,omitempty"`
	// CheckpointsProblem says why Checkpoints is incomplete (the latest
	// manifest, or the scope's names, do not read: live bytes unknown,
	// counted as dead); empty when it is not.
	CheckpointsProblem string `json:"checkpoints_problem,omitempty"`

	pct            float64 // exact
	unreadableCode artifacts.Code
}

// Largest is the largest published version of a scope.
type Largest struct {
	Name    string `json:"name"`
	Version int64  `json:"version"`
	Size    int64  `json:"size"`
}

// FullestName is the name of a scope with the most reservations.
type FullestName struct {
	// Name is "" when no record of the name decodes (names are never
	// empty); Hash always identifies it.
	Name         string  `json:"name"`
	Hash         string  `json:"name_hash"`
	Reservations int     `json:"reservations"`
	Capacity     int     `json:"capacity"`
	UsagePercent float64 `json:"usage_percent"`
}

// WorkspaceUsage is one workspace's row.
type WorkspaceUsage struct {
	// Dir is the directory's name in the scratch root; State its index
	// state (see workspace.State).
	Dir   string `json:"dir"`
	State string `json:"state"`
	// Scope is the session scope; nil unless State is "ok".
	Scope *artifacts.Scope `json:"scope"`
	// Bytes and Files are what the workspace holds, the index excluded.
	Bytes int64 `json:"bytes"`
	Files int   `json:"files"`
	// MaxBytes and MaxFiles are the limits measured against.
	MaxBytes int64 `json:"max_bytes"`
	MaxFiles int   `json:"max_files"`
	// BindingLimit is LimitBytes or LimitFiles; UsagePercent how close the
	// workspace is to it.
	BindingLimit string  `json:"binding_limit"`
	UsagePercent float64 `json:"usage_percent"`
	// LastAccess and Idle say when the session last used it.
	LastAccess time.Time     `json:"-"`
	Idle       time.Duration `json:"-"`
	// Warn and Over say whether UsagePercent crossed the thresholds.
	Warn bool `json:"warn"`
	Over bool `json:"over"`

	pct float64
}

// MarshalJSON adds last_access (RFC 3339 in UTC with milliseconds) and
// idle_seconds to the row.
func (w WorkspaceUsage) MarshalJSON() ([]byte, error) {
	type plain WorkspaceUsage
	return json.Marshal(struct {
		plain
		LastAccess  string `json:"last_access"`
		IdleSeconds int64  `json:"idle_seconds"`
	}{plain(w), w.LastAccess.UTC().Format("2006-01-02T15:04:05.000Z07:00"), int64(w.Idle / time.Second)})
}

// percent returns used of capacity in percent (0 for no capacity).
func percent(used, capacity int64) float64 {
	if capacity <= 0 {
		return 0
	}
	return 100 * float64(used) / float64(capacity)
}

// round2 rounds a percentage to two decimals for display and JSON.
func round2(p float64) float64 { return math.Round(p*100) / 100 }

// Compute walks the store (and lists the workspaces of opts.Scratch) and
// returns the full report, every row sorted fullest first. The store must
// implement artifacts.Walker.
func Compute(ctx context.Context, st *artifacts.Store, opts Options) (*Report, error) {
	const op = "quota report"
	if !st.CanWalk() {
		return nil, artifacts.Errorf(artifacts.CodeUnsupported, op, nil, "the %s store cannot walk its store", st.Capabilities().Name)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.WarnPercent == 0 {
		opts.WarnPercent = DefaultWarnPercent
	}
	caps := st.Capabilities()
	if caps.NoCeilings {
		// Every capacity is 0: nothing is used of one, nothing warns.
		caps.MaxScanEntries = 0
	}
	r := &Report{
		Store: StoreUsage{
			URI:                 opts.URI,
			Adapter:             caps.Name,
			Layout:              caps.Layout,
			PerShard:            caps.ScopeCeilingPerShard,
			NoCeilings:          caps.NoCeilings,
			ScopeCapacity:       caps.ScopeCapacity(),
			MaxScanEntries:      caps.MaxScanEntries,
			NameCapacity:        caps.NameCapacity(),
			ReservationCapacity: caps.VersionCapacity(),
			ScopeSlots:          -1,
		},
		Scopes:          []ScopeUsage{},
		Workspaces:      []WorkspaceUsage{},
		Snapshots:       []SnapshotUsage{},
		WarnPercent:     opts.WarnPercent,
		FailOverPercent: opts.FailOverPercent,
		GeneratedAt:     opts.Now(),
	}
	var wantHash string
	if opts.Scope != nil {
		if err := opts.Scope.Validate(); err != nil {
			return nil, err
		}
		wantHash = opts.Scope.Hash()
	}
	var versionsSeen, bytesSeen int64
	found := false
	if caps.NoCeilings {
		r.Store.Note = NoCeilingsNote(caps.Layout)
	}
	err := st.Walk(ctx, func(u artifacts.ScopeUsage) error {
		if onlyForeign(u) {
			for _, n := range u.Names {
				r.Store.Foreign += len(n.Problems)
			}
			return nil
		}
		r.Store.ScopeDirs++
		row := scopeRow(u, caps)
		r.Store.Names += row.Names
		r.Store.Versions += row.Versions
		r.Store.Bytes = artifacts.AddSize(r.Store.Bytes, row.Bytes)
		r.Store.Problems += row.Problems
		r.Store.Unreadable += row.Unreadable
		if row.Unreadable > 0 && r.Store.UnreadableCode != artifacts.CodePermission {
			r.Store.UnreadableCode = row.unreadableCode
		}
		versionsSeen += row.Versions
		bytesSeen = artifacts.AddSize(bytesSeen, row.Bytes)
		if opts.Progress != nil {
			opts.Progress(versionsSeen, bytesSeen)
		}
		if wantHash != "" && u.Hash != wantHash {
			return nil
		}
		found = true
		if err := checkpointUsage(ctx, st, u, &row); err != nil {
			return err
		}
		sr, err := snapshotRow(ctx, st, u, row, caps, opts)
		if err != nil {
			return err
		}
		if sr != nil {
			r.Snapshots = append(r.Snapshots, *sr)
		}
		r.Scopes = append(r.Scopes, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if wantHash != "" && !found {
		// A scope that never held anything has used nothing.
		s := *opts.Scope
		r.Scopes = append(r.Scopes, ScopeUsage{Scope: &s, Hash: wantHash, NameCapacity: caps.NameCapacity(), BindingLimit: LimitNameSlots})
	}

	slots, err := countScopeSlots(ctx, st, opts)
	if err != nil {
		return nil, err
	}
	r.Store.ScopeSlots = slots
	r.Store.Scopes = max(slots, r.Store.ScopeDirs)
	if caps.ScopeCeilingPerShard {
		r.Store.Scopes = slots
	}
	storePct := percent(int64(r.Store.Scopes), int64(r.Store.ScopeCapacity))
	r.Store.UsagePercent = round2(storePct)

	if opts.Scratch != "" {
		lim := opts.WorkspaceLimits
		def := DefaultWorkspaceLimits()
		if lim.MaxBytes <= 0 {
			lim.MaxBytes = def.MaxBytes
			// A zip snapshot is one payload: a workspace that snapshots
			// as zips stops at the layout's largest (issue 30 item 4).
			if mx := caps.MaxArtifactBytes; opts.SnapshotFormat == workspace.FormatZip && mx > 0 && mx < lim.MaxBytes {
				lim.MaxBytes = mx
			}
		}
		if lim.MaxFiles <= 0 {
			lim.MaxFiles = def.MaxFiles
		}
		rows, err := workspaceRows(ctx, opts.Scratch, opts.Scope, lim, opts.Now)
		if err != nil {
			return nil, err
		}
		r.Workspaces, r.Scratch, r.WorkspaceLimits = rows, opts.Scratch, &lim
	}

	// Judge every row against the thresholds.
	type over struct {
		pct  float64
		what string
	}
	var overs []over
	judge := func(pct float64, what string) (warn, isOver bool) {
		warn = pct >= opts.WarnPercent
		isOver = opts.FailOverPercent > 0 && pct > opts.FailOverPercent
		if warn {
			r.Warnings++
		}
		if isOver {
			r.Over++
			overs = append(overs, over{pct, what})
		}
		return warn, isOver
	}
	storeWhat := "store: " + itoa(r.Store.Scopes) + " of " + itoa(r.Store.ScopeCapacity) + " scopes"
	if r.Store.PerShard {
		storeWhat = "fullest shard: " + itoa(r.Store.Scopes) + " of " + itoa(r.Store.ScopeCapacity) + " scope slots"
	}
	r.Store.Warn, r.Store.Over = judge(storePct, storeWhat)
	for i := range r.Scopes {
		s := &r.Scopes[i]
		s.Warn, s.Over = judge(s.pct, s.describe())
	}
	for i := range r.Workspaces {
		ws := &r.Workspaces[i]
		ws.Warn, ws.Over = judge(ws.pct, ws.describe())
	}
	for i := range r.Snapshots {
		sn := &r.Snapshots[i]
		if sn.what == "" {
			continue // no limit measured
		}
		sn.Warn, sn.Over = judge(sn.pct, sn.describe())
		if sn.Warn {
			sn.Warning = sn.what
		}
	}
	// A scope emptied by deletes (reservations left, no published version,
	// nothing broken) is not one of the store's scopes any more, as in
	// listings and verify; its row stays only while its capacity use
	// deserves a warning. It still counts against the scope capacity.
	r.Scopes = slices.DeleteFunc(r.Scopes, func(s ScopeUsage) bool {
		return s.Names == 0 && s.Problems == 0 && !s.Warn && s.Hash != wantHash
	})
	slices.SortStableFunc(overs, func(a, b over) int { return cmp.Compare(b.pct, a.pct) })
	for _, o := range overs {
		r.OverItems = append(r.OverItems, o.what)
	}

	slices.SortFunc(r.Scopes, func(a, b ScopeUsage) int {
		if c := cmp.Compare(b.pct, a.pct); c != 0 {
			return c
		}
		return strings.Compare(a.sortKey(), b.sortKey())
	})
	slices.SortFunc(r.Workspaces, func(a, b WorkspaceUsage) int {
		if c := cmp.Compare(b.pct, a.pct); c != 0 {
			return c
		}
		return strings.Compare(a.Dir, b.Dir)
	})
	slices.SortFunc(r.Snapshots, func(a, b SnapshotUsage) int {
		if c := cmp.Compare(b.pct, a.pct); c != 0 {
			return c
		}
		return strings.Compare(a.Scope.String(), b.Scope.String())
	})
	r.ScopesTotal, r.WorkspacesTotal, r.SnapshotsTotal = len(r.Scopes), len(r.Workspaces), len(r.Snapshots)
	return r, nil
}

// Top returns a copy of r that keeps only the n fullest scope rows and the
// n fullest workspace rows; n <= 0 keeps them all. Totals and counters
// still cover every row.
func (r *Report) Top(n int) *Report {
	c := *r
	if n > 0 {
		c.Scopes = r.Scopes[:min(n, len(r.Scopes))]
		c.Workspaces = r.Workspaces[:min(n, len(r.Workspaces))]
		c.Snapshots = r.Snapshots[:min(n, len(r.Snapshots))]
	}
	return &c
}

func itoa(n int) string { return strconv.Itoa(n) }

// sortKey orders scopes of equal usage: known scopes by their text, then
// unknown ones by hash.
func (s ScopeUsage) sortKey() string {
	if s.Scope != nil {
		return "0" + s.Scope.String()
	}
	return "1" + s.Hash
}

// Label returns the scope's text, or "scope <hash>" when it is unknown.
func (s ScopeUsage) Label() string {
	if s.Scope != nil {
		return s.Scope.String()
	}
	return "scope " + s.Hash
}

func (s ScopeUsage) describe() string {
	if s.BindingLimit == LimitReservations && s.FullestName != nil {
		name := s.FullestName.Name
		if name == "" {
			name = "name " + s.FullestName.Hash
		}
		return s.Label() + ": " + name + " has " + itoa(s.FullestName.Reservations) + " of " + itoa(s.FullestName.Capacity) + " reservations"
	}
	return s.Label() + ": " + itoa(s.NameSlots) + " of " + itoa(s.NameCapacity) + " name slots"
}

// Label returns the workspace's scope text, or its directory when the
// scope is unknown.
func (w WorkspaceUsage) Label() string {
	if w.Scope != nil {
		return w.Scope.String()
	}
	return "workspace " + w.Dir
}

func (w WorkspaceUsage) describe() string {
	if w.BindingLimit == LimitFiles {
		return w.Label() + ": " + itoa(w.Files) + " of " + itoa(w.MaxFiles) + " files"
	}
	return w.Label() + ": " + itoa64(w.Bytes) + " of " + itoa64(w.MaxBytes) + " bytes"
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// scopeRow summarises what Walk reported of one scope.
// NoCeilingsNote says that a layout keeps no lifetime ceilings.
func NoCeilingsNote(layout string) string {
	return layout + " keeps no lifetime ceilings: deleting frees what it deletes (and lets version numbers be handed out again), so no capacity is measured"
}

// onlyForeign reports whether a walk's scope holds nothing but objects that
// are not part of the layout (a driver reports those apart from scopes).
func onlyForeign(u artifacts.ScopeUsage) bool {
	if u.Known || len(u.Names) == 0 {
		return false
	}
	for _, n := range u.Names {
		if len(n.Records) > 0 {
			return false
		}
		for _, p := range n.Problems {
			if p.Code != artifacts.CodeForeign {
				return false
			}
		}
	}
	return true
}

// checkpointUsage fills row.Checkpoints for a session scope that holds
// versions of the incremental snapshot format, reading its latest
// manifest (see checkpoint.Checkpoints.Usage). A latest manifest that
// does not read leaves the live bytes unknown, and says so.
func checkpointUsage(ctx context.Context, st *artifacts.Store, u artifacts.ScopeUsage, row *ScopeUsage) error {
	if !checkpoint.HasCheckpoints(u) {
		return nil
	}
	c, err := checkpoint.New(checkpoint.Options{Store: st, Scope: u.Scope})
	if err != nil {
		return err
	}
	cu, err := c.Usage(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		switch artifacts.CodeOf(err) {
		case artifacts.CodeCorrupt, artifacts.CodeIO, artifacts.CodePermission, artifacts.CodeNotFound:
			cu.LiveBytes, cu.DeadBytes = 0, cu.PackBytes
			row.CheckpointsProblem = "the checkpoints do not read (" + artifacts.ReasonOf(err) + "): live bytes unknown, counted as dead; see agentstore fs verify"
		default:
			return err
		}
	}
	row.Checkpoints = &cu
	return nil
}

func scopeRow(u artifacts.ScopeUsage, caps artifacts.Capabilities) ScopeUsage {
	row := ScopeUsage{Hash: u.Hash, NameSlots: u.NameSlots, NameCapacity: caps.NameCapacity()}
	if u.Known {
		s := u.Scope
		row.Scope = &s
	}
	var fullest *artifacts.NameUsage
	var t artifacts.Tally
	for i := range u.Names {
		n := &u.Names[i]
		t.AddName(*n)
		if len(n.Records) > 0 {
			row.Names++
		}
		for _, rec := range n.Records {
			if !artifacts.PlausibleSize(rec.Size) {
				continue // counted as a problem by the tally
			}
			if row.Largest == nil || rec.Size > row.Largest.Size ||
				(rec.Size == row.Largest.Size && (rec.Name < row.Largest.Name || (rec.Name == row.Largest.Name && rec.Version < row.Largest.Version))) {
				row.Largest = &Largest{Name: rec.Name, Version: rec.Version, Size: rec.Size}
			}
		}
		if fullest == nil || n.Reservations > fullest.Reservations ||
			(n.Reservations == fullest.Reservations && n.Name < fullest.Name) {
			fullest = n
		}
	}
	row.Versions, row.Bytes, row.Problems, row.Unreadable = t.Versions, t.Bytes, t.Problems, t.Unreadable
	row.unreadableCode = t.UnreadableCode
	// Slots and directories both count against the ceiling.
	row.NameSlots = max(row.NameSlots, len(u.Names))
	namePct := percent(int64(row.NameSlots), int64(row.NameCapacity))
	row.BindingLimit, row.pct = LimitNameSlots, namePct
	if fullest != nil {
		capacity := caps.VersionCapacity()
		resPct := percent(int64(fullest.Reservations), int64(capacity))
		row.FullestName = &FullestName{Name: fullest.Name, Hash: fullest.Hash, Reservations: fullest.Reservations, Capacity: capacity, UsagePercent: round2(resPct)}
		if resPct > namePct {
			row.BindingLimit, row.pct = LimitReservations, resPct
		}
	}
	row.UsagePercent = round2(row.pct)
	return row
}

// countScopeSlots counts the store's scope slots: opts.ScopeSlots, then
// the store's driver (artifacts.ScopeSlotCounter); -1 when
// there is nothing to count.
func countScopeSlots(ctx context.Context, st *artifacts.Store, opts Options) (int, error) {
	if opts.ScopeSlots != nil {
		return opts.ScopeSlots(ctx)
	}
	n, err := st.ScopeSlots(ctx)
	if artifacts.CodeOf(err) == artifacts.CodeUnsupported {
		return -1, nil
	}
	return n, err
}

// workspaceRows lists the session directories of a scratch root and
// measures them against lim. Entries that are not directories, and the
// manager's temporary entries, are left out.
func workspaceRows(ctx context.Context, scratch string, only *artifacts.Scope, lim WorkspaceLimits, now func() time.Time) ([]WorkspaceUsage, error) {
	m, err := workspace.New(workspace.Options{Scratch: scratch, Now: now})
	if err != nil {
		return nil, err
	}
	defer m.Close()
	infos, err := m.ListWorkspaces(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]WorkspaceUsage, 0, len(infos))
	for _, in := range infos {
		if in.State == workspace.StateNotADirectory || in.Temporary {
			continue
		}
		row := WorkspaceUsage{
			Dir: in.Dir, State: string(in.State), Bytes: in.Bytes, Files: in.Files,
			MaxBytes: lim.MaxBytes, MaxFiles: lim.MaxFiles,
			LastAccess: in.LastAccess, Idle: in.Idle,
		}
		if s, ok := in.Scope(); ok {
			row.Scope = &s
		}
		if only != nil && (row.Scope == nil || !within(*row.Scope, *only)) {
			continue
		}
		bp := percent(row.Bytes, row.MaxBytes)
		fp := percent(int64(row.Files), int64(row.MaxFiles))
		row.BindingLimit, row.pct = LimitBytes, bp
		if fp > bp {
			row.BindingLimit, row.pct = LimitFiles, fp
		}
		row.UsagePercent = round2(row.pct)
		rows = append(rows, row)
	}
	return rows, nil
}

// within reports whether session scope s lies in scope sel: the same app,
// and the same user and session where sel has them.
func within(s, sel artifacts.Scope) bool {
	switch sel.Kind {
	case artifacts.KindApp:
		return s.App == sel.App
	case artifacts.KindUser:
		return s.App == sel.App && s.User == sel.User
	}
	return s == sel
}
