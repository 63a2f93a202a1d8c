package artifactstest

import (
	"slices"
	"strings"
	"testing"
)

// TestSubset: Harness.Subtests picks the named subtests in the suite's
// order, QuickSubtests names only subtests of the suite, and a name that
// is not one is refused rather than quietly running nothing.
func TestSubset(t *testing.T) {
	all := suiteTests()
	quick, err := subset(all, QuickSubtests)
	if err != nil {
		t.Fatalf("QuickSubtests: %v", err)
	}
	if len(quick) != len(QuickSubtests) || len(quick) >= len(all) {
		t.Fatalf("QuickSubtests picks %d of %d subtests, want %d", len(quick), len(all), len(QuickSubtests))
	}
	got, err := subset(all, []string{"NotFound", "Capabilities"})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, tc := range got {
		names = append(names, tc.name)
	}
	if !slices.Equal(names, []string{"Capabilities", "NotFound"}) {
		t.Errorf("subset: %v, want [Capabilities NotFound] (the suite's order)", names)
	}
	if _, err := subset(all, []string{"RoundTrip", "Roundtrip"}); err == nil || !strings.Contains(err.Error(), `"Roundtrip"`) {
		t.Errorf("subset with a misspelt name: %v, want an error naming it", err)
	}
}
