package workspace

import (
	"sync"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Quota bounds what an agent may write into its workspace. Zero fields
// mean no limit.
type Quota struct {
	// TurnBytes is the per-turn allowance: the bytes all writes of one turn
	// (from BeginTurn to the next BeginTurn) may write together.
	TurnBytes int64
	// TotalBytes caps the bytes the workspace holds (regular files, the
	// index excluded) after a write.
	TotalBytes int64
}

// ledger is a session's quota account. Writes charge it before they write
// a byte; a refused charge changes nothing.
type ledger struct {
	mu       sync.Mutex
	q        Quota
	turnUsed int64 // bytes written this turn
	usage    int64 // bytes the workspace holds
}

// remainingLocked is the allowance left for a write that replaces a file
// of old bytes: the smaller of the turn and total headroom, -1 when neither
// is limited.
func (l *ledger) remainingLocked(old int64) int64 {
	rem := int64(-1)
	if l.q.TurnBytes > 0 {
		rem = max(l.q.TurnBytes-l.turnUsed, 0)
	}
	if l.q.TotalBytes > 0 {
		t := max(l.q.TotalBytes-l.usage+old, 0)
		if rem < 0 || t < rem {
			rem = t
		}
	}
	return rem
}

// charge books n more bytes written, of which the first charge of a write
// replaces a file of old bytes (pass 0 for later chunks). It returns
// ok=false and the allowance left when the write would go over a limit.
func (l *ledger) charge(n, old int64) (remaining int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.q.TurnBytes > 0 && l.turnUsed+n > l.q.TurnBytes {
		return l.remainingLocked(old), false
	}
	if l.q.TotalBytes > 0 && l.usage-old+n > l.q.TotalBytes {
		return l.remainingLocked(old), false
	}
	l.turnUsed += n
	l.usage += n - old
	return 0, true
}

// refund undoes charges of n bytes in total whose first charge replaced
// old bytes.
func (l *ledger) refund(n, old int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.turnUsed -= n
	l.usage -= n - old
}

// freed books bytes that left the workspace (remove, overwrite by rename).
func (l *ledger) freed(n int64) {
	l.mu.Lock()
	l.usage -= n
	l.mu.Unlock()
}

// beginTurn resets the turn allowance and sets the measured usage.
func (l *ledger) beginTurn(usage int64) {
	l.mu.Lock()
	l.turnUsed = 0
	l.usage = usage
	l.mu.Unlock()
}

// setUsage sets the measured usage without touching the turn.
func (l *ledger) setUsage(usage int64) {
	l.mu.Lock()
	l.usage = usage
	l.mu.Unlock()
}

// QuotaStatus is a snapshot of a session's ledger.
type QuotaStatus struct {
	Quota
	// TurnUsed is the bytes written since the last BeginTurn.
	TurnUsed int64
	// Usage is the bytes the workspace holds, as the ledger counts them.
	Usage int64
	// Remaining is the allowance left for a new file; -1 when unlimited.
	Remaining int64
}

func (l *ledger) status() QuotaStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	return QuotaStatus{Quota: l.q, TurnUsed: l.turnUsed, Usage: l.usage, Remaining: l.remainingLocked(0)}
}

// quotaError is the error of a refused write.
func quotaError(scope artifacts.Scope, op, name string, remaining int64) error {
	e := artifacts.Errorf(artifacts.CodeQuotaExceeded, op, nil, "writing %q would exceed the workspace quota; %d bytes of allowance left", name, remaining).With(scope, "", artifacts.NoVersion)
	e.Remaining = remaining
	return e
}
