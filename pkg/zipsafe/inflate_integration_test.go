//go:build integration

package zipsafe

import "testing"

// TestInflateMatchesStandardLibraryFull is TestInflateMatchesStandardLibrary
// at full sizes (a 3 MB text, 2 MB of zeros): half a minute under -race.
func TestInflateMatchesStandardLibraryFull(t *testing.T) {
	testInflateMatchesStandardLibrary(t, fullInflate)
}

// TestInflateTruncatedAndChangedFull is TestInflateTruncatedAndChanged at
// full sizes: every truncation of 20 KB of text deflated at four levels,
// and 2,000 one-byte changes each, minutes under -race.
func TestInflateTruncatedAndChangedFull(t *testing.T) {
	testInflateTruncatedAndChanged(t, fullInflate)
}
