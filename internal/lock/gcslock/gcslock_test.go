package gcslock_test

import (
	"fmt"
	"testing"

	"github.com/agentstore/agentstore/internal/gcstest"
	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/lock/gcslock"
	"github.com/agentstore/agentstore/internal/lock/locktest"
)

const bucket = "locks"

// TestConformance runs the lock contract's table against the Cloud
// Storage backend on the emulator, one lock object per case.
func TestConformance(t *testing.T) {
	c := gcstest.Client(t, bucket)
	n := 0
	locktest.Run(t, func(t *testing.T) lock.Backend {
		n++
		return gcslock.New(c, bucket, fmt.Sprintf("case-%d/prefix/%s", n, lock.StoreLockName))
	})
}
