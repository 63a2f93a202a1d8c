// Package sweep removes idle per-session workspaces from a scratch root,
// safely enough to run from cron over tens of thousands of them.
//
// A sweep plans, then executes. The plan reads every entry of the scratch
// root through package workspace (Manager.Inspect): a directory whose index
// decodes and hashes to its name, idle longer than Options.Idle (now minus
// its last access; a last access in the future counts as now), is a
// candidate; anything else is kept or skipped, and every entry is reported
// with a reason. For each candidate the plan also takes a Fingerprint (the
// index's last access, file count, bytes, newest modification time and a
// hash of every entry).
//
// Executing removes a candidate only after its tree is safe in the store:
//
//  1. the directory is opened and locked (flock LOCK_EX|LOCK_NB on the
//     directory; a session holding a shared lock keeps it), and its
//     fingerprint must equal the plan's;
//  2. Manager.Snapshot puts it as a new version of workspace.zip, which is
//     then read back: Get of that version streamed through the store's
//     verifying Reader to its end, and the zip's central directory must
//     list exactly the files, sizes and directories of the tree;
//  3. the fingerprint must not have changed during the snapshot;
//  4. a marker (TombstonePrefix+DIR+"-"+TOKEN+MarkerSuffix) recording the
//     scope and the verified version is written and fsynced;
//  5. the directory is renamed to its tombstone (the same name without the
//     suffix) and the scratch root fsynced;
//  6. the tombstone is fingerprinted again: a writer holding the directory
//     open writes into the tombstone, so any change since step 3 removes
//     the marker and renames the tombstone back;
//  7. the tombstone is emptied, its index last, and removed (a writer that
//     shows up now is detected, see removeTree), then the marker.
//
// A sweep killed at any moment leaves every workspace either as its
// directory or as a verified snapshot. The next sweep finishes a tombstone
// whose marker records a verified version once it has checked that the
// version still exists and verifies; a tombstone without such a marker is
// renamed back when its name is free, and reported otherwise.
//
// Without a store, or with Options.Discard, candidates are removed without
// a snapshot, and only under a confirmed Plan (like "artifacts delete").
package sweep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/internal/pool"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// Decision is what the sweep did, or would do, with an entry.
type Decision string

// The decisions of a sweep.
const (
	// Removed: the workspace is gone; its tree is in the store as the
	// verified SnapshotVersion (or was discarded under a confirmed plan).
	Removed Decision = "removed"
	// WouldRemove: a dry run (or a discard awaiting confirmation) would
	// remove it.
	WouldRemove Decision = "would_remove"
	// Kept: left alone for an ordinary reason (not idle enough, in use,
	// --max-removals reached, a temporary entry).
	Kept Decision = "kept"
	// Skipped: left alone because it could not be swept safely: not a
	// workspace (no index, a bad or forged index, not a directory), touched
	// while being swept, or a store failure. Skipped entries make the
	// command exit with status 3.
	Skipped Decision = "skipped"
	// Cleaned: debris of a hydration that was killed (a downloaded
	// archive, a half-extracted tree) was removed after the grace period.
	Cleaned Decision = "cleaned"
)

// CodeUnsnapshottable is Item.Code of a workspace kept because a snapshot
// cannot hold some of its entries (symbolic links, FIFOs, sockets,
// devices): removing it would lose them.
const CodeUnsnapshottable = "unsnapshottable"

// CodeUnboundApp is Item.Code of a directory under the name earlier
// versions gave a session (workspace.LegacyDirName) whose app nothing
// confirms: the sweep never removes it (Skipped). One the store confirms
// is kept by a dry run and migrated by a real sweep.
const CodeUnboundApp = "unbound_app"

// MinIdle is the smallest --idle the command line accepts without
// --force: a shorter one sweeps sessions in the middle of their work.
const MinIdle = 5 * time.Minute

// DefaultDebrisGrace is how old hydration debris must be before a sweep
// removes it (Options.DebrisGrace).
const DefaultDebrisGrace = time.Hour

// LostAndFound is the directory fsck keeps at the top of a file system;
// the sweep never touches it.
const LostAndFound = "lost+found"

