// Package locktest is the conformance suite of the lock contract: every
// lock.Backend (the file, the Cloud Storage object) runs the same table of
// cases through package lock, so both keep one contract.
package locktest

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/lock"
)

// Clock is a test clock that moves only when told.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// staleAfter is the StaleAfter of every case: the clocks move past it,
// never the wall clock.
const staleAfter = time.Hour

// Run runs the conformance table against the backends newBackend returns:
// each call must return a Backend of one fresh, empty lock location.
func Run(t *testing.T, newBackend func(t *testing.T) lock.Backend) {
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	opts := func(c *Clock, purpose string) lock.Options {
		return lock.Options{Purpose: purpose, StaleAfter: staleAfter, RefreshInterval: -1, Now: c.Now}
	}
	cases := []struct {
		name string
		run  func(t *testing.T, b lock.Backend, c *Clock)
	}{
		{"AcquireHeldRelease", func(t *testing.T, b lock.Backend, c *Clock) {
			a := mustAcquire(t, b, opts(c, "first holder"))
			if _, ok := a.TookOver(); ok {
				t.Fatal("a free lock reported as taken over")
			}
			before := read(t, b)
			var info lock.Info
			if err := json.Unmarshal(before.Raw, &info); err != nil || info != a.Info() {
				t.Fatalf("the lock holds %s (%v), want %+v", before.Raw, err, a.Info())
			}
			_, err := lock.AcquireBackend(context.Background(), b, opts(c, "second holder"))
			held := wantHeld(t, err)
			if held.Holder.Purpose != "first holder" || held.Holder.Token != a.Info().Token || held.Path != b.Where() {
				t.Fatalf("HeldError %+v", held)
			}
			if !strings.Contains(err.Error(), b.Where()) || !strings.Contains(err.Error(), "first holder") {
				t.Fatalf("the error names neither the lock nor its holder: %v", err)
			}
			if after := read(t, b); after.Version != before.Version {
				t.Fatal("a refused acquire changed the lock")
			}
			if err := a.Release(); err != nil {
				t.Fatal(err)
			}
			if err := a.Release(); err != nil {
				t.Fatalf("second Release: %v", err)
			}
			wantNone(t, b)
			mustAcquire(t, b, opts(c, "second holder")).Release()
		}},
		{"HeartbeatKeepsAlivePastStaleAfter", func(t *testing.T, b lock.Backend, c *Clock) {
			a := mustAcquire(t, b, opts(c, "first holder"))
			defer a.Release()
			c.Advance(staleAfter - time.Minute)
			if err := a.Refresh(); err != nil {
				t.Fatal(err)
			}
			hb := c.Now()
			c.Advance(staleAfter - time.Minute) // 2h - 2m after the start
			st := inspect(t, b, c)
			if st.Stale || !st.Refreshed.Equal(hb) || !st.Exists || !st.Parsed {
				t.Fatalf("a lock refreshed %s ago: %+v", staleAfter-time.Minute, st)
			}
			_, err := lock.AcquireBackend(context.Background(), b, opts(c, "second holder"))
			if held := wantHeld(t, err); !held.Holder.Refreshed.Equal(hb) {
				t.Fatalf("HeldError heartbeat %v, want %v", held.Holder.Refreshed, hb)
			}
			if a.Err() != nil {
				t.Fatal(a.Err())
			}
		}},
		{"BackgroundHeartbeatRenews", func(t *testing.T, b lock.Backend, c *Clock) {
			o := opts(c, "first holder")
			o.RefreshInterval = 10 * time.Millisecond
			a := mustAcquire(t, b, o)
			defer a.Release()
			c.Advance(staleAfter + time.Hour)
			want := c.Now()
			// Wait for the background heartbeat, polling the lock (it is
			// not observable otherwise); one that never comes fails the
			// test by its timeout, whatever the speed of the machine.
			for !inspect(t, b, c).Refreshed.Equal(want) {
				time.Sleep(5 * time.Millisecond) // polling interval
			}
			if st := inspect(t, b, c); st.Stale {
				t.Fatalf("a lock with a live heartbeat is stale: %+v", st)
			}
			_, err := lock.AcquireBackend(context.Background(), b, opts(c, "second holder"))
			wantHeld(t, err)
			if a.Err() != nil {
				t.Fatal(a.Err())
			}
		}},
		{"StoppedHeartbeatGoesStale", func(t *testing.T, b lock.Backend, c *Clock) {
			a := mustAcquire(t, b, opts(c, "first holder"))
			defer a.Release()
			c.Advance(staleAfter + time.Minute)
			st := inspect(t, b, c)
			if !st.Stale || !strings.Contains(st.Why, "heartbeat stopped") {
				t.Fatalf("a lock whose heartbeat stopped %s ago: %+v", staleAfter+time.Minute, st)
			}
			n := mustAcquire(t, b, opts(c, "second holder"))
			defer n.Release()
			prev, ok := n.TookOver()
			if !ok || prev.Holder.Token != a.Info().Token || !prev.Parsed || !strings.Contains(prev.Why, "heartbeat stopped") || prev.Path != b.Where() {
				t.Fatalf("TookOver %+v, %v", prev, ok)
			}
		}},
		{"TakeoverCancelsTheHolder", func(t *testing.T, b lock.Backend, c *Clock) {
			a := mustAcquire(t, b, opts(c, "first holder"))
			ctx, cancel := a.Context(context.Background())
			defer cancel()
			c.Advance(staleAfter + time.Minute)
			n := mustAcquire(t, b, opts(c, "second holder"))
			defer n.Release()
			if ctx.Err() != nil {
				t.Fatal("cancelled before the holder's next heartbeat")
			}
			if err := a.Refresh(); !errors.Is(err, lock.ErrLost) || !strings.Contains(err.Error(), b.Where()) {
				t.Fatalf("Refresh after a takeover: %v", err)
			}
			<-ctx.Done() // a context never cancelled fails the test by its timeout
			if cause := context.Cause(ctx); !errors.Is(cause, lock.ErrLost) {
				t.Fatalf("cause %v", cause)
			}
			select {
			case <-a.Lost():
			default:
				t.Fatal("Lost not closed")
			}
			// Release after the takeover leaves the new holder's lock.
			if err := a.Release(); err == nil {
				t.Fatal("Release removed the lock of whoever took it over")
			}
			wantToken(t, b, n.Info().Token)
			if err := n.Refresh(); err != nil {
				t.Fatalf("the new holder lost its lock: %v", err)
			}
		}},
		{"BackgroundHeartbeatNoticesTakeover", func(t *testing.T, b lock.Backend, c *Clock) {
			// The holder's clock stands still, so its heartbeats never
			// make the lock fresh for the taker, whose clock is ahead.
			o := opts(c, "first holder")
			o.RefreshInterval = 20 * time.Millisecond
			a := mustAcquire(t, b, o)
			defer a.Release()
			ctx, cancel := a.Context(context.Background())
			defer cancel()
			later := NewClock(c.Now().Add(staleAfter + time.Minute))
			var n *lock.Lock
			for n == nil {
				// A heartbeat between the taker's read and its write
				// makes it find the lock changed (HeldError): try again.
				l, err := lock.AcquireBackend(context.Background(), b, opts(later, "second holder"))
				if err != nil {
					wantHeld(t, err)
					continue
				}
				n = l
			}
			defer n.Release()
			<-ctx.Done() // the background heartbeat fails and cancels the holder
			if cause := context.Cause(ctx); !errors.Is(cause, lock.ErrLost) {
				t.Fatalf("cause %v", cause)
			}
			wantToken(t, b, n.Info().Token)
		}},
		{"RemovedUnderTheHolder", func(t *testing.T, b lock.Backend, c *Clock) {
			a := mustAcquire(t, b, opts(c, "first holder"))
			st := inspect(t, b, c)
			if err := lock.RemoveContext(context.Background(), st); err != nil {
				t.Fatal(err)
			}
			if err := a.Refresh(); !errors.Is(err, lock.ErrLost) {
				t.Fatalf("Refresh of a removed lock: %v", err)
			}
			if err := a.Release(); err != nil {
				t.Fatalf("Release of a removed lock: %v", err)
			}
		}},
		{"RemoveOnlyWhatWasInspected", func(t *testing.T, b lock.Backend, c *Clock) {
			a := mustAcquire(t, b, opts(c, "first holder"))
			defer a.Release()
			st := inspect(t, b, c)
			c.Advance(time.Minute)
			if err := a.Refresh(); err != nil {
				t.Fatal(err)
			}
			if err := lock.RemoveContext(context.Background(), st); !errors.Is(err, lock.ErrChanged) {
				t.Fatalf("Remove of a lock refreshed since: %v", err)
			}
			wantToken(t, b, a.Info().Token)
			if err := a.Refresh(); err != nil {
				t.Fatalf("the holder lost its lock: %v", err)
			}
		}},
		{"Unparsable", func(t *testing.T, b lock.Backend, c *Clock) {
			if err := b.Create(context.Background(), []byte(`{"host":`), c.Now()); err != nil {
				t.Fatal(err)
			}
			before := read(t, b)
			_, err := lock.AcquireBackend(context.Background(), b, opts(c, "holder"))
			if held := wantHeld(t, err); held.Holder.PID != 0 || !strings.Contains(err.Error(), "holder unknown") {
				t.Fatalf("HeldError %v", err)
			}
			st := inspect(t, b, c)
			if st.Parsed || st.Stale || !strings.Contains(st.Why, "does not parse and is only") {
				t.Fatalf("a fresh lock that does not parse: %+v", st)
			}
			if read(t, b).Version != before.Version {
				t.Fatal("a refused acquire changed the lock")
			}
			c.Advance(2 * time.Minute)
			st = inspect(t, b, c)
			if !st.Stale || !strings.Contains(st.Why, "does not parse (damaged)") {
				t.Fatalf("a lock that does not parse, 2 minutes old: %+v", st)
			}
			l := mustAcquire(t, b, opts(c, "holder"))
			defer l.Release()
			if prev, ok := l.TookOver(); !ok || prev.Parsed {
				t.Fatalf("TookOver %+v, %v", prev, ok)
			}
		}},
		{"OtherHostRespectedUntilStale", func(t *testing.T, b lock.Backend, c *Clock) {
			// Process 1 exists here, but on another host it is not ours
			// to judge: only the heartbeat decides.
			info := lock.Info{Host: "elsewhere.invalid", PID: 1, Purpose: "remote repair", Token: "remote", Started: c.Now()}
			raw, _ := json.Marshal(info)
			if err := b.Create(context.Background(), raw, c.Now()); err != nil {
				t.Fatal(err)
			}
			c.Advance(staleAfter - time.Minute)
			_, err := lock.AcquireBackend(context.Background(), b, opts(c, "holder"))
			if held := wantHeld(t, err); held.Holder.Host != "elsewhere.invalid" {
				t.Fatalf("HeldError %+v", held)
			}
			c.Advance(2 * time.Minute)
			l := mustAcquire(t, b, opts(c, "holder"))
			defer l.Release()
			if prev, ok := l.TookOver(); !ok || prev.Holder.Token != "remote" {
				t.Fatalf("TookOver %+v, %v", prev, ok)
			}
		}},
		{"ConcurrentAcquire", func(t *testing.T, b lock.Backend, c *Clock) {
			const n = 6
			type result struct {
				l   *lock.Lock
				err error
			}
			results := make(chan result, n)
			for range n {
				go func() {
					l, err := lock.AcquireBackend(context.Background(), b, opts(c, "racer"))
					results <- result{l, err}
				}()
			}
			var won []*lock.Lock
			for range n {
				r := <-results
				if r.err == nil {
					won = append(won, r.l)
				} else {
					wantHeld(t, r.err)
				}
			}
			if len(won) != 1 {
				t.Fatalf("%d holders", len(won))
			}
			won[0].Release()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newBackend(t), NewClock(t0))
		})
	}
}

