package gcsstore

import (
	"path"

	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/lock/gcslock"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.Locker = (*Store)(nil)

// RepairLockObject is the object, below a store's prefix, that a
// maintenance run (fs repair, artifacts prune) of a gs:// store holds
// while it runs. It lies beside PREFIX/s/, where the layout keeps
// artifacts, so no reader of the store ever sees it.
const RepairLockObject = lock.StoreLockName

// StoreLock returns the store's maintenance lock: the object
// PREFIX/RepairLockObject, kept by package gcslock (heartbeat renewed on
// the condition of the generation held; see package lock).
func (st *Store) StoreLock() lock.Backend {
	return gcslock.New(st.Client(), st.Bucket(), path.Join(st.Prefix(), RepairLockObject))
}
