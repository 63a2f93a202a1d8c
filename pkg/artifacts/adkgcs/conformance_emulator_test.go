//go:build integration

package adkgcs_test

import "testing"

// TestConformanceEmulator runs the whole conformance suite on both
// numberings of the layout against the in-process emulator: minutes under
// -race (every put lists the name's versions), hence the integration
// tier; TestConformance runs its quick subtests by default.
func TestConformanceEmulator(t *testing.T) {
	runConformance(t, nil)
}
