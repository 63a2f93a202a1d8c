package artifacts

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentstore/agentstore/internal/shell"
)

// DefaultRepairGrace is the grace period of a repair: staged files and
// orphan payloads younger than this are left alone.
const DefaultRepairGrace = 5 * time.Minute

// NoRepairGrace, as RepairOptions.Grace, removes staged files and orphan
// payloads of any age. It is not safe while writers are active.
const NoRepairGrace time.Duration = -1

// Reasons a repair gives for its removals.
const (
	// RepairReasonStaged is a staged payload or record of a write that was
	// interrupted.
	RepairReasonStaged = "staged file of an interrupted write"
	// RepairReasonOrphan is a payload whose record was never published.
	RepairReasonOrphan = "payload without a record (its write never published)"
)

// Repairer is implemented by drivers that can clean up what interrupted
// writers leave in their layout. Each driver ships its own planner behind
// this one shape: PlanRepair classifies (reading, never changing), and
// the plan's Execute removes what it planned, checking each item again
// right before its removal. Both return a RepairReport.
type Repairer interface {
	// PlanRepair scans the store and returns what a repair would remove.
	// A scan that passes opts.Limit returns a *RepairLimitError and no
	// plan.
	PlanRepair(ctx context.Context, opts RepairOptions) (RepairPlan, error)
}

// RepairPlan is a planned repair.
type RepairPlan interface {
	// Report is what the plan found and would remove: the report of a
	// dry run (DryRun true, RemovedItems the planned removals).
	Report() RepairReport
	// Execute removes the planned items, skipping (in SkippedItems) each
	// that changed, vanished or was published since it was classified,
	// and returns the report of the run. Execute runs at most once.
	Execute(ctx context.Context) (RepairReport, error)
}

// NewRepairPlan returns the RepairPlan a driver's planner found: found is
// the report of its scan (counters and corrupt items), planned the items
// it would remove, and exec removes them, appending to the report's
// RemovedItems and SkippedItems (which start empty) and setting Removed.
// Execute runs exec at most once.
func NewRepairPlan(found RepairReport, planned []RepairItem, exec func(ctx context.Context, rep *RepairReport) error) RepairPlan {
	return &repairPlan{found: found, planned: planned, exec: exec}
}

type repairPlan struct {
	found   RepairReport
	planned []RepairItem
	exec    func(context.Context, *RepairReport) error
	mu      sync.Mutex
	done    bool
}

func (p *repairPlan) Report() RepairReport { return p.found.AsDryRun(p.planned) }

func (p *repairPlan) Execute(ctx context.Context) (RepairReport, error) {
	rep := p.found
	rep.RemovedItems, rep.SkippedItems = []RepairItem{}, []RepairItem{}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return rep, Errorf(CodeConflict, "repair", nil, "the plan was already executed")
	}
	p.done = true
	err := p.exec(ctx, &rep)
	return rep, err
}

// RepairOptions configure a repair plan. The zero value gives the
// layout's defaults.
type RepairOptions struct {
	// Grace: files younger than this are left alone. Zero means
	// DefaultRepairGrace; NoRepairGrace (any negative value) means none.
	Grace time.Duration
	// Limit stops the scan with a *RepairLimitError once more files than
	// this were scanned, before anything is removed. Zero means no limit.
	Limit int64
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Workers is the number of directories read at once, where the
	// layout reads directories (default 4*GOMAXPROCS, at least 4).
	Workers int
	// Progress, when set, is called now and then with the number of files
	// or objects scanned so far, from any goroutine.
	Progress func(scanned int64)
	// StoreArg is the --store value put into the next commands of corrupt
	// items (default: the store's root or URI).
	StoreArg string
}

// Normalized returns o with its defaults filled in: Now, Grace, and
// StoreArg (root).
func (o RepairOptions) Normalized(root string) RepairOptions {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Grace == 0 {
		o.Grace = DefaultRepairGrace
	}
	if o.StoreArg == "" {
		o.StoreArg = root
	}
	return o
}

