//go:build integration

package cmd

import "testing"

// TestMCPWorkedExampleFormats runs the design's worked example
// (workedExample) with each snapshot format: the pod eviction, the
// hydration on first touch and the 12th 900 KB write refused with
// QUOTA_EXCEEDED and 100,000 bytes remaining hold whether turn one's
// snapshot is a workspace.zip or a manifest and its packs.
func TestMCPWorkedExampleFormats(t *testing.T) {
	for _, format := range []string{"zip", "incremental"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			workedExample(t, format)
		})
	}
}
