// Package stall bounds a long operation by its progress instead of its
// total time. A store-wide walk of a Cloud Storage bucket with millions of
// objects, or an fs verify that reads every payload while the walk goes
// on, can rightly take hours; a listing request that gets no answer must
// still end. A context made by WithIdle is cancelled, with a cause that is
// a context.DeadlineExceeded, once its operation has made no progress
// (no Touch) for the idle bound while it was not paused.
package stall

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Error is the cause of a context cancelled by its watch: no progress for
// Idle. It matches context.DeadlineExceeded under errors.Is, so the
// operation is classified as a timeout.
type Error struct {
	// Idle is the bound that passed without progress.
	Idle time.Duration
}

// Error says what stalled and for how long.
func (e *Error) Error() string {
	return fmt.Sprintf("no progress for %s", e.Idle)
}

// Is makes an *Error match context.DeadlineExceeded.
func (e *Error) Is(target error) bool { return target == context.DeadlineExceeded }

// timer is the part of *time.Timer a watch uses.
type timer interface{ Reset(time.Duration) bool }

// afterFunc starts a timer; tests replace it with a hand-fired one.
type afterFunc func(time.Duration, func()) (timer, func() bool)

// realAfter is time.AfterFunc.
func realAfter(d time.Duration, f func()) (timer, func() bool) {
	t := time.AfterFunc(d, f)
	return t, t.Stop
}

// watch is the state of one WithIdle context.
type watch struct {
	idle   time.Duration
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	paused int // nested Pause calls not yet resumed
	done   bool
	t      timer
	stop   func() bool
}

type key struct{}

// WithIdle returns a copy of parent that is cancelled with an *Error
// cause when idle passes without a Touch while no Pause is in effect. The
// clock starts now. Call the returned function to release the watch.
func WithIdle(parent context.Context, idle time.Duration) (context.Context, context.CancelFunc) {
	return withIdle(parent, idle, realAfter)
}

func withIdle(parent context.Context, idle time.Duration, after afterFunc) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	w := &watch{idle: idle, cancel: cancel}
	w.t, w.stop = after(idle, w.fire)
	return context.WithValue(ctx, key{}, w), func() {
		w.mu.Lock()
		w.done = true
		w.stop()
		w.mu.Unlock()
		cancel(context.Canceled)
	}
}

// fire cancels the context unless the watch is paused or released.
func (w *watch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.paused > 0 || w.done {
		return
	}
	w.done = true
	w.cancel(&Error{Idle: w.idle})
}

func from(ctx context.Context) *watch {
	w, _ := ctx.Value(key{}).(*watch)
	return w
}

// Touch records progress of the operation of ctx: the idle bound starts
// again. Without a watch in ctx it does nothing.
func Touch(ctx context.Context) {
	w := from(ctx)
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && w.paused == 0 {
		w.t.Reset(w.idle)
	}
}

// Pause stops the clock of the watch in ctx, for time the operation spends
// outside itself (a caller's callback that may rightly block, such as a
// verifier waiting for its readers); the returned function starts the
// idle bound again. Pauses nest. Without a watch in ctx it does nothing.
func Pause(ctx context.Context) (resume func()) {
	w := from(ctx)
	if w == nil {
		return func() {}
	}
	w.mu.Lock()
	w.paused++
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.paused--
			if !w.done && w.paused == 0 {
				w.t.Reset(w.idle)
			}
		})
	}
}
