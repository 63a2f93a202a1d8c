package cmdutil

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
	"github.com/agentstore/agentstore/pkg/repair"
)

// StoreLockFile is the lock that keeps maintenance runs (fs repair,
// artifacts prune) off one filesystem store at once, in the store's root
// beside v1/ (or scope-shards/), so that no scan ever meets it. A gs://
// store is locked by the object repair.GCSLockObject beside its artifacts.
const StoreLockFile = ".agentstore-repair.lock"

// StoreLock is a held store lock.
type StoreLock struct {
	l       *lock.Lock // nil for a gs:// store
	release func() error
	cancel  context.CancelFunc
}

// LockStore takes the store lock fs repair takes, for purpose ("artifacts
// prune"): StoreLockFile in the root of a filesystem store, the lock
// object of a gs:// store. A lock held by another process is a
// *LockedError (exit status 5) naming the unlock command. The returned
// context is canceled when a filesystem lock is lost (its heartbeat could
// not be written, or another process took it over). stallAfter, when
// positive, stops renewing the heartbeat once Progress has not been called
// for that long.
func LockStore(ctx context.Context, st *artifacts.Store, u StoreURI, purpose string, stallAfter time.Duration, logger *slog.Logger) (context.Context, *StoreLock, error) {
	var gst *gcsstore.Store
	if st.As(&gst) {
		release, err := repair.LockGCS(ctx, gst, purpose, 0)
		if err != nil {
			return nil, nil, err
		}
		return ctx, &StoreLock{release: release}, nil
	}
	if u.Scheme != artifacts.SchemeFile {
		return nil, nil, CodedError(CodeUnsupportedStore, fmt.Errorf("%s cannot lock the %s store %s", purpose, st.Capabilities().Layout, u.String()))
	}
	l, err := lock.Acquire(filepath.Join(u.Root, StoreLockFile), lock.Options{Purpose: purpose, StallAfter: stallAfter})
	if err != nil {
		return nil, nil, LockHeld(err, "--store", u.Root)
	}
	if prev, ok := l.TookOver(); ok && logger != nil {
		logger.Info(TakeoverMessage(prev))
	}
	lctx, cancel := l.Context(ctx)
	return lctx, &StoreLock{l: l, release: l.Release, cancel: cancel}, nil
}

// Refresh renews a filesystem lock's heartbeat now, failing when the lock
// was lost; call it right before the first change.
func (s *StoreLock) Refresh() error {
	if s.l == nil {
		return nil
	}
	s.l.Progress()
	return s.l.Refresh()
}

// Progress records that the run is making progress (see lock.Options'
// StallAfter).
func (s *StoreLock) Progress() {
	if s.l != nil {
		s.l.Progress()
	}
}

// Release releases the lock.
func (s *StoreLock) Release() error {
	if s.cancel != nil {
		s.cancel()
	}
	return s.release()
}
