package workspace

import (
	"context"
	"sync"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// commitQueue groups the snapshots that SnapshotOnWrite asks for (group
// commit). Every change to the workspace takes the next change number
// (Workspace.changes). A change returns once a snapshot holding it is
// published: one taken after it was made. A snapshot is made by one round
// at a time; the changes that arrive while a round is in flight are
// published together by the next one, so concurrent writes cost a few
// snapshots, not one each.
type commitQueue struct {
	mu sync.Mutex
	// saved is the highest change number a published snapshot holds.
	saved uint64
	// cur is the round in flight, nil when none; a change that finds one
	// waits for it and then for the next one if this one began before it.
	cur *commitRound
}

// commitRound is one snapshot of the commit queue.
type commitRound struct {
	done    chan struct{} // closed when the snapshot returned
	cancel  context.CancelFunc
	waiters int // changes waiting for it; guarded by commitQueue.mu
	res     SnapshotResult
	err     error
}

// published records that a snapshot holding every change up to seq was
// published.
func (q *commitQueue) published(seq uint64) {
	q.mu.Lock()
	q.saved = max(q.saved, seq)
	q.mu.Unlock()
}

// afterChange publishes the change that just returned under
// SnapshotOnWrite (see commit). op and name say what changed, for the
// CodeNotPersisted error of a change whose snapshot failed: the change
// stays in the workspace, which stays dirty, so that the next change or
// EndTurn snapshots it.
func (w *Workspace) afterChange(ctx context.Context, op, name string) error {
	if w.m.opts.Policy != SnapshotOnWrite {
		return nil
	}
	_, _, err := w.commit(ctx)
	if err == nil {
		return nil
	}
	return scopeError(artifacts.CodeNotPersisted, op, &w.scope, err,
		"%q was changed in the workspace, but the snapshot that stores it failed; the change stays in the workspace and the next write or end of turn retries the snapshot", name)
}

// commit returns once a snapshot holding every change made so far is
// published: at once when one already is (ran false), else after the round
// that publishes it (ran true, with that round's result). It joins the
// round in flight when that round began after these changes, and the next
// one otherwise. The error is the round's snapshot error, or the context's
// when ctx ends first; a round whose waiters all left is cancelled.
func (w *Workspace) commit(ctx context.Context) (res SnapshotResult, ran bool, err error) {
	const op = "workspace snapshot"
	w.stmu.Lock()
	target := w.changes
	w.stmu.Unlock()
	q := &w.commits
	for {
		q.mu.Lock()
		if q.saved >= target {
			q.mu.Unlock()
			return SnapshotResult{}, false, nil
		}
		r := q.cur
		if r == nil {
			rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			r = &commitRound{done: make(chan struct{}), cancel: cancel}
			q.cur = r
			go w.runRound(rctx, r)
		}
		r.waiters++
		q.mu.Unlock()
		select {
		case <-r.done:
			q.mu.Lock()
			saved := q.saved
			q.mu.Unlock()
			switch {
			case saved >= target:
				return r.res, true, nil
			case r.err != nil:
				return r.res, true, r.err
			}
			// The round began before the last of these changes: the next.
		case <-ctx.Done():
			q.mu.Lock()
			r.waiters--
			if r.waiters == 0 {
				// Nobody waits for it: stop it, and let the next change
				// start a round of its own.
				r.cancel()
				if q.cur == r {
					q.cur = nil
				}
			}
			q.mu.Unlock()
			return SnapshotResult{}, false, artifacts.CheckContext(ctx, op)
		}
	}
}

// runRound makes the snapshot of round r and tells its waiters.
func (w *Workspace) runRound(ctx context.Context, r *commitRound) {
	r.res, r.err = w.Snapshot(ctx, SnapshotOptions{})
	q := &w.commits
	q.mu.Lock()
	if q.cur == r {
		q.cur = nil
	}
	close(r.done)
	q.mu.Unlock()
	r.cancel()
}
