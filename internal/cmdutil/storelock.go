package cmdutil

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// StoreLockFile is the lock that keeps maintenance runs (fs repair,
// artifacts prune) off one filesystem store at once, in the store's root
// beside v1/ (or scope-shards/), so that no scan ever meets it. A gs://
// store is locked by the object of the same name below its prefix (see
// artifacts.Locker).
const StoreLockFile = lock.StoreLockName

// StoreLock is a held store lock.
type StoreLock struct {
	l      *lock.Lock
	cancel context.CancelFunc
}

// LockStore takes the store lock of st for purpose ("fs repair",
// "artifacts prune"), wherever its driver keeps it (artifacts.Locker: a
// file in a filesystem store's root, an object of a gs:// store), through
// the one lock contract of package lock. A lock held by another process is
// a *LockedError (exit status 5) naming the unlock command that shows it;
// a store that cannot be locked is CodeUnsupportedStore. Every stale-lock
// takeover is logged at info level. The returned context is cancelled,
// with a cause wrapping lock.ErrLost, when the lock is lost (its heartbeat
// could not be written, or another process took it over or removed it).
// stallAfter, when positive, stops renewing the heartbeat once Progress
// has not been called for that long.
func LockStore(ctx context.Context, st *artifacts.Store, u StoreURI, purpose string, stallAfter time.Duration, logger *slog.Logger) (context.Context, *StoreLock, error) {
	b, err := st.StoreLock()
	if err != nil {
		return nil, nil, CodedError(CodeUnsupportedStore, fmt.Errorf("%s cannot lock the %s store %s", purpose, st.Capabilities().Layout, u.String()))
	}
	l, err := lock.AcquireBackend(ctx, b, lock.Options{Purpose: purpose, StallAfter: stallAfter})
	if err != nil {
		return nil, nil, LockHeld(err, StoreUnlockArgs(u, st.Capabilities().Layout)...)
	}
	if prev, ok := l.TookOver(); ok && logger != nil {
		logger.Info(TakeoverMessage(prev))
	}
	lctx, cancel := l.Context(ctx)
	return lctx, &StoreLock{l: l, cancel: cancel}, nil
}

// StoreUnlockArgs returns the arguments of "agentstore unlock" for the
// store lock of the store u of layout: the directory of a filesystem
// store (its lock file is in its root whatever the layout), the gs:// URI
// and layout of a Cloud Storage store (whose lock object lies where the
// layout keeps it).
func StoreUnlockArgs(u StoreURI, layout string) []string {
	if u.Scheme == SchemeFile {
		return []string{"--store", u.Root}
	}
	return []string{"--store", u.String(), "--layout", layout}
}

// Refresh renews the lock's heartbeat now, failing when the lock was
// lost; call it right before the first change.
func (s *StoreLock) Refresh() error {
	s.l.Progress()
	return s.l.Refresh()
}

// Progress records that the run is making progress (see lock.Options'
// StallAfter).
func (s *StoreLock) Progress() {
	s.l.Progress()
}

// Release releases the lock.
func (s *StoreLock) Release() error {
	s.cancel()
	return s.l.Release()
}
