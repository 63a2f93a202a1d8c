//go:build integration

package adkfile_test

import (
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
)

// TestConformanceUsers runs the conformance suite on ADK JS's users/ tree
// of the layout, whose one app is the store app: the same suite as on the
// apps/ tree (TestConformance, default tier, which also runs its quick
// subtests on this tree), a few minutes under -race, hence the
// integration tier.
func TestConformanceUsers(t *testing.T) {
	artifactstest.Run(t, conformanceHarness(adkfile.VariantUsers, "store-app"))
}
