package workspace

import (
	"fmt"
	"sync"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// DirBytes is what one directory of a workspace is charged, against the
// per-turn allowance and the total alike: one 4 KiB block, about what a
// file system gives it. Directories cost something, so that an agent
// cannot fill the scratch disk (and its snapshots) with empty ones.
const DirBytes = 4096

// Quota bounds what an agent may write into its workspace. Zero fields
// mean no limit.
type Quota struct {
	// TurnBytes is the per-turn allowance: the bytes all writes of one turn
	// (from BeginTurn to the next BeginTurn) may write together, each
	// directory created counting DirBytes.
	TurnBytes int64
	// TotalBytes caps the bytes the workspace holds after a change: its
	// regular files' sizes plus DirBytes per directory (the index
	// excluded).
	TotalBytes int64
	// MaxFiles caps the regular files the workspace holds, at any depth.
	MaxFiles int
	// MaxEntries caps the files and directories the workspace holds
	// together, at any depth.
	MaxEntries int
}

// Limit names the limit of a Quota that refused a change.
type Limit string

// The limits a QuotaExceeded names.
const (
	LimitTurnBytes Limit = "turn_bytes" // Quota.TurnBytes
	LimitBytes     Limit = "bytes"      // Quota.TotalBytes
	LimitFiles     Limit = "files"      // Quota.MaxFiles
	LimitEntries   Limit = "entries"    // Quota.MaxEntries
)

// QuotaExceeded is the cause of a CodeQuotaExceeded *artifacts.Error of
// a workspace (find it with errors.As): which limit refused the change
// and what is left under each limit. A field is -1 when its limit is not
// set, so that nothing reads as "0 left" of a limit that does not exist.
type QuotaExceeded struct {
	// Limit is the limit that refused the change.
	Limit Limit
	// RemainingBytes is the allowance left for the change: the smaller of
	// the turn's and the total's headroom, counting the bytes the change
	// would free; -1 when neither is limited.
	RemainingBytes int64
	// RemainingFiles is the files that may still be created; -1 without
	// MaxFiles.
	RemainingFiles int
	// RemainingEntries is the files and directories that may still be
	// created; -1 without MaxEntries.
	RemainingEntries int
}

// Error says which limit bound.
func (e *QuotaExceeded) Error() string { return "limit " + string(e.Limit) }

// delta is what a change adds to a workspace: the bytes it writes this
// turn, and how the bytes, files and directories the workspace holds
// change (negative when they shrink).
type delta struct {
	turn  int64
	bytes int64
	files int
	dirs  int
}

// dirDelta is the delta of creating one directory.
var dirDelta = delta{turn: DirBytes, bytes: DirBytes, dirs: 1}

// ledger is a session's quota account. Changes to the tree (write,
// append, mkdir, remove, rename) hold change from the moment they look
// at what they replace until they have booked what they did, so that the
// ledger always describes the tree: two overwrites of one file cannot
// both book against the same old size. A refused change books nothing.
type ledger struct {
	change sync.Mutex

	mu       sync.Mutex // guards the fields below
	q        Quota
	turnUsed int64 // bytes written this turn
	usage    int64 // bytes the workspace holds, DirBytes per directory
	files    int   // regular files the workspace holds
	dirs     int   // directories the workspace holds (the top excluded)
}

// remainingLocked is the byte allowance left for a change that frees
// freed bytes: the smaller of the turn and total headroom, -1 when
// neither is limited.
func (l *ledger) remainingLocked(freed int64) int64 {
	rem := int64(-1)
	if l.q.TurnBytes > 0 {
		rem = max(l.q.TurnBytes-l.turnUsed, 0)
	}
	if l.q.TotalBytes > 0 {
		t := max(l.q.TotalBytes-l.usage+freed, 0)
		if rem < 0 || t < rem {
			rem = t
		}
	}
	return rem
}

// exceededLocked returns what refuses d, or nil when d fits every limit.
// Only what d adds is checked: a change that shrinks the workspace is
// never refused for bytes it already holds.
func (l *ledger) exceededLocked(d delta) *QuotaExceeded {
	var lim Limit
	switch {
	case d.turn > 0 && l.q.TurnBytes > 0 && l.turnUsed+d.turn > l.q.TurnBytes:
		lim = LimitTurnBytes
	case d.bytes > 0 && l.q.TotalBytes > 0 && l.usage+d.bytes > l.q.TotalBytes:
		lim = LimitBytes
	case d.files > 0 && l.q.MaxFiles > 0 && l.files+d.files > l.q.MaxFiles:
		lim = LimitFiles
	case d.files+d.dirs > 0 && l.q.MaxEntries > 0 && l.files+l.dirs+d.files+d.dirs > l.q.MaxEntries:
		lim = LimitEntries
	default:
		return nil
	}
	e := &QuotaExceeded{Limit: lim, RemainingBytes: l.remainingLocked(max(d.turn-d.bytes, 0)), RemainingFiles: -1, RemainingEntries: -1}
	if l.q.MaxFiles > 0 {
		e.RemainingFiles = max(l.q.MaxFiles-l.files, 0)
	}
	if l.q.MaxEntries > 0 {
		e.RemainingEntries = max(l.q.MaxEntries-l.files-l.dirs, 0)
	}
	return e
}

// check reports what would refuse d, booking nothing.
func (l *ledger) check(d delta) *QuotaExceeded {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.exceededLocked(d)
}

// take books d unless a limit refuses it.
func (l *ledger) take(d delta) *QuotaExceeded {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.exceededLocked(d); e != nil {
		return e
	}
	l.bookLocked(d)
	return nil
}

func (l *ledger) bookLocked(d delta) {
	l.turnUsed += d.turn
	l.usage += d.bytes
	l.files += d.files
	l.dirs += d.dirs
}

// book books d without checking it: what a change freed, or the undoing
// of a charge (pass the negated delta).
func (l *ledger) book(d delta) {
	l.mu.Lock()
	l.bookLocked(d)
	l.mu.Unlock()
}

// neg returns the delta that undoes d.
func (d delta) neg() delta { return delta{-d.turn, -d.bytes, -d.files, -d.dirs} }

// setTree sets what the workspace holds, as measured, without touching
// the turn; with turn set it also starts a new turn. The caller holds
// change (or the workspace exclusively), so that no change is booked
// between the measurement and this.
func (l *ledger) setTree(m treeCount, turn bool) {
	l.mu.Lock()
	if turn {
		l.turnUsed = 0
	}
	l.usage = m.bytes + int64(m.dirs)*DirBytes
	l.files, l.dirs = m.files, m.dirs
	l.mu.Unlock()
}

// QuotaStatus is a snapshot of a session's ledger.
type QuotaStatus struct {
	Quota
	// TurnUsed is the bytes written since the last BeginTurn.
	TurnUsed int64
	// Usage is the bytes the workspace holds, as the ledger counts them:
	// its regular files' sizes plus DirBytes per directory.
	Usage int64
	// Files and Dirs are the regular files and directories it holds.
	Files, Dirs int
	// Remaining is the byte allowance left for a new file; -1 when
	// unlimited.
	Remaining int64
}

func (l *ledger) status() QuotaStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return QuotaStatus{Quota: l.q, TurnUsed: l.turnUsed, Usage: l.usage, Files: l.files, Dirs: l.dirs, Remaining: l.remainingLocked(0)}
}

