//go:build integration

package mcpfs

import "testing"

// TestAttackLargeTreeFull is TestAttackLargeTree at full size: a
// 100,000-file tree, an entry limit of 20,000 (40 s under -race).
func TestAttackLargeTreeFull(t *testing.T) {
	testAttackLargeTree(t, 100, 20_000)
}
