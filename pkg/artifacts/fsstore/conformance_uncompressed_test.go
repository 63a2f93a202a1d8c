//go:build integration

package fsstore_test

import (
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// TestConformanceUncompressedRecords runs the conformance suite over
// records written without compression, the form the GCS adapter writes;
// TestConformance (default tier) runs it over the default records.
func TestConformanceUncompressedRecords(t *testing.T) {
	artifactstest.Run(t, fsHarness(fsstore.Options{UncompressedRecords: true}))
}