// quotaError is the error of a refused change of name: an
// *artifacts.Error of code CodeQuotaExceeded whose cause is qe and whose
// Remaining is qe.RemainingBytes.
func quotaError(scope artifacts.Scope, q Quota, op, name string, qe *QuotaExceeded) error {
	var msg string
	switch qe.Limit {
	case LimitTurnBytes:
		msg = fmt.Sprintf("writing %q would exceed the per-turn allowance of %d bytes; %d bytes of allowance left", name, q.TurnBytes, qe.RemainingBytes)
	case LimitBytes:
		msg = fmt.Sprintf("writing %q would exceed the workspace's limit of %d bytes; %d bytes of allowance left", name, q.TotalBytes, qe.RemainingBytes)
	case LimitFiles:
		msg = fmt.Sprintf("creating %q would exceed the workspace's limit of %d files", name, q.MaxFiles)
	default:
		msg = fmt.Sprintf("creating %q would exceed the workspace's limit of %d entries (files and directories)", name, q.MaxEntries)
	}
	e := artifacts.Errorf(artifacts.CodeQuotaExceeded, op, qe, "%s", msg).With(scope, "", artifacts.NoVersion)
	e.Remaining = qe.RemainingBytes
	return e
}

// refused is quotaError for the workspace's own quota.
func (w *Workspace) refused(op, name string, qe *QuotaExceeded) error {
	return quotaError(w.scope, w.ledger.q, op, name, qe)
}