// Item is the sweep's report on one entry of the scratch root.
type Item struct {
	// Dir is the entry's name in the scratch root (a tombstone's name for
	// what an interrupted sweep left).
	Dir string
	// Scope is the session scope, nil when the entry has no good index.
	Scope *artifacts.Scope
	// Decision and Reason say what was done and why.
	Decision Decision
	Reason   string
	// Code classifies a skipped item where it helps: CodeUnsnapshottable.
	Code string
	// Omitted lists what a snapshot cannot hold, for an unsnapshottable
	// workspace.
	Omitted []workspace.Omission
	// HasSnapshot is true when SnapshotVersion is set: the verified
	// snapshot of a removed workspace, or the version a dry run expects to
	// make (about: another writer could take it first).
	HasSnapshot     bool
	SnapshotVersion int64
	// Bytes and Files measure the tree; LastAccess and Idle come from its
	// index (or the entry's modification time when it has none).
	Bytes      int64
	Files      int
	LastAccess time.Time
	Idle       time.Duration
}

// Report is the outcome of a sweep.
type Report struct {
	// Scratch is the absolute scratch root.
	Scratch string
	// DryRun is true when nothing was changed on purpose (Options.DryRun).
	DryRun bool
	// Discard is true when candidates are removed without a snapshot.
	Discard bool
	// Items has one item per entry of the scratch root (the sweep's own
	// lock and temporary files left out), sorted by Dir.
	Items []Item
	// Removed counts the entries removed (in a dry run: that would be).
	Removed int
	// Kept counts the entries left in place, the skipped ones included.
	Kept int
	// Skipped counts the entries that could not be swept safely.
	Skipped int
	// Cleaned counts the hydration debris removed (in a dry run: that
	// would be); they are neither removed nor kept.
	Cleaned int
	// BytesRemoved totals Bytes over the removed entries.
	BytesRemoved int64
	// Plan is the discard plan (Discard only).
	Plan *Plan
}

// Problems returns the number of entries that could not be swept safely;
// the command line exits with status 3 when it is not zero.
func (r *Report) Problems() int { return r.Skipped }

// Options configure a sweep.
type Options struct {
	// Scratch is the scratch root. Required.
	Scratch string
	// Store receives the snapshots; nil when none is configured (then only
	// Discard can remove anything).
	Store *artifacts.Store
	// Idle is the threshold: a workspace idle longer than this is removed.
	Idle time.Duration
	// DryRun plans and reports, changing nothing.
	DryRun bool
	// MaxRemovals stops after this many removals (0: no limit).
	MaxRemovals int
	// Discard removes candidates without a snapshot. It is implied when
	// Store is nil, and it needs Confirm.
	Discard bool
	// Confirm is the confirmation of a discard plan; nil for none (a
	// discard then returns its plan with a *ConfirmationError).
	Confirm *Confirmation
	// Exclude lists path.Match patterns of scratch-root entry names the
	// sweep leaves alone (reported as kept, never inspected);
	// LostAndFound is always left alone.
	Exclude []string
	// DebrisGrace is how long hydration debris is left alone, in case the
	// hydration is still running (default DefaultDebrisGrace).
	DebrisGrace time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Workers is how many workspaces are planned and swept at once
	// (default 4).
	Workers int
	// BeforeExecute, when set, runs after planning and before the first
	// change (a lock refresh); its error stops the sweep.
	BeforeExecute func() error
	// Progress, when set, is called after each workspace is planned and
	// after each is swept, with the phase ("plan" or "sweep") and counts.
	Progress func(phase string, done, total int)

	// hook, in tests, runs after each step of a removal; an error stops the
	// removal on the spot, as a kill would.
	hook func(step, dir string) error
}

type sweeper struct {
	opts    Options
	now     time.Time
	scratch string
	root    *os.Root
	inspect *workspace.Manager // without a store: Inspect does no store lookups
	snap    *workspace.Manager // with the store; nil without one
	migrate bool               // a real sweep with a store: legacy directories the store confirms are migrated
	// anyIdle makes every workspace a candidate, however recently used
	// (ws delete: the session has ended).
	anyIdle bool
	// planID is the confirmed plan recorded in a discard's marker when
	// the confirmation is not a sweep's (ws delete).
	planID string
}

// entry is one planned entry.
type entry struct {
	item  Item
	cand  bool
	scope artifacts.Scope
	fp    Fingerprint
}

