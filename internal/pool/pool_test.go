package pool_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

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
		var ran atomic.Int64
		err := pool.Each(context.Background(), workers, pool.Indexes(10_000), func(i int) error {
			ran.Add(1)
			if i == 5 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Errorf("workers %d: err %v, want boom", workers, err)
		}
		// Each worker finishes at most the item it holds once one failed.
		if n := ran.Load(); n > 5+1+int64(workers) {
			t.Errorf("workers %d: %d items ran after the failure at item 5", workers, n)
		}
	}
}

func TestEachStopsWhenCanceled(t *testing.T) {
	for _, workers := range []int{1, 4} {
		ctx, cancel := context.WithCancel(context.Background())
		var ran atomic.Int64
		err := pool.Each(ctx, workers, pool.Indexes(10_000), func(i int) error {
			if ran.Add(1) == 3 {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("workers %d: err %v, want canceled", workers, err)
		}
		if n := ran.Load(); n > 3+int64(workers) {
			t.Errorf("workers %d: %d items ran, want at most %d", workers, n, 3+workers)
		}
	}
	if err := pool.Each(context.Background(), 2, []int(nil), func(int) error { return errors.New("never") }); err != nil {
		t.Errorf("no items: %v", err)
	}
}
