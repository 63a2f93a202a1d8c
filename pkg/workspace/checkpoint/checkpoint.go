package checkpoint

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// Defaults of Options.
const (
	DefaultMaxSnapshots = 100
	DefaultPackBytes    = 16 << 20
	DefaultCompactBelow = 0.5
	DefaultRacyWindow   = time.Second
	DefaultParallel     = 4
)

// Options configure the checkpoints of one session scope.
type Options struct {
	// Store holds the artifacts; Scope is the session scope.
	Store *artifacts.Store
	Scope artifacts.Scope
	// Limits bound a tree written and a manifest read (zero fields:
	// zipsafe's defaults), as they bound zip snapshots.
	Limits zipsafe.Limits
	// MaxSnapshots is how many manifests are kept (default
	// DefaultMaxSnapshots); older ones are deleted after each snapshot.
	MaxSnapshots int
	// PackBytes is the size at which a pack is published (default
	// DefaultPackBytes, at most the store's MaxArtifactBytes).
	PackBytes int64
	// CompactBelow is the live share of an older pack under which a
	// snapshot copies that pack's live blobs into its own pack (default
	// DefaultCompactBelow; negative: never).
	CompactBelow float64
	// RacyWindow: a file whose recorded modification time is within this
	// much of its manifest's creation is read again by the next snapshot
	// even when its size and time are unchanged, since a change in the
	// same clock tick would not show (default DefaultRacyWindow).
	RacyWindow time.Duration
	// Parallel is the number of packs read at once by Restore (default
	// DefaultParallel).
	Parallel int
	// MaxStoredBytes, when positive, bounds the bytes the session's
	// checkpoints (manifests and packs) and OtherBytes hold in the store at
	// any time: a snapshot that would pass it first frees what it can
	// (packs no manifest names, past the repair grace period, then the
	// oldest checkpoints, never the latest) and else is refused with
	// CodeQuotaExceeded (see budget.go).
	MaxStoredBytes int64
	// OtherBytes is what the scope holds besides the format's artifacts
	// (zip snapshots, deliverables), charged against MaxStoredBytes too.
	OtherBytes int64
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Checkpoints reads and writes the incremental snapshots of one session
// scope. It holds no state between calls and is safe for concurrent use;
// two writers of one scope (in one process or many) are told apart at
// publication (see Snapshot).
type Checkpoints struct {
	opts Options
	caps artifacts.Capabilities
}

// New returns the checkpoints of opts.Scope in opts.Store. A nil store or
// a scope that is not a session scope is CodeInvalidArgument.
func New(opts Options) (*Checkpoints, error) {
	const op = "checkpoint"
	if opts.Store == nil {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "no store")
	}
	if err := opts.Scope.Validate(); err != nil {
		return nil, err
	}
	if opts.Scope.Kind != artifacts.KindSession {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "checkpoints live in a session scope, not %s", opts.Scope)
	}
	caps := opts.Store.Capabilities()
	if opts.MaxSnapshots <= 0 {
		opts.MaxSnapshots = DefaultMaxSnapshots
	}
	if opts.PackBytes <= 0 {
		opts.PackBytes = DefaultPackBytes
	}
	if caps.MaxArtifactBytes > 0 && opts.PackBytes > caps.MaxArtifactBytes {
		opts.PackBytes = caps.MaxArtifactBytes
	}
	if opts.CompactBelow == 0 {
		opts.CompactBelow = DefaultCompactBelow
	}
	if opts.RacyWindow <= 0 {
		opts.RacyWindow = DefaultRacyWindow
	}
	if opts.Parallel <= 0 {
		opts.Parallel = DefaultParallel
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Limits = opts.Limits.Resolved()
	return &Checkpoints{opts: opts, caps: caps}, nil
}

// Scope returns the session scope.
func (c *Checkpoints) Scope() artifacts.Scope { return c.opts.Scope }

// List returns every manifest of the scope, oldest first.
func (c *Checkpoints) List(ctx context.Context) ([]Ref, error) {
	ls, err := listGens(ctx, c.opts.Store, c.opts.Scope, ManifestName, kindManifest)
	if err != nil {
		return nil, err
	}
	refs := make([]Ref, len(ls))
	for i, l := range ls {
		refs[i] = l.Ref
	}
	return refs, nil
}

// Latest returns the newest manifest of the scope and its reference, or
// CodeNotFound when the scope has none.
func (c *Checkpoints) Latest(ctx context.Context) (Ref, *Manifest, error) {
	ls, err := listGens(ctx, c.opts.Store, c.opts.Scope, ManifestName, kindManifest)
	if err != nil {
		return Ref{}, nil, err
	}
	if len(ls) == 0 {
		return Ref{}, nil, artifacts.Errorf(artifacts.CodeNotFound, "checkpoint latest", nil, "no incremental snapshot").With(c.opts.Scope, ManifestName, artifacts.NoVersion)
	}
	ref := ls[len(ls)-1].Ref
	m, err := c.Load(ctx, ref)
	return ref, m, err
}

// LatestRecord returns the store's record of the newest manifest without
// reading it, or CodeNotFound when the scope has none.
func (c *Checkpoints) LatestRecord(ctx context.Context) (artifacts.Record, error) {
	ls, err := listGens(ctx, c.opts.Store, c.opts.Scope, ManifestName, kindManifest)
	if err != nil {
		return artifacts.Record{}, err
	}
	if len(ls) == 0 {
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeNotFound, "checkpoint latest", nil, "no incremental snapshot").With(c.opts.Scope, ManifestName, artifacts.NoVersion)
	}
	return ls[len(ls)-1].rec, nil
}

// Load reads and checks one manifest (see Decode).
func (c *Checkpoints) Load(ctx context.Context, ref Ref) (*Manifest, error) {
	if !isName(ref.Name, ManifestName) {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "checkpoint load", nil, "%q is not a manifest name", ref.Name)
	}
	rd, err := c.opts.Store.Get(ctx, c.opts.Scope, ref.Name, ref.Version)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if rd.Record().Size > MaxManifestBytes {
		return nil, artifacts.Errorf(artifacts.CodeCorrupt, "checkpoint load", nil, "manifest of %d bytes", rd.Record().Size).With(c.opts.Scope, ref.Name, ref.Version)
	}
	b, err := readAll(rd, rd.Record().Size)
	if err != nil {
		return nil, err
	}
	m, err := Decode(b, c.opts.Limits)
	if err != nil {
		if e, ok := err.(*artifacts.Error); ok {
			return nil, e.With(c.opts.Scope, ref.Name, ref.Version)
		}
		return nil, err
	}
	return m, nil
}

// readAll reads a verified payload of n bytes whole; the Reader reports a
// payload that does not match its record as an error, never as io.EOF.
func readAll(rd io.Reader, n int64) ([]byte, error) {
	b := make([]byte, 0, n)
	buf := bytes.NewBuffer(b)
	if _, err := buf.ReadFrom(rd); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
