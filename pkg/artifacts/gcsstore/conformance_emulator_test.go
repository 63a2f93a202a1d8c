//go:build integration

package gcsstore_test

import (
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
)

// TestConformanceEmulator runs the whole conformance suite against the
// in-process emulator, the concurrency case at full size (8 writers x 50
// puts to one name): minutes under -race, hence the integration tier;
// TestConformance runs its quick subtests by default.
func TestConformanceEmulator(t *testing.T) {
	artifactstest.Run(t, harness())
}