// Run sweeps the scratch root: it recovers what an interrupted sweep left
// (unless DryRun), plans, and removes the idle workspaces. The caller holds
// the scratch root's lock (LockFile) unless DryRun. A discard without a
// matching confirmation returns the report (with its Plan) and a
// *ConfirmationError, having changed nothing.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Idle < 0 {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "sweep", nil, "idle %s is negative", opts.Idle)
	}
	for _, p := range opts.Exclude {
		if _, err := path.Match(p, ""); err != nil {
			return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "sweep", nil, "exclude pattern %q is malformed", p)
		}
	}
	if opts.DebrisGrace <= 0 {
		opts.DebrisGrace = DefaultDebrisGrace
	}
	if opts.Store == nil {
		opts.Discard = true
	}
	s := &sweeper{opts: opts, now: opts.Now()}
	var err error
	if s.inspect, err = workspace.New(workspace.Options{Scratch: opts.Scratch, Now: func() time.Time { return s.now }}); err != nil {
		return nil, err
	}
	defer s.inspect.Close()
	s.scratch = s.inspect.Scratch()
	if opts.Store != nil && !opts.Discard {
		if s.snap, err = workspace.New(workspace.Options{Scratch: opts.Scratch, Store: opts.Store, Now: opts.Now}); err != nil {
			return nil, err
		}
		defer s.snap.Close()
	}
	if s.root, err = os.OpenRoot(s.scratch); err != nil {
		return nil, artifacts.Errorf(artifacts.CodeIO, "sweep", err, "%s", s.scratch)
	}
	defer s.root.Close()

	rep := &Report{Scratch: s.scratch, DryRun: opts.DryRun, Discard: opts.Discard}
	names, aside, err := s.list()
	if err != nil {
		return nil, err
	}

	// Discard: the plan must be confirmed before anything changes.
	var entries []*entry
	if opts.Discard {
		if entries, err = s.plan(ctx, names); err != nil {
			return nil, err
		}
		plan, err := s.discardPlan(entries)
		if err != nil {
			return nil, err
		}
		rep.Plan = &plan
		if !opts.DryRun {
			recov := append(s.recover(ctx, names, true), aside...)
			recov = append(recov, s.debris(ctx, true)...)
			var cerr error
			if opts.Confirm == nil {
				cerr = &ConfirmationError{Msg: fmt.Sprintf("confirmation required: nothing was removed; %s would be discarded without a snapshot; confirm plan %s", plural(len(plan.Items), "workspace", "workspaces"), plan.PlanID)}
			} else {
				cerr = opts.Confirm.Match(plan)
			}
			if cerr != nil {
				s.finishDry(ctx, rep, entries, recov)
				return rep, cerr
			}
		}
	}
	if opts.DryRun {
		recov := append(s.recover(ctx, names, true), aside...)
		recov = append(recov, s.debris(ctx, true)...)
		if entries == nil {
			if entries, err = s.plan(ctx, names); err != nil {
				return nil, err
			}
		}
		s.finishDry(ctx, rep, entries, recov)
		return rep, nil
	}
	if opts.BeforeExecute != nil {
		if err := opts.BeforeExecute(); err != nil {
			return nil, err
		}
	}
	recov := append(s.recover(ctx, names, false), s.debris(ctx, false)...)
	if !opts.Discard {
		// Recovery may have restored directories: list again.
		if names, aside, err = s.list(); err != nil {
			return nil, err
		}
		s.migrate = true
		if entries, err = s.plan(ctx, names); err != nil {
			return nil, err
		}
	}
	recov = append(recov, aside...)
	if err := s.execute(ctx, entries); err != nil {
		return nil, err
	}
	s.tally(rep, entries, recov)
	return rep, nil
}

// own reports whether name is one of the sweep's own entries.
func own(name string) bool {
	return name == LockFile || strings.HasPrefix(name, TombstonePrefix) || strings.HasPrefix(name, tempPrefix)
}

// IsOwn reports whether name, an entry of the scratch root, is the
// sweep's own: its lock file, a tombstone or its marker, or a temporary
// file. Listings hide them unless asked.
func IsOwn(name string) bool { return own(name) }

// list returns the sorted names of the scratch root to sweep (hydration
// debris, the sweep's own entries and excluded names left out) and an
// item for each excluded name.
func (s *sweeper) list() (names []string, aside []Item, err error) {
	all, err := listNames(s.root)
	if err != nil {
		return nil, nil, artifacts.Errorf(artifacts.CodeIO, "sweep", err, "listing %s", s.scratch)
	}
	slices.Sort(all)
	for _, n := range all {
		if workspace.IsDebris(n) {
			continue
		}
		if n == LostAndFound {
			aside = append(aside, Item{Dir: n, Decision: Kept, Reason: "the file system's lost+found directory; never touched"})
			continue
		}
		if i := slices.IndexFunc(s.opts.Exclude, func(p string) bool { ok, _ := path.Match(p, n); return ok }); i >= 0 {
			aside = append(aside, Item{Dir: n, Decision: Kept, Reason: fmt.Sprintf("excluded by the pattern %q; never touched", s.opts.Exclude[i])})
			continue
		}
		names = append(names, n)
	}
	return names, aside, nil
}

