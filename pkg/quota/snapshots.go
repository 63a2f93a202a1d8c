package quota

import (
	"context"
	"fmt"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// More limits a report names as binding (SnapshotUsage.BindingLimit).
const (
	// LimitStoreBytes is a session's store-bytes ceiling
	// (Options.MaxStoreBytes, agentstore mcp --ws-max-store-bytes).
	LimitStoreBytes = "store_bytes"
	// LimitPayload is the layout's largest payload, which a zip snapshot
	// (one artifact holding the whole workspace) cannot pass.
	LimitPayload = "payload"
)

// SnapshotUsage is what one session scope's workspace snapshots hold and
// how close they are to the limits that would stop the next one.
type SnapshotUsage struct {
	Scope artifacts.Scope `json:"scope"`
	// Format is "incremental", "zip" or "both": the formats the scope
	// holds snapshots of.
	Format string `json:"format"`
	// Checkpoints counts the incremental snapshots kept, MaxSnapshots is
	// how many a session keeps (the retention measured against) and
	// SnapshotHeadroom how many more are kept before the oldest go.
	Checkpoints      int `json:"checkpoints"`
	MaxSnapshots     int `json:"max_snapshots"`
	SnapshotHeadroom int `json:"snapshot_headroom"`
	// Packs counts the packs; UnreferencedPacks and UnreferencedBytes the
	// packs no manifest names (a crashed or refused writer's: fs repair
	// removes them past its grace period), -1 when a manifest does not
	// read (then which packs are used is not known).
	Packs             int   `json:"packs"`
	UnreferencedPacks int   `json:"unreferenced_packs"`
	UnreferencedBytes int64 `json:"unreferenced_bytes"`
	// CheckpointBytes is the bytes of the manifests and packs, LiveBytes
	// the packs' bytes the latest manifest uses, DeadBytes the rest.
	CheckpointBytes int64 `json:"checkpoint_bytes"`
	LiveBytes       int64 `json:"live_bytes"`
	DeadBytes       int64 `json:"dead_bytes"`
	// ZipVersions and ZipBytes are the workspace.zip versions; ZipLargest
	// the largest, ZipReservations the version numbers its name used of
	// ReservationCapacity (0: no ceiling).
	ZipVersions         int   `json:"zip_versions"`
	ZipBytes            int64 `json:"zip_bytes"`
	ZipLargest          int64 `json:"zip_largest"`
	ZipReservations     int   `json:"zip_reservations"`
	ReservationCapacity int   `json:"reservation_capacity"`
	// PayloadCapacity is the layout's largest payload (0: none).
	PayloadCapacity int64 `json:"payload_capacity"`
	// StoredBytes is every byte of the scope (snapshots and the session's
	// other artifacts): what the store-bytes ceiling charges.
	StoredBytes int64 `json:"stored_bytes"`
	// MaxStoreBytes is the ceiling measured against (0: none);
	// StoreHeadroom what is left under it, -1 without one.
	MaxStoreBytes int64 `json:"max_store_bytes"`
	StoreHeadroom int64 `json:"store_headroom"`
	// BindingLimit is LimitStoreBytes, LimitPayload or LimitReservations
	// (the latter two only for zip snapshots, which
	// Options.SnapshotFormat writes), whichever is closest;
	// UsagePercent how close.
	BindingLimit string  `json:"binding_limit"`
	UsagePercent float64 `json:"usage_percent"`
	// Warn and Over say whether UsagePercent crossed the thresholds;
	// Warning, set with Warn, says what stops the next snapshot and what
	// to do.
	Warn    bool   `json:"warn"`
	Over    bool   `json:"over"`
	Warning string `json:"warning,omitempty"`

	pct  float64
	what string // the binding limit's Warning
}

// snapshotRow returns the snapshot row of a walked session scope, or nil
// when it holds no snapshot of either format.
func snapshotRow(ctx context.Context, st *artifacts.Store, u artifacts.ScopeUsage, row ScopeUsage, caps artifacts.Capabilities, opts Options) (*SnapshotUsage, error) {
	if !u.Known || u.Scope.Kind != artifacts.KindSession {
		return nil, nil
	}
	s := &SnapshotUsage{Scope: u.Scope, MaxSnapshots: opts.MaxSnapshots, MaxStoreBytes: opts.MaxStoreBytes, StoreHeadroom: -1,
		StoredBytes: row.Bytes}
	if s.MaxSnapshots <= 0 {
		s.MaxSnapshots = checkpoint.DefaultMaxSnapshots
	}
	if !caps.NoCeilings {
		s.ReservationCapacity = caps.VersionCapacity()
	}
	s.PayloadCapacity = max(caps.MaxArtifactBytes, 0)
	for _, n := range u.Names {
		if n.Name != workspace.SnapshotName {
			continue
		}
		s.ZipReservations = n.Reservations
		for _, r := range n.Records {
			s.ZipVersions++
			s.ZipBytes += r.Size
			s.ZipLargest = max(s.ZipLargest, r.Size)
		}
	}
	incremental := checkpoint.HasCheckpoints(u)
	switch {
	case incremental && s.ZipVersions > 0:
		s.Format = "both"
	case incremental:
		s.Format = string(workspace.FormatIncremental)
	case s.ZipVersions > 0:
		s.Format = string(workspace.FormatZip)
	default:
		return nil, nil
	}
	if incremental {
		refs, err := checkpoint.ReadRefs(ctx, st, u.Scope, zipsafe.Limits{})
		if err != nil {
			if ctx.Err() != nil || !readProblem(err) {
				return nil, err
			}
			s.UnreferencedPacks = -1
		} else {
			s.Checkpoints, s.Packs = len(refs.Manifests), len(refs.Packs)
			s.UnreferencedPacks = -1
			if len(refs.Unread) == 0 {
				s.UnreferencedPacks = 0
				for _, r := range refs.Unreferenced() {
					s.UnreferencedPacks++
					s.UnreferencedBytes += r.Size
				}
			}
		}
		if c := row.Checkpoints; c != nil {
			s.CheckpointBytes, s.LiveBytes, s.DeadBytes = c.StoredBytes, c.LiveBytes, c.DeadBytes
		}
	}
	s.SnapshotHeadroom = max(s.MaxSnapshots-s.Checkpoints, 0)

	// The closest limit. Payload and reservations stop zip snapshots
	// only (incremental ones split packs and roll names over).
	s.BindingLimit = LimitStoreBytes
	if s.MaxStoreBytes > 0 {
		s.StoreHeadroom = max(s.MaxStoreBytes-s.StoredBytes, 0)
		s.pct = percent(s.StoredBytes, s.MaxStoreBytes)
		s.what = fmt.Sprintf("%s of snapshots and artifacts, of a store-bytes ceiling of %s: the oldest checkpoints go first, then snapshots are refused (QUOTA_EXCEEDED); raise --ws-max-store-bytes or make the workspace smaller", sizeText(s.StoredBytes), sizeText(s.MaxStoreBytes))
	}
	if opts.SnapshotFormat == workspace.FormatZip && s.ZipVersions > 0 {
		if p := percent(s.ZipLargest, s.PayloadCapacity); p > s.pct {
			s.BindingLimit, s.pct = LimitPayload, p
			s.what = fmt.Sprintf("%s has a %s version, of the layout's largest payload of %s: a larger workspace cannot be snapshotted as a zip; use --snapshot-format incremental (or auto)", workspace.SnapshotName, sizeText(s.ZipLargest), sizeText(s.PayloadCapacity))
		}
		if p := percent(int64(s.ZipReservations), int64(s.ReservationCapacity)); p > s.pct {
			s.BindingLimit, s.pct = LimitReservations, p
			s.what = fmt.Sprintf("%s used %d of its %d version numbers, which deletes never give back: then it takes no snapshot; use --snapshot-format incremental (or auto), whose names roll over", workspace.SnapshotName, s.ZipReservations, s.ReservationCapacity)
		}
	}
	s.UsagePercent = round2(s.pct)
	return s, nil
}

// readProblem reports whether err is a scope whose checkpoints do not
// read (reported, not fatal to the report).
func readProblem(err error) bool {
	switch artifacts.CodeOf(err) {
	case artifacts.CodeCorrupt, artifacts.CodeIO, artifacts.CodePermission, artifacts.CodeNotFound:
		return true
	}
	return false
}

func (s SnapshotUsage) describe() string {
	return s.Scope.String() + " snapshots: " + s.what
}

// sizeText is n bytes in words for a warning.
func sizeText(n int64) string { return fmt.Sprintf("%d bytes", n) }
