package repair

import (
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// GCSLockObject is the object, below a store's prefix, that a repair of a
// gs:// store holds while it runs (gcsstore.RepairLockObject; the store's
// artifacts.Locker backend, see package lock).
const GCSLockObject = gcsstore.RepairLockObject
