package stall

import (
	"context"
	"errors"
	"testing"
	"time"
)

// handTimer is a timer fired by the test; it records its resets.
type handTimer struct {
	f       func()
	resets  []time.Duration
	stopped bool
}

func (h *handTimer) Reset(d time.Duration) bool { h.resets = append(h.resets, d); return true }

func handAfter(h *handTimer) afterFunc {
	return func(d time.Duration, f func()) (timer, func() bool) {
		h.f = f
		return h, func() bool { h.stopped = true; return true }
	}
}

func TestWatch(t *testing.T) {
	const idle = 7 * time.Second
	tests := []struct {
		name      string
		run       func(ctx context.Context, h *handTimer, release context.CancelFunc)
		cancelled bool // by the watch
		resets    int
	}{
		{"fires without progress", func(ctx context.Context, h *handTimer, _ context.CancelFunc) { h.f() }, true, 0},
		{"touch starts the bound again", func(ctx context.Context, h *handTimer, _ context.CancelFunc) {
			Touch(ctx)
			Touch(ctx)
		}, false, 2},
		{"touch then silence fires", func(ctx context.Context, h *handTimer, _ context.CancelFunc) {
			Touch(ctx)
			h.f()
		}, true, 1},
		{"paused does not fire", func(ctx context.Context, h *handTimer, _ context.CancelFunc) {
			resume := Pause(ctx)
			h.f()
			Touch(ctx) // no reset while paused
			_ = resume
		}, false, 0},
		{"resume starts the bound again and can fire", func(ctx context.Context, h *handTimer, _ context.CancelFunc) {
			resume := Pause(ctx)
			h.f()
			resume()
			resume() // once only
			h.f()
		}, true, 1},
		{"nested pauses", func(ctx context.Context, h *handTimer, _ context.CancelFunc) {
			r1 := Pause(ctx)
			r2 := Pause(ctx)
			r2()
			h.f()
			r1()
		}, false, 1},
		{"released does not fire", func(ctx context.Context, h *handTimer, release context.CancelFunc) {
			release()
			h.f()
			Touch(ctx)
		}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &handTimer{}
			ctx, release := withIdle(context.Background(), idle, handAfter(h))
			defer release()
			tc.run(ctx, h, release)
			cause := context.Cause(ctx)
			var se *Error
			if got := errors.As(cause, &se); got != tc.cancelled {
				t.Fatalf("cause %v: stalled %v, want %v", cause, got, tc.cancelled)
			}
			if tc.cancelled {
				if se.Idle != idle || !errors.Is(cause, context.DeadlineExceeded) || se.Error() != "no progress for 7s" {
					t.Errorf("cause %#v (%v)", se, se)
				}
				if ctx.Err() == nil {
					t.Error("the context is not done")
				}
			}
			if len(h.resets) != tc.resets {
				t.Errorf("%d resets, want %d", len(h.resets), tc.resets)
			}
			for _, d := range h.resets {
				if d != idle {
					t.Errorf("reset to %s", d)
				}
			}
		})
	}
}

func TestRelease(t *testing.T) {
	h := &handTimer{}
	ctx, release := withIdle(context.Background(), time.Second, handAfter(h))
	release()
	if !h.stopped || !errors.Is(context.Cause(ctx), context.Canceled) || errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("stopped %v, cause %v", h.stopped, context.Cause(ctx))
	}
}

func TestWithoutWatch(t *testing.T) {
	ctx := context.Background()
	Touch(ctx)
	Pause(ctx)()
	if ctx.Err() != nil {
		t.Fatal(ctx.Err())
	}
}

// TestRealClock runs the real timer: a context left without progress ends
// (no timing is asserted; the test waits until it does).
func TestRealClock(t *testing.T) {
	ctx, release := WithIdle(t.Context(), time.Millisecond)
	defer release()
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
}

func TestParentCancel(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	ctx, release := WithIdle(parent, time.Hour)
	defer release()
	cancel()
	<-ctx.Done()
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
}