// debris cleans (or, with dry, reports) the debris of killed hydrations,
// one item each.
func (s *sweeper) debris(ctx context.Context, dry bool) []Item {
	ds, err := s.inspect.CleanDebris(ctx, s.opts.DebrisGrace, dry)
	items := make([]Item, 0, len(ds)+1)
	for _, d := range ds {
		it := Item{Dir: d.Dir, Bytes: d.Bytes, Files: d.Files, LastAccess: d.ModTime, Idle: max(s.now.Sub(d.ModTime), 0)}
		it.Dir = d.Name
		what := "a snapshot archive downloaded by a hydration"
		if d.Kind == workspace.DebrisExtraction {
			what = "a tree extracted or set aside by a hydration"
		}
		switch {
		case d.InProgress:
			it.Decision, it.Reason = Kept, fmt.Sprintf("%s, still running or changed within %s; left alone", what, FormatIdle(s.opts.DebrisGrace))
		case d.Err != nil:
			it.Decision, it.Reason = Skipped, fmt.Sprintf("%s that was interrupted; removing it failed: %v", what, d.Err)
		case dry:
			it.Decision, it.Reason = Cleaned, fmt.Sprintf("%s that was interrupted (unchanged for %s); would be removed", what, FormatIdle(it.Idle))
		default:
			it.Decision, it.Reason = Cleaned, fmt.Sprintf("%s that was interrupted (unchanged for %s); removed", what, FormatIdle(it.Idle))
		}
		items = append(items, it)
	}
	if err != nil {
		items = append(items, Item{Dir: ".", Decision: Skipped, Reason: "looking for hydration debris failed: " + err.Error()})
	}
	return items
}

// FormatIdle formats a duration compactly, the one format of every
// command's output: 45s, 12m30s, 5h3m, 3d4h, 205d18h.
func FormatIdle(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		days := d / (24 * time.Hour)
		return fmt.Sprintf("%dd%dh", days, (d-days*24*time.Hour)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, (d%time.Hour)/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%ds", d/time.Minute, (d%time.Minute)/time.Second)
	default:
		return fmt.Sprintf("%ds", d/time.Second)
	}
}

