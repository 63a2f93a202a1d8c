package adkgcs

import (
	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/lock/gcslock"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.Locker = (*Store)(nil)

// LockObject is the object, directly below the store's root, that a
// maintenance run (fs repair, artifacts prune) of a google-adk-gcs store
// holds while it runs. Having no slash, it never parses as an ADK version
// object ({app}/{user}/{session}/{filename}/{version}): ADK never lists it
// as an artifact, and the listings and walks of this package skip it
// instead of reporting it as foreign.
const LockObject = lock.StoreLockName

// StoreLock returns the store's maintenance lock: the object ROOT/LockObject,
// kept by package gcslock.
func (s *Store) StoreLock() lock.Backend {
	return gcslock.New(s.client, s.bucket, s.root+LockObject)
}

// isLockObject reports whether rel (an object name relative to the root)
// is the store's lock object.
func isLockObject(rel string) bool { return rel == LockObject }