// RepairItem is a file or object removed (or, in a dry run, to be
// removed), or skipped.
type RepairItem struct {
	// Path is the file, or the full object name.
	Path string `json:"path"`
	// Reason says why.
	Reason string `json:"reason"`
	// Age is how old the file was when it was classified.
	Age time.Duration `json:"-"`
	// AgeSeconds is Age in seconds, for JSON.
	AgeSeconds float64 `json:"age_seconds"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Scope and Name name the artifact the file belongs to when the
	// layout's paths say it (google-adk-file); nil and empty otherwise.
	Scope *Scope `json:"scope,omitempty"`
	Name  string `json:"name,omitempty"`
}

// NewRepairItem returns the item of a file of the given age and size.
func NewRepairItem(path, reason string, age time.Duration, size int64) RepairItem {
	return RepairItem{Path: path, Reason: reason, Age: age, AgeSeconds: age.Round(time.Millisecond).Seconds(), Size: size}
}

// CorruptItem is a published version found broken (by a repair or a
// verification).
type CorruptItem struct {
	// Scope is decoded from the version's record; nil when it does not
	// decode.
	Scope *Scope `json:"scope"`
	// Name is decoded from the record; empty when it does not decode.
	Name string `json:"name"`
	// Version is the version number (0 when the problem is the name
	// directory itself).
	Version int64 `json:"version"`
	// Reason says what is wrong.
	Reason string `json:"reason"`
	// Path is the file or object in question.
	Path string `json:"path"`
	// NextCommand is the command that deletes the version, or empty when
	// the record does not say which artifact it is (then inspect Path).
	NextCommand string `json:"next_command,omitempty"`
	// Code is the stable error code of the problem: corrupt_artifact (the
	// bytes were read and are wrong), unsafe_store (a symbolic link, named
	// pipe or other non-regular file, not read), or permission_denied and
	// io_error (it could not be read).
	Code Code `json:"code"`
}

// String formats an item for a log line.
func (c CorruptItem) String() string {
	who := c.Path
	if c.Scope != nil && c.Name != "" {
		who = fmt.Sprintf("%s %q v%d", c.Scope, c.Name, c.Version)
	}
	return who + ": " + c.Reason
}

// RepairReport is what a repair found and did.
type RepairReport struct {
	// Root is the store root (or gs://BUCKET/PREFIX).
	Root string `json:"root"`
	// DryRun is true when nothing was removed.
	DryRun bool `json:"dry_run"`
	// GraceSeconds is the grace period used (0 with NoRepairGrace).
	GraceSeconds float64 `json:"grace_seconds"`
	// Scanned counts the files (objects) examined.
	Scanned int64 `json:"scanned"`
	// Removed counts the files removed (in a dry run: to be removed).
	Removed int64 `json:"removed"`
	// ReservationsPreserved counts the version reservations found.
	ReservationsPreserved int64 `json:"reservations_preserved"`
	// Corrupt counts the records without payloads.
	Corrupt int64 `json:"corrupt"`
	// Young counts staged files and orphan payloads left alone because
	// they are younger than the grace period.
	Young int64 `json:"young"`
	// CorruptItems lists the corrupt versions, by path.
	CorruptItems []CorruptItem `json:"corrupt_items"`
	// RemovedItems lists the files removed (or to be removed), by path.
	RemovedItems []RepairItem `json:"removed_items"`
	// SkippedItems lists files planned for removal but left alone because
	// they changed, vanished or were published meanwhile.
	SkippedItems []RepairItem `json:"skipped_items"`
	// Notes are what the operator should know beyond the items: a layout
	// whose repair removes nothing says so here, and findings that are
	// not problems (names two writers would read differently) are
	// explained here. Empty in most runs.
	Notes []string `json:"notes,omitempty"`
}

// NewRepairReport returns an empty report of root with non-nil lists and
// the grace period of opts (as Normalized gives it).
func NewRepairReport(root string, opts RepairOptions) RepairReport {
	r := RepairReport{Root: root, CorruptItems: []CorruptItem{}, RemovedItems: []RepairItem{}, SkippedItems: []RepairItem{}}
	if opts.Grace > 0 {
		r.GraceSeconds = opts.Grace.Seconds()
	}
	return r
}

// AsDryRun returns r as the report of a dry run that would remove
// planned: DryRun set, RemovedItems and Removed from planned, no skipped
// items.
func (r RepairReport) AsDryRun(planned []RepairItem) RepairReport {
	r.DryRun = true
	r.RemovedItems = append(make([]RepairItem, 0, len(planned)), planned...)
	r.Removed = int64(len(planned))
	r.SkippedItems = []RepairItem{}
	return r
}

// Skip records that it was left alone after all, and why.
func (r *RepairReport) Skip(it RepairItem, why string) {
	it.Reason = why
	r.SkippedItems = append(r.SkippedItems, it)
}

// Add sums o into r: counters added, items appended.
func (r *RepairReport) Add(o RepairReport) {
	r.GraceSeconds = o.GraceSeconds
	r.Scanned += o.Scanned
	r.Removed += o.Removed
	r.ReservationsPreserved += o.ReservationsPreserved
	r.Corrupt += o.Corrupt
	r.Young += o.Young
	r.CorruptItems = append(r.CorruptItems, o.CorruptItems...)
	r.RemovedItems = append(r.RemovedItems, o.RemovedItems...)
	r.SkippedItems = append(r.SkippedItems, o.SkippedItems...)
	r.Notes = append(r.Notes, o.Notes...)
}

// RepairLimitError says a repair stopped because it scanned more files
// than RepairOptions.Limit; nothing was removed.
type RepairLimitError struct {
	// Limit is RepairOptions.Limit.
	Limit int64
}

// Error says which limit was passed.
func (e *RepairLimitError) Error() string {
	return fmt.Sprintf("repair stopped: more than %d files to scan (raise --limit); nothing was removed", e.Limit)
}

// ErrorCode returns "limit_exceeded".
func (e *RepairLimitError) ErrorCode() string { return "limit_exceeded" }

// PlanRepair scans the store through its driver's Repairer and returns
// the plan, or CodeUnsupported when the layout has no repair.
func (s *Store) PlanRepair(ctx context.Context, opts RepairOptions) (RepairPlan, error) {
	r, ok := s.drv.(Repairer)
	if !ok {
		return nil, s.unsupported("repair", "be repaired")
	}
	return r.PlanRepair(ctx, opts)
}

// CanRepair reports whether PlanRepair is supported.
func (s *Store) CanRepair() bool {
	_, ok := s.drv.(Repairer)
	return ok
}

// DeleteCommand returns the agentstore command line that deletes one
// version, every argument quoted for a shell when it needs to be (see
// internal/shell: ids and names that hold control or bidirectional
// characters are escaped, so the line is safe to print and to paste).
func DeleteCommand(store string, scope Scope, name string, version int64) string {
	args := []string{"agentstore", "artifacts", "delete", "--store", store, "--app", scope.App}
	if scope.Kind == KindUser || scope.Kind == KindSession {
		args = append(args, "--user", scope.User)
	}
	if scope.Kind == KindSession {
		args = append(args, "--session", scope.Session)
	}
	args = append(args, "--name", name, "--version", fmt.Sprint(version))
	return shell.Join(args...)
}

// LocatedFile is one file or object that holds part of a version.
type LocatedFile struct {
	// Role is what it holds: "record", "payload" or "reservation".
	Role string `json:"role"`
	// Location is the file's absolute path, or gs://BUCKET/OBJECT.
	Location string `json:"location"`
	// Exists reports whether it exists.
	Exists bool `json:"exists"`
	// Size is its size in bytes when it exists.
	Size int64 `json:"size"`
}

// Locator is implemented by drivers that can name the files or objects
// that hold one version, whether or not they exist (for restores from
// backup). It reads no record.
type Locator interface {
	// Locate returns every file or object of version of name in scope.
	Locate(ctx context.Context, scope Scope, name string, version int64) ([]LocatedFile, error)
}

// Locate names the files or objects that hold version of name in scope
// (see Locator), or returns CodeUnsupported when the layout has none to
// name.
func (s *Store) Locate(ctx context.Context, scope Scope, name string, version int64) ([]LocatedFile, error) {
	if err := s.checkArtifact("locate", scope, name, version); err != nil {
		return nil, refuse(err, scope, name, version)
	}
	l, ok := s.drv.(Locator)
	if !ok {
		return nil, s.unsupported("locate", "name the files of a version")
	}
	return l.Locate(ctx, scope, name, version)
}
