//go:build integration

package workspace

import "testing"

// TestGroupCommit1000 is TestGroupCommit with 1,000 concurrent writes:
// one snapshot publishes them all.
func TestGroupCommit1000(t *testing.T) { groupCommit(t, 1000) }