func mustAcquire(t *testing.T, b lock.Backend, o lock.Options) *lock.Lock {
	t.Helper()
	l, err := lock.AcquireBackend(context.Background(), b, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func read(t *testing.T, b lock.Backend) lock.Snapshot {
	t.Helper()
	s, err := b.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func inspect(t *testing.T, b lock.Backend, c *Clock) lock.State {
	t.Helper()
	st, err := lock.InspectBackend(context.Background(), b, lock.Options{StaleAfter: staleAfter, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func wantNone(t *testing.T, b lock.Backend) {
	t.Helper()
	if _, err := b.Read(context.Background()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the lock is still there: %v", err)
	}
}

func wantToken(t *testing.T, b lock.Backend, token string) {
	t.Helper()
	var info lock.Info
	if err := json.Unmarshal(read(t, b).Raw, &info); err != nil || info.Token != token {
		t.Fatalf("the lock holds token %q (%v), want %q", info.Token, err, token)
	}
}

func wantHeld(t *testing.T, err error) *lock.HeldError {
	t.Helper()
	var held *lock.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("got %v, want a HeldError", err)
	}
	var coded interface{ ErrorCode() string }
	if !errors.As(err, &coded) || coded.ErrorCode() != "locked" {
		t.Fatalf("the error code of %v is not locked", err)
	}
	return held
}
