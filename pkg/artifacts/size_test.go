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

// TestTallySaturates: plausible sizes that together pass math.MaxInt64
// saturate; impossible ones are problems; unreadable ones are neither.
func TestTallySaturates(t *testing.T) {
	var n artifacts.NameUsage
	for v := int64(1); v <= 1100; v++ {
		n.Records = append(n.Records, artifacts.Record{Version: v, Size: artifacts.MaxPlausibleSize})
	}
	n.Records = append(n.Records, artifacts.Record{Version: 1101, Size: math.MaxInt64})
	n.Problems = []artifacts.Problem{
		{Version: 1102, Code: artifacts.CodeIO},
		{Version: 1103, Code: artifacts.CodePermission},
		{Version: 1104},
		{Version: 1105, Code: artifacts.CodeUnsafeStore},
	}
	var tl artifacts.Tally
	tl.AddName(n)
	want := artifacts.Tally{Versions: 1100, Bytes: math.MaxInt64, Problems: 3, Unreadable: 2, UnreadableCode: artifacts.CodePermission}
	if tl != want {
		t.Fatalf("%+v, want %+v", tl, want)
	}
	var sum artifacts.Tally
	sum.Add(tl)
	sum.Add(tl)
	if sum.Bytes != math.MaxInt64 || sum.Versions != 2200 || sum.Unreadable != 4 {
		t.Fatalf("sum %+v", sum)
	}
}
