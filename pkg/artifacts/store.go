package artifacts

import (
	"context"
	"io"
)

// Store keeps immutable, versioned artifacts in scopes. Every adapter
// (filesystem, Google Cloud Storage, in-memory) implements it and must pass
// the conformance suite in package artifactstest.
//
// The contract every adapter keeps:
//   - Put makes a new version, 1 + the highest version ever reserved for the
//     name; versions are never reused, not even after Delete.
//   - A version is visible (to Get, the listings and Delete) only once its
//     record is published, and the record is published last.
//   - Get and GetRange return bytes through a Reader that reports
//     CodeCorrupt instead of io.EOF when the payload's size or SHA-256 does
//     not match the record; callers must treat any error as failure.
//   - Every call takes a context; a deadline is checked before each
//     publication step and bounds every I/O call.
//   - Errors are *Error values with a stable Code.
type Store interface {
	// Put streams r into a new version of name in scope and returns its
	// published record.
	Put(ctx context.Context, scope Scope, name string, r io.Reader, opts PutOptions) (Record, error)
	// Get opens a version (0 means the latest) for reading.
	Get(ctx context.Context, scope Scope, name string, version int64) (*Reader, error)
	// GetRange opens length bytes at offset of a version (0 means the
	// latest); length -1 reads to the end. See Capabilities.VerifiedRanges.
	GetRange(ctx context.Context, scope Scope, name string, version int64, offset, length int64) (*Reader, error)
	// Stat returns the record of a version (0 means the latest) without
	// reading its payload.
	Stat(ctx context.Context, scope Scope, name string, version int64) (Record, error)
	// ListNames returns a page of the scope's names that have at least one
	// published version, sorted bytewise, after opts.Cursor.
	ListNames(ctx context.Context, scope Scope, opts ListOptions) (NamePage, error)
	// ListVersions returns a page of a name's published records, by
	// ascending version, after opts.Cursor (a version number).
	ListVersions(ctx context.Context, scope Scope, name string, opts ListOptions) (VersionPage, error)
	// Delete removes the selected published versions and returns their
	// records. Reservations stay, so the numbers are never reused.
	Delete(ctx context.Context, scope Scope, name string, sel Selector) ([]Record, error)
	// Capabilities describes the adapter's limits and guarantees.
	Capabilities() Capabilities
}

// ScopeLister is implemented by stores that can enumerate every scope they
// hold (by reading records, since directories and keys are hashed).
type ScopeLister interface {
	// ListScopes returns every scope that has at least one published version.
	ListScopes(ctx context.Context) ([]Scope, error)
}

// PayloadOpener is implemented by stores that can open the payload of a
// record already read (by Walk, say) without reading the record again.
// The Reader verifies the payload against rec exactly as Get's does.
type PayloadOpener interface {
	OpenPayload(ctx context.Context, rec Record) (*Reader, error)
}

// PutOptions are the optional parts of a Put.
type PutOptions struct {
	// MIMEType defaults to DefaultMIMEType.
	MIMEType string
	// Metadata is the custom metadata; nil means an empty map.
	Metadata Metadata
}

// ListOptions select a page. Limit 0 means the default page size; Cursor is
// exclusive: the last name (ListNames) or the decimal last version
// (ListVersions) of the previous page, empty for the first page.
type ListOptions struct {
	Limit  int
	Cursor string
}

// NameEntry is one name in a NamePage: the name and its latest record.
type NameEntry struct {
	Name     string
	Latest   Record
	Versions int // published versions
}

// NamePage is one page of ListNames.
type NamePage struct {
	Items []NameEntry
	// NextCursor is the cursor of the next page, empty after the last page.
	NextCursor string
}

// VersionPage is one page of ListVersions.
type VersionPage struct {
	Items []Record
	// NextCursor is the cursor of the next page, empty after the last page.
	NextCursor string
}

// SelectorKind names what a Delete removes.
type SelectorKind string

// The delete selectors.
const (
	SelectVersion SelectorKind = "version"
	SelectLatest  SelectorKind = "latest"
	SelectAll     SelectorKind = "all"
)

// Selector picks the versions a Delete removes.
type Selector struct {
	Kind    SelectorKind
	Version int64 // for SelectVersion
}

// Capabilities describes an adapter.
type Capabilities struct {
	// Name is the adapter's name: "fs", "fs-sharded", "gcs" or "memory".
	Name string
	// Layout is the name of the layout the adapter reads and writes, as
	// `agentstore layouts` lists it ("erlang-fs", "erlang-fs-sharded",
	// "erlang-gcs"); "memory" for the in-memory adapter.
	Layout string
	// MaxArtifactBytes is the largest payload Put accepts.
	MaxArtifactBytes int64
	// MaxPageLimit is the largest page limit.
	MaxPageLimit int
	// MaxScanEntries sets the lifetime ceilings: scopes and names per scope
	// at MaxScanEntries/2, reservations per name at MaxScanEntries/3.
	MaxScanEntries int
	// VerifiedRanges is true when GetRange checks the whole payload's
	// digest (reading all of it); false when it checks only the size.
	VerifiedRanges bool
	// Durable is true when a published version survives a crash.
	Durable bool
	// ScopeCeilingPerShard is true when the store is made of shards that
	// each hold one scope and have their own ceilings (erlang-fs-sharded):
	// ScopeCapacity then bounds the scope slots of each shard, and the
	// store as a whole has no scope ceiling.
	ScopeCeilingPerShard bool
}

// ScopeCapacity is the number of scopes a store can ever hold.
func (c Capabilities) ScopeCapacity() int { return c.MaxScanEntries / 2 }

// NameCapacity is the number of names a scope can ever hold.
func (c Capabilities) NameCapacity() int { return c.MaxScanEntries / 2 }

// VersionCapacity is the number of versions a name can ever reserve.
func (c Capabilities) VersionCapacity() int { return c.MaxScanEntries / 3 }

// Walker is implemented by stores that can walk every scope and name they
// hold, reading records but never payloads. Listings of a whole store,
// quota reports and verification are built on it.
type Walker interface {
	// Walk calls fn once per scope directory or prefix, in no set order.
	// Walk stops at the first error fn returns and returns it.
	Walk(ctx context.Context, fn func(ScopeUsage) error) error
}

// ScopeUsage is what Walk reports of one scope.
type ScopeUsage struct {
	// Scope is decoded from the scope's records; Known is false when no
	// record of the scope could be decoded.
	Scope Scope
	Known bool
	// Hash is the scope's directory or key.
	Hash string
	// NameSlots counts the names the scope has ever held: capacity used of
	// Capabilities.NameCapacity.
	NameSlots int
	// Names lists every name directory or prefix found.
	Names []NameUsage
}

// NameUsage is what Walk reports of one name.
type NameUsage struct {
	// Name is decoded from the name's records; empty when none decodes.
	Name string
	// Hash is the name's directory or key.
	Hash string
	// Reservations counts version numbers ever reserved: capacity used of
	// Capabilities.VersionCapacity.
	Reservations int
	// Records lists the published versions whose records decode, ascending.
	Records []Record
	// Problems lists the published versions whose records do not decode or
	// do not belong here, and records whose payload is missing.
	Problems []Problem
}

// Problem is a published version found broken while walking or verifying.
type Problem struct {
	Version int64  `json:"version"`
	Path    string `json:"path"`
	Reason  string `json:"reason"`
}
