package fsstore

import (
	"path/filepath"

	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.Locker = (*Store)(nil)

// StoreLock returns the store's maintenance lock: the file
// lock.StoreLockName in the store's root, beside v1/.
func (s *Store) StoreLock() lock.Backend {
	return lock.File(filepath.Join(s.root, lock.StoreLockName))
}
