//go:build integration

package workspace

import "testing"

// TestQuotaRaceOverwriteLong is TestQuotaRaceOverwrite for 1,000 rounds
// (run it under -race).
func TestQuotaRaceOverwriteLong(t *testing.T) {
	raceOverwrite(t, 1000)
}