// plan inspects every entry (but the sweep's own) with opts.Workers
// workers and returns them sorted by name.
func (s *sweeper) plan(ctx context.Context, names []string) ([]*entry, error) {
	var todo []string
	for _, n := range names {
		if !own(n) {
			todo = append(todo, n)
		}
	}
	out := make([]*entry, len(todo))
	var mu sync.Mutex
	done := 0
	err := parallel(ctx, s.opts.Workers, len(todo), func(i int) {
		out[i] = s.planOne(ctx, todo[i])
		if s.opts.Progress != nil {
			mu.Lock()
			done++
			s.opts.Progress("plan", done, len(todo))
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, err
	}
	kept := out[:0]
	for _, e := range out {
		if e != nil {
			kept = append(kept, e)
		}
	}
	return kept, nil
}

// planOne inspects one entry; nil when it vanished meanwhile.
func (s *sweeper) planOne(ctx context.Context, name string) *entry {
	info, err := s.inspect.Inspect(ctx, name)
	if errors.Is(err, fs.ErrNotExist) || artifacts.IsNotFound(err) {
		return nil
	}
	e := &entry{item: Item{Dir: name}}
	it := &e.item
	if err != nil {
		it.Decision, it.Reason = Skipped, "cannot inspect: "+err.Error()
		return e
	}
	it.Bytes, it.Files, it.LastAccess, it.Idle = info.Bytes, info.Files, info.LastAccess, info.Idle
	if sc, ok := info.Scope(); ok {
		it.Scope = &sc
		e.scope = sc
	}
	switch {
	case info.Temporary:
		it.Decision, it.Reason = Kept, "temporary entry of the workspace manager (a hydration in progress, or left by a crash); left alone"
		return e
	case info.State == workspace.StateNoIndex:
		it.Decision, it.Reason = Skipped, "no index record: not a workspace of this manager; never removed"
		return e
	case info.State == workspace.StateBadIndex:
		it.Decision, it.Reason = Skipped, "bad index ("+info.Problem+"); never removed"
		return e
	case info.State == workspace.StateLegacy:
		s.legacy(ctx, info, it)
		return e
	case info.State == workspace.StateSymlink:
		it.Decision, it.Reason = Skipped, "a symbolic link (never followed); never removed"
		return e
	case info.State != workspace.StateOK:
		it.Decision, it.Reason = Skipped, "not a directory: "+info.Problem+"; never removed"
		return e
	}
	if !s.anyIdle && info.Idle <= s.opts.Idle {
		it.Decision, it.Reason = Kept, fmt.Sprintf("idle for %s, not longer than --idle %s", FormatIdle(info.Idle), FormatIdle(s.opts.Idle))
		return e
	}
	root, err := s.root.OpenRoot(name)
	if err != nil {
		it.Decision, it.Reason = Skipped, "cannot open: "+err.Error()
		return e
	}
	defer root.Close()
	fp, err := fingerprint(root, name, false)
	if err != nil {
		it.Decision, it.Reason = Skipped, "cannot measure: "+err.Error()
		return e
	}
	e.fp = fp
	it.Bytes, it.Files, it.LastAccess = fp.Bytes, fp.Files, fp.LastUse().UTC()
	it.Idle = max(s.now.Sub(it.LastAccess), 0)
	if !s.anyIdle && it.Idle <= s.opts.Idle {
		it.Decision, it.Reason = Kept, fmt.Sprintf("idle for %s, not longer than --idle %s (touched while planning)", FormatIdle(it.Idle), FormatIdle(s.opts.Idle))
		return e
	}
	if len(fp.Omitted) > 0 && !s.opts.Discard {
		unsnapshottable(it, fp.Omitted, "")
		return e
	}
	e.cand = true
	return e
}

// legacy decides on a directory from before app-bound names: a real sweep
// with a store migrates it when the store confirms its app (it is swept
// under its new name from the next run); a dry run says it would; any
// other is kept away from and reported.
func (s *sweeper) legacy(ctx context.Context, info workspace.Info, it *Item) {
	it.Code, it.Decision, it.Reason = CodeUnboundApp, Skipped, info.Problem
	if s.snap == nil {
		return
	}
	// Inspect again with the store, which confirms the app or says why not.
	info, err := s.snap.Inspect(ctx, info.Dir)
	switch {
	case err != nil:
		it.Reason = "cannot inspect: " + err.Error()
		return
	case info.State != workspace.StateLegacy:
		it.Decision, it.Code, it.Reason = Kept, "", "changed while being swept (now "+string(info.State)+"); not swept this run"
		return
	}
	it.Reason = info.Problem
	if info.LegacyConfirmed == 0 {
		return
	}
	if !s.migrate {
		it.Decision = Kept
		return
	}
	res, err := s.snap.Migrate(ctx, info.Dir)
	if err != nil {
		it.Reason = "a directory from before app-bound names; migrating it failed: " + err.Error()
		return
	}
	it.Code, it.Scope = "", &res.Scope
	it.Decision, it.Reason = Kept, fmt.Sprintf("a directory from before app-bound names: its app is confirmed by snapshot v%d, so it was moved to %s; later sweeps treat it as any workspace", res.Version, res.To)
}

// unsnapshottable keeps a workspace whose snapshot would leave entries
// out: removing it would lose them.
func unsnapshottable(it *Item, omitted []workspace.Omission, extra string) {
	var b strings.Builder
	for i, o := range omitted {
		if i == 5 {
			fmt.Fprintf(&b, ", and %d more", len(omitted)-5)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q (%s)", o.Path, o.Kind)
	}
	noun := "entries"
	if len(omitted) == 1 {
		noun = "entry"
	}
	it.Decision, it.Code, it.Omitted = Skipped, CodeUnsnapshottable, omitted
	it.Reason = fmt.Sprintf("unsnapshottable: a snapshot cannot hold %d %s: %s%s; kept (remove or replace them, or discard the workspace under a confirmed plan)", len(omitted), noun, b.String(), extra)
}

// parallel runs work(0..n-1) on up to workers goroutines, stopping early
// when ctx is done.
func parallel(ctx context.Context, workers, n int, work func(i int)) error {
	if err := pool.Each(ctx, workers, pool.Indexes(n), func(i int) error { work(i); return nil }); err != nil {
		return artifacts.CheckContext(ctx, "sweep")
	}
	return nil
}

// candidates returns the entries to remove, at most MaxRemovals when
// counting is done at plan time (discard plans and dry runs).
func (s *sweeper) candidates(entries []*entry, limit bool) []*entry {
	var out []*entry
	for _, e := range entries {
		if !e.cand {
			continue
		}
		if limit && s.opts.MaxRemovals > 0 && len(out) >= s.opts.MaxRemovals {
			e.cand = false
			e.item.Decision, e.item.Reason = Kept, fmt.Sprintf("idle for %s, but --max-removals %d reached", FormatIdle(e.item.Idle), s.opts.MaxRemovals)
			continue
		}
		out = append(out, e)
	}
	return out
}

func (s *sweeper) discardPlan(entries []*entry) (Plan, error) {
	body := PlanBody{Action: ActionDiscard, Scratch: s.scratch, Idle: s.opts.Idle.String(), Items: []PlanItem{}}
	for _, e := range s.candidates(entries, true) {
		body.Items = append(body.Items, PlanItem{
			Dir: e.item.Dir, Scope: e.scope, Bytes: e.fp.Bytes, Files: e.fp.Files,
			LastAccess:  e.fp.LastAccess.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
			Fingerprint: e.fp.Hex(),
		})
	}
	return NewPlan(body)
}

// finishDry fills in the decisions of a dry run (or of a discard awaiting
// confirmation) and the counters.
func (s *sweeper) finishDry(ctx context.Context, rep *Report, entries []*entry, recov []Item) {
	for _, e := range s.candidates(entries, true) {
		it := &e.item
		it.Decision = WouldRemove
		base := fmt.Sprintf("idle for %s (last access %s)", FormatIdle(it.Idle), it.LastAccess.UTC().Format(time.RFC3339))
		if s.opts.Discard {
			id := ""
			if rep.Plan != nil {
				id = " " + rep.Plan.PlanID
			}
			it.Reason = base + "; would discard without a snapshot under plan" + id
			continue
		}
		rec, err := s.opts.Store.Stat(ctx, e.scope, workspace.SnapshotName, artifacts.Latest)
		switch {
		case err == nil:
			it.HasSnapshot, it.SnapshotVersion = true, rec.Version+1
		case artifacts.IsNotFound(err):
			it.HasSnapshot, it.SnapshotVersion = true, s.opts.Store.Capabilities().FirstVersion
		default:
			it.Decision, it.Reason = Skipped, "store failure: cannot look up its snapshots: "+err.Error()
			continue
		}
		it.Reason = fmt.Sprintf("%s; would snapshot as about version %d, verify it, then remove", base, it.SnapshotVersion)
	}
	s.tally(rep, entries, recov)
}

// tally sorts the items into the report and counts them.
func (s *sweeper) tally(rep *Report, entries []*entry, recov []Item) {
	rep.Items = make([]Item, 0, len(entries)+len(recov))
	for _, e := range entries {
		rep.Items = append(rep.Items, e.item)
	}
	rep.Items = append(rep.Items, recov...)
	slices.SortFunc(rep.Items, func(a, b Item) int { return strings.Compare(a.Dir, b.Dir) })
	for _, it := range rep.Items {
		switch it.Decision {
		case Cleaned:
			rep.Cleaned++
		case Removed, WouldRemove:
			rep.Removed++
			rep.BytesRemoved += it.Bytes
		case Skipped:
			rep.Skipped++
			rep.Kept++
		default:
			rep.Kept++
		}
	}
}

// plural says "1 file" or "2 files".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// execute removes the candidates, at most MaxRemovals of them (a failed
// removal makes room for the next candidate).
func (s *sweeper) execute(ctx context.Context, entries []*entry) error {
	cands := s.candidates(entries, s.opts.Discard)
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		next     int
		removed  int
		inflight int
		swept    int
	)
	limit := s.opts.MaxRemovals
	if s.opts.Discard {
		limit = 0 // the plan already holds at most MaxRemovals
	}
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		for {
			if next >= len(cands) || ctx.Err() != nil {
				return -1
			}
			if limit > 0 && removed+inflight >= limit {
				if removed >= limit {
					return -1
				}
				cond.Wait()
				continue
			}
			next++
			inflight++
			return next - 1
		}
	}
	var wg sync.WaitGroup
	for range min(s.opts.Workers, max(len(cands), 1)) {
		wg.Go(func() {
			for {
				i := take()
				if i < 0 {
					return
				}
				e := cands[i]
				s.removeOne(ctx, e)
				mu.Lock()
				inflight--
				swept++
				if e.item.Decision == Removed {
					removed++
				}
				if s.opts.Progress != nil {
					s.opts.Progress("sweep", swept, len(cands))
				}
				cond.Broadcast()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, e := range cands[next:] {
		it := &e.item
		if ctx.Err() != nil {
			it.Decision, it.Reason = Kept, "idle, but the sweep was interrupted: "+context.Cause(ctx).Error()
			continue
		}
		it.Decision, it.Reason = Kept, fmt.Sprintf("idle for %s, but --max-removals %d reached", FormatIdle(it.Idle), s.opts.MaxRemovals)
	}
	return artifacts.CheckContext(ctx, "sweep")
}

// errHook stops a removal in tests.
var errHook = errors.New("stopped by the test hook")

func (s *sweeper) step(name, dir string) bool {
	return s.opts.hook != nil && s.opts.hook(name, dir) != nil
}

// stillThere reports whether name in the scratch root is the directory fp
// describes.
func (s *sweeper) stillThere(name string, fp Fingerprint) bool {
	fi, err := s.root.Lstat(name)
	if err != nil || !fi.IsDir() {
		return false
	}
	return osutil.Device(fi) == fp.Dev && osutil.Inode(fi) == fp.Ino
}

// removeOne removes one candidate following the package's protocol and
// sets its item's decision.
func (s *sweeper) removeOne(ctx context.Context, e *entry) {
	it := &e.item
	dir := it.Dir
	idle := fmt.Sprintf("idle for %s", FormatIdle(it.Idle))
	if s.anyIdle {
		idle = fmt.Sprintf("the session has ended (idle for %s)", FormatIdle(it.Idle))
	}
	skip := func(format string, args ...any) {
		it.Decision, it.Reason = Skipped, fmt.Sprintf(format, args...)
	}
	if err := artifacts.CheckContext(ctx, "sweep"); err != nil {
		it.Decision, it.Reason = Kept, "idle, but the sweep was interrupted: "+err.Error()
		return
	}
	root, err := s.root.OpenRoot(dir)
	if err != nil {
		skip("cannot open: %v", err)
		return
	}
	defer root.Close()
	lk, err := root.Open(".")
	if err != nil {
		skip("cannot open: %v", err)
		return
	}
	defer lk.Close()
	if held, err := osutil.TryLockExclusive(lk); err != nil {
		skip("cannot lock: %v", err)
		return
	} else if !held {
		it.Decision, it.Reason = Kept, idle+", but a live session holds its lock"
		return
	}
	fp1, err := fingerprint(root, dir, true)
	if err != nil {
		skip("cannot measure: %v", err)
		return
	}
	if !fp1.Same(e.fp) || !s.stillThere(dir, fp1) {
		skip("touched since the plan (%s); not removed this run", describeChange(e.fp, fp1))
		return
	}
	if s.step("fingerprinted", dir) {
		return
	}
	unchanged := false
	m := marker{Dir: dir, Scope: e.scope, Created: s.opts.Now().UTC(),
		SnapFiles: fp1.SnapFiles, SnapDirs: fp1.SnapDirs, SnapBytes: fp1.SnapBytes, SnapList: fmt.Sprintf("%x", fp1.SnapList), SnapContent: fmt.Sprintf("%x", fp1.Content)}
	fp2 := fp1
	if s.opts.Discard {
		m.Mode = modeDiscard
		m.PlanID = s.planID
		if s.opts.Confirm != nil {
			m.PlanID = s.opts.Confirm.PlanID
		}
	} else {
		res, err := s.snap.Snapshot(ctx, e.scope, workspace.SnapshotOptions{})
		if err != nil {
			if now, ferr := fingerprint(root, dir, true); ferr == nil && !now.SameContent(fp1) {
				skip("touched during the snapshot (%s); not removed this run", describeChange(fp1, now))
				return
			}
			skip("store failure: snapshot: %v; kept", err)
			return
		}
		it.HasSnapshot, it.SnapshotVersion = true, res.Version
		if len(res.Omitted) > 0 {
			unsnapshottable(it, res.Omitted, fmt.Sprintf(" (v%d holds the rest)", res.Version))
			return
		}
		unchanged = res.Unchanged
		if s.step("snapshotted", dir) {
			return
		}
		rec, err := verify(ctx, s.opts.Store, s.root, e.scope, res.Version, res.Record.Digest, summaryOf(fp1))
		if err != nil {
			if now, ferr := fingerprint(root, dir, true); ferr == nil && !now.SameContent(fp1) {
				skip("touched during the snapshot (%s); not removed this run (v%d stays in the store)", describeChange(fp1, now), res.Version)
				return
			}
			skip("store failure: snapshot v%d does not verify: %v; kept", res.Version, err)
			return
		}
		if s.step("verified", dir) {
			return
		}
		if fp2, err = fingerprint(root, dir, true); err != nil {
			skip("cannot measure: %v", err)
			return
		}
		if !fp2.SameContent(fp1) || !s.stillThere(dir, fp1) {
			skip("touched during the snapshot (%s); not removed this run (v%d stays in the store)", describeChange(fp1, fp2), res.Version)
			return
		}
		m.Mode, m.Version, m.Digest, m.Token, m.Size = modeSnapshot, rec.Version, rec.Digest, rec.Token, rec.Size
	}
	tomb := TombstonePrefix + dir + "-" + token()
	mark := tomb + MarkerSuffix
	if err := writeMarker(s.root, mark, m); err != nil {
		skip("cannot write the marker %s: %v; kept", mark, err)
		return
	}
	if s.step("marked", dir) {
		return
	}
	if err := s.root.Rename(dir, tomb); err != nil {
		_ = removeMarker(s.root, mark)
		skip("cannot rename to %s: %v; kept", tomb, err)
		return
	}
	if err := syncRoot(s.root); err != nil {
		skip("cannot sync the scratch root after renaming to %s: %v; the next sweep finishes it", tomb, err)
		return
	}
	if s.step("renamed", dir) {
		return
	}
	fp3, err := fingerprint(root, dir, true)
	if err == nil && (!fp3.Same(fp2) || !s.stillThere(tomb, fp2)) {
		err = errors.New(describeChange(fp2, fp3))
	}
	if err != nil {
		// A writer holding the directory open wrote into the tombstone.
		it.Decision, it.Reason = Skipped, s.restore(tomb, mark, dir, "touched during the sweep ("+err.Error()+")")
		return
	}
	if s.step("checked", dir) {
		return
	}
	if err := removeTree(s.root, root, tomb, fp3); err != nil {
		// Whatever went wrong, a writer may be behind it: never let a
		// later sweep finish this tombstone blindly.
		if !errors.Is(err, errConflict) {
			err = fmt.Errorf("%w? removing failed: %v", errConflict, err)
		}
		m.Mode, m.Reason = modeConflict, err.Error()
		_ = writeMarker(s.root, mark, m)
		skip("%v: the tombstone %s is kept for an operator (its tree as it was is snapshot v%d); the sweep will not touch it again", err, tomb, m.Version)
		return
	}
	if s.step("emptied", dir) {
		return
	}
	if err := removeMarker(s.root, mark); err != nil {
		skip("removed, but the marker %s could not be removed: %v", mark, err)
		return
	}
	it.Decision = Removed
	if s.opts.Discard {
		it.Reason = fmt.Sprintf("%s; discarded without a snapshot under plan %s", idle, m.PlanID)
	} else {
		snap := fmt.Sprintf("snapshot v%d", m.Version)
		if unchanged {
			snap = fmt.Sprintf("unchanged since snapshot v%d, which", m.Version)
		}
		it.Reason = fmt.Sprintf("%s; %s verified (%s, %s), then removed", idle, snap, plural(m.SnapFiles, "file", "files"), plural(int(m.SnapBytes), "byte", "bytes"))
	}
}

// restore renames a tombstone back to dir after removing its marker, and
// returns the reason to report.
func (s *sweeper) restore(tomb, mark, dir, why string) string {
	if err := removeMarker(s.root, mark); err != nil {
		return fmt.Sprintf("%s; its marker %s could not be removed (%v): the tombstone %s is kept for an operator", why, mark, err, tomb)
	}
	if _, err := s.root.Lstat(dir); err == nil {
		return fmt.Sprintf("%s; %s exists again, so the tombstone %s is kept: merge it by hand", why, dir, tomb)
	}
	if err := s.root.Rename(tomb, dir); err != nil {
		return fmt.Sprintf("%s; renaming the tombstone %s back failed (%v): the next sweep restores it", why, tomb, err)
	}
	_ = syncRoot(s.root)
	return why + "; restored, not removed this run"
}
