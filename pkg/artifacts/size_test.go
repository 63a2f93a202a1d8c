package artifacts_test

import (
	"math"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

func TestAddSize(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{
		{1, 2, 3},
		{math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{math.MaxInt64 - 1, 1, math.MaxInt64},
		{math.MaxInt64 - 1, 2, math.MaxInt64},
		{5, -7, 5},
		{0, 0, 0},
	} {
		if got := artifacts.AddSize(c.a, c.b); got != c.want {
			t.Errorf("AddSize(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestPlausibleSize(t *testing.T) {
	for n, want := range map[int64]bool{0: true, 1 << 53: true, 1<<53 + 1: false, math.MaxInt64: false, -1: false} {
		if got := artifacts.PlausibleSize(n); got != want {
			t.Errorf("PlausibleSize(%d) = %v", n, got)
		}
	}
}
