package pool_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/agentstore/agentstore/internal/pool"
)

func TestEachRunsEveryItemOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 3, 64} {
		items := pool.Indexes(200)
		var mu sync.Mutex
		var seen []int
		err := pool.Each(context.Background(), workers, items, func(i int) error {
			mu.Lock()
			seen = append(seen, i)
			mu.Unlock()
			return nil
		})
		slices.Sort(seen)
		if err != nil || !slices.Equal(seen, items) {
			t.Errorf("workers %d: err %v, ran %d of %d items", workers, err, len(seen), len(items))
		}
	}
}

func TestEachStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	for _, workers := range []int{1, 4} {
		// In a synctest bubble: items 0-4 succeed, item 5 fails, later
		// items wait at a gate. Once every goroutine is blocked, the failure
		// has been recorded; opening the gate then lets each other worker
		// finish the item it holds, and none may start another.
		synctest.Test(t, func(t *testing.T) {
			gate := make(chan struct{})
			var started atomic.Int64
			done := make(chan error, 1)
			go func() {
				done <- pool.Each(context.Background(), workers, pool.Indexes(10_000), func(i int) error {
					started.Add(1)
					switch {
					case i == 5:
						return boom
					case i > 5:
						<-gate
					}
					return nil
				})
			}()
			synctest.Wait()
			held := started.Load()
			close(gate)
			if err := <-done; !errors.Is(err, boom) {
				t.Errorf("workers %d: err %v, want boom", workers, err)
			}
			if n := started.Load(); n != held || n > int64(6+workers-1) {
				t.Errorf("workers %d: %d items started (%d when the failure was recorded), want at most %d and none after", workers, n, held, 6+workers-1)
			}
		})
	}
}

func TestEachStopsWhenCanceled(t *testing.T) {
	for _, workers := range []int{1, 4} {
		ctx, cancel := context.WithCancel(context.Background())
		// Bounded is what starts after the cancel, not what ran before it
		// (the worker that cancels may be descheduled first).
		var ran, after atomic.Int64
		var canceled atomic.Bool
		err := pool.Each(ctx, workers, pool.Indexes(10_000), func(i int) error {
			if canceled.Load() {
				after.Add(1)
			}
			if ran.Add(1) == 3 {
				cancel()
				canceled.Store(true)
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("workers %d: err %v, want canceled", workers, err)
		}
		if n := after.Load(); n > int64(workers-1) {
			t.Errorf("workers %d: %d items started after the cancel, want at most %d", workers, n, workers-1)
		}
	}
	if err := pool.Each(context.Background(), 2, []int(nil), func(int) error { return errors.New("never") }); err != nil {
		t.Errorf("no items: %v", err)
	}
}
