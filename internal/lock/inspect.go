package lock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// State is what Inspect found where a lock is kept.
type State struct {
	// Path is where the lock is (Backend.Where): a file or a gs:// URL.
	Path string `json:"path"`
	// Exists is false when there is no lock.
	Exists bool `json:"exists"`
	// Holder is what the lock says; zero when it does not parse.
	Holder Info `json:"holder"`
	// Parsed is false for a lock that does not parse (damaged, or being
	// written).
	Parsed bool `json:"parsed"`
	// Refreshed is the heartbeat.
	Refreshed time.Time `json:"refreshed"`
	// Stale says whether Acquire would take the lock over, and Why says
	// why it is or is not stale.
	Stale bool   `json:"stale"`
	Why   string `json:"why"`
	// Digest identifies this very state of the lock (for a file: the
	// SHA-256 of its bytes, its size, heartbeat and identity; for an
	// object: its generation) for Remove.
	Digest string `json:"digest"`

	b    Backend
	snap Snapshot
}

// Inspect reads the lock file at path and decides, as Acquire would,
// whether it is stale. A missing lock file is State{Exists: false}.
func Inspect(path string, opts Options) (State, error) {
	return InspectBackend(context.Background(), File(path), opts)
}

// InspectBackend reads the lock b keeps and decides, as Acquire would,
// whether it is stale. No lock is State{Exists: false}.
func InspectBackend(ctx context.Context, b Backend, opts Options) (State, error) {
	opts = opts.normalized()
	cur, err := read(ctx, b)
	if errors.Is(err, fs.ErrNotExist) {
		return State{Path: b.Where(), b: b}, nil
	}
	if err != nil {
		return State{Path: b.Where()}, err
	}
	st := cur.state(b, opts)
	st.Stale = cur.stale(opts)
	st.Why = why(cur, opts, st.Stale)
	return st, nil
}

// state is the State of the lock cur, judged stale (the caller decided).
func (c current) state(b Backend, opts Options) State {
	st := State{Path: b.Where(), Exists: true, Holder: c.info, Parsed: c.parsed, Refreshed: c.snap.Heartbeat,
		Stale: true, Why: why(c, opts, true), Digest: c.snap.Version, b: b, snap: c.snap}
	st.Holder.Refreshed = time.Time{}
	return st
}

// why says why the lock cur is, or is not, stale.
func why(cur current, opts Options, stale bool) string {
	age := opts.Now().Sub(cur.snap.Heartbeat).Round(time.Second)
	host, _ := os.Hostname()
	switch {
	case !cur.parsed && stale:
		return fmt.Sprintf("it does not parse (damaged) and is %s old", age)
	case !cur.parsed:
		return fmt.Sprintf("it does not parse and is only %s old: its holder may still be writing it", age)
	case age > opts.StaleAfter:
		return fmt.Sprintf("its heartbeat stopped %s ago (stale after %s)", age, opts.StaleAfter)
	case cur.info.Host == host && stale:
		return fmt.Sprintf("process %d is gone from this host", cur.info.PID)
	case cur.info.Host == host:
		return fmt.Sprintf("process %d is running on this host and refreshed the lock %s ago", cur.info.PID, age)
	}
	return fmt.Sprintf("it was taken on host %s, whose processes cannot be checked from here, and refreshed %s ago (stale after %s)", cur.info.Host, age, opts.StaleAfter)
}

// Remove deletes the lock st describes, only if it is still that very lock
// (same bytes and heartbeat, same file or object generation); otherwise it
// returns ErrChanged and removes nothing.
func Remove(st State) error {
	return RemoveContext(context.Background(), st)
}

// RemoveContext is Remove under ctx.
func RemoveContext(ctx context.Context, st State) error {
	if !st.Exists {
		return nil
	}
	if st.b == nil {
		return fmt.Errorf("lock %s: the state was not made by Inspect", st.Path)
	}
	return st.b.Remove(ctx, st.snap)
}
