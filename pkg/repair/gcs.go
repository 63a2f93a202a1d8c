package repair

import (
	"context"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// GCSLockObject is the object, below a store's prefix, that a repair of a
// gs:// store holds while it runs (gcsstore.RepairLockObject).
const GCSLockObject = gcsstore.RepairLockObject

// DefaultGCSLockStale is the age past which a lock object is taken to be
// left by a repair that died (gcsstore.DefaultRepairLockStale).
const DefaultGCSLockStale = gcsstore.DefaultRepairLockStale

// LockGCS takes the repair lock of a gs:// store (see
// gcsstore.Store.LockRepair).
func LockGCS(ctx context.Context, st *gcsstore.Store, purpose string, stale time.Duration) (release func() error, err error) {
	return st.LockRepair(ctx, purpose, stale)
}
