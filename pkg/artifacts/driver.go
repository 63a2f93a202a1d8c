package artifacts

import (
	"context"
	"io"

	"github.com/agentstore/agentstore/internal/lock"
)

// Driver is what one storage layout implements beneath the portable Store:
// only the layout. Callers never use a Driver directly; they wrap it with
// NewStore, which checks every argument before a Driver method runs.
//
// Every method may rely on what Store checked before calling it:
//   - the scope is valid and of a kind in Capabilities.ScopeKinds;
//   - the name is valid and at most Capabilities.MaxNameBytes long;
//   - Put's PutOptions.MIMEType is set and valid, its metadata valid, and
//     the record it makes fits in Capabilities.MaxRecordBytes;
//   - a version is 0 (the latest) or positive; a range's offset is not
//     negative and its length is -1 or more;
//   - ListOptions.Limit is the page size to use, in 1..MaxPageLimit, and
//     ListOptions.Cursor is empty or valid (a name for ListNames, a
//     version number for ListVersions; see VersionCursor);
//   - a Selector's kind is known and its version positive when it selects
//     one (resolve it against the published versions with
//     Selector.Resolve).
//
// The contract a driver keeps (checked by package artifactstest for every
// driver, against the facts its Capabilities declare):
//   - Put makes a new version numbered as Capabilities declares
//     (FirstVersion first; never reused after a delete unless
//     ReusesVersions).
//   - A version is visible (to Get, the listings and Delete) only once its
//     record is published, and the record is published last.
//   - Get and GetRange return bytes through a Reader (NewReader) that
//     reports CodeCorrupt instead of io.EOF when the payload's size or
//     SHA-256 does not match the record.
//   - A deadline is checked before each publication step and bounds every
//     I/O call.
//   - Errors are *Error values with a stable Code naming the artifact.
//
// Optional abilities are further interfaces a driver may implement:
// ScopeLister, Walker, PayloadOpener, Locker; Store reports CodeUnsupported for
// the ones a driver lacks.
type Driver interface {
	// Put streams r into a new version of name in scope and returns its
	// published record.
	Put(ctx context.Context, scope Scope, name string, r io.Reader, opts PutOptions) (Record, error)
	// Get opens a version (Latest for the latest) for verified reading.
	Get(ctx context.Context, scope Scope, name string, version int64) (*Reader, error)
	// GetRange opens length bytes at offset of a version (0 means the
	// latest); length -1 reads to the end. See Capabilities.VerifiedRanges.
	GetRange(ctx context.Context, scope Scope, name string, version int64, offset, length int64) (*Reader, error)
	// Stat returns the record of a version (Latest for the latest) without
	// reading its payload.
	Stat(ctx context.Context, scope Scope, name string, version int64) (Record, error)
	// ListNames returns a page of the scope's names that have at least one
	// published version, sorted bytewise, after opts.Cursor.
	ListNames(ctx context.Context, scope Scope, opts ListOptions) (NamePage, error)
	// ListVersions returns a page of a name's published records, by
	// ascending version, after opts.Cursor (a version number).
	ListVersions(ctx context.Context, scope Scope, name string, opts ListOptions) (VersionPage, error)
	// Delete removes the selected published versions and returns their
	// records.
	Delete(ctx context.Context, scope Scope, name string, sel Selector) ([]Record, error)
	// Capabilities declares the layout's facts and limits. It must return
	// the same value for the life of the driver.
	Capabilities() Capabilities
}

// ScopeLister is implemented by drivers that can enumerate every scope they
// hold (by reading records, since directories and keys are hashed).
type ScopeLister interface {
	// ListScopes returns every scope that has at least one published version.
	ListScopes(ctx context.Context) ([]Scope, error)
}

// PayloadOpener is implemented by drivers that can open the payload of a
// record already read (by Walk, say) without reading the record again.
// The Reader verifies the payload against rec exactly as Get's does.
type PayloadOpener interface {
	OpenPayload(ctx context.Context, rec Record) (*Reader, error)
}

// Walker is implemented by drivers that can walk every scope and name they
// hold, reading records but never payloads. Listings of a whole store,
// quota reports and verification are built on it.
type Walker interface {
	// Walk calls fn once per scope directory or prefix, in no set order.
	// Walk stops at the first error fn returns and returns it.
	Walk(ctx context.Context, fn func(ScopeUsage) error) error
}

// ScopeSlotCounter is implemented by drivers whose layout claims a
// capacity slot for every scope it ever held (the v1 filesystem layout's
// slot files), so that the slots, not the scopes Walk finds, decide how
// much scope capacity is used.
type ScopeSlotCounter interface {
	// ScopeSlots returns the number of scope slots ever taken.
	ScopeSlots(ctx context.Context) (int, error)
}

// NameSlotCounter is implemented by drivers whose layout claims a
// capacity slot for every name a scope ever held (the Erlang layouts):
// deleting a name does not give its slot back.
type NameSlotCounter interface {
	// NameSlots returns the number of name slots the scope ever took
	// (0 for a scope the store has never held).
	NameSlots(ctx context.Context, scope Scope) (int, error)
}

// Locker is implemented by drivers whose stores maintenance runs (fs
// repair, artifacts prune, unlock) can lock: the driver says where its
// layout keeps the lock, out of sight of every listing and scan of the
// layout (a file in a filesystem store's root, an object below a Cloud
// Storage store's prefix), and package lock does the rest, the same way
// for every backend.
type Locker interface {
	// StoreLock returns the backend of the store's maintenance lock.
	StoreLock() lock.Backend
}
