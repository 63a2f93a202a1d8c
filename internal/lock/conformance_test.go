package lock_test

import (
	"path/filepath"
	"testing"

	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/lock/locktest"
)

// TestFileConformance runs the lock contract's table against the file
// backend, one temporary directory per case.
func TestFileConformance(t *testing.T) {
	locktest.Run(t, func(t *testing.T) lock.Backend {
		return lock.File(filepath.Join(t.TempDir(), lock.StoreLockName))
	})
}
