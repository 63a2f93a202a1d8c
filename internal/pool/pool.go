// Package pool is the module's one worker-pool idiom: a fixed number of
// goroutines taking items in order from a shared counter.
package pool

import (
	"context"
	"sync"
	"sync/atomic"
)

// Each runs fn on every item with up to workers goroutines (with one
// worker, or one item, in the caller's goroutine). Items are handed out in
// order; once ctx is done or fn has failed no further item is started. It
// returns fn's first error, else ctx.Err() when ctx ended, else nil.
func Each[T any](ctx context.Context, workers int, items []T, fn func(T) error) error {
	workers = min(workers, len(items))
	if workers <= 1 {
		for _, it := range items {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(it); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	var (
		next  atomic.Int64
		stop  atomic.Bool
		once  sync.Once
		first error
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(len(items)) {
					return
				}
				if err := fn(items[i]); err != nil {
					once.Do(func() { first = err })
					stop.Store(true)
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// Indexes returns 0..n-1, for running Each over positions.
func Indexes(n int) []int {
	idx := make([]int, max(n, 0))
	for i := range idx {
		idx[i] = i
	}
	return idx
}
