package artifacts

import "slices"

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
	// IncludeBroken asks ListVersions, of a driver that implements
	// BrokenLister, to report the broken versions of the page in
	// VersionPage.Broken instead of failing on the first: records that do
	// not decode or do not belong, and (checked cheaply, by size)
	// payloads that are missing or of the wrong size.
	IncludeBroken bool
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
	// Foreign counts the objects or files in the scope's namespace that
	// are not part of the layout and were skipped (see CodeForeign), for
	// drivers that can tell; the same on every page.
	Foreign int
}

// VersionPage is one page of ListVersions.
type VersionPage struct {
	Items []Record
	// NextCursor is the cursor of the next page, empty after the last page.
	NextCursor string
	// Broken lists the page's broken versions, with ListOptions.
	// IncludeBroken only: a version whose record decodes but whose payload
	// is missing or of the wrong size is in Items too; one whose record
	// does not decode is only here.
	Broken []BrokenVersion
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

// ErrorVersion is the version an error about the selected versions names:
// Version for SelectVersion, else NoVersion.
func (s Selector) ErrorVersion() int64 {
	if s.Kind == SelectVersion {
		return s.Version
	}
	return NoVersion
}

// Capabilities declares, as data, what a driver's layout can and cannot
// do: its limits and its facts. Store checks arguments against them and
// commands adapt to them, instead of asking which driver they have.
// Zero fields take the defaults NewStore documents.
type Capabilities struct {
	// Name is the driver's name: "fs", "fs-sharded", "gcs" or "memory".
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

	// NoCeilings is true when the layout has no lifetime ceilings (Google
	// ADK's layouts): MaxScanEntries then bounds nothing, and quota
	// reports no scope, name or reservation capacity.
	NoCeilings bool

	// ScopeKinds lists the scope kinds the layout can hold; nil means all
	// three. Store refuses the others with CodeUnsupported.
	ScopeKinds []Kind
	// FirstVersion is the number of a name's first version (default 1).
	FirstVersion int64
	// ReusesVersions is true when a number freed by Delete may be given
	// to a later Put: a Put takes one more than the highest version the
	// name has (FirstVersion when it has none), so deleting the highest
	// hands its number out again (Google ADK's layouts). False when
	// numbers are never reused.
	ReusesVersions bool
	// StoresDigest is true when every record holds its payload's SHA-256,
	// so reads verify the digest and not only the size.
	StoresDigest bool
	// MaxRecordBytes is the largest encoded record the layout stores and
	// reads (default MaxRecordFileBytes). Store refuses a Put whose record
	// could not fit, with CodeInvalidMetadata, before the driver runs.
	MaxRecordBytes int
	// MaxNameBytes is the longest artifact name the layout takes (default
	// and at most MaxNameBytes); the other name rules are ValidateName's
	// and the layout's own, below.
	MaxNameBytes int

	// The facts below describe layouts that store ids and names
	// unescaped, as path segments (Google ADK's). Their zero values are
	// those of a layout that stores hashes (the Erlang layouts): no
	// further rule. A layout refuses what they exclude with
	// CodeInvalidScope (scope parts) or CodeInvalidName (names).

	// UserNamePrefix, when set, begins every name of a user scope, and no
	// name of another scope begins with it (Google ADK's "user:").
	UserNamePrefix string
	// MaxSegmentBytes, when positive, bounds each scope part and each
	// slash-separated segment of a name: a directory name's 255 bytes
	// (google-adk-file).
	MaxSegmentBytes int
	// ScopePartForbidden lists the bytes no scope part may hold: the
	// layout's own separators ("/" in Google ADK's layouts).
	ScopePartForbidden string
	// NameForbidden lists the bytes no name may hold ("\\" in
	// google-adk-file).
	NameForbidden string
	// ReservedSegments lists the names the layout keeps for its own
	// directories and files ("versions", "metadata.json" in
	// google-adk-file): no name may end in one (a layout may refuse one
	// as an inner segment too: google-adk-file refuses "versions"
	// anywhere).
	ReservedSegments []string
	// MetadataStrings is true when custom metadata values are strings
	// only (Cloud Storage object metadata): a Put with any other value is
	// CodeInvalidMetadata.
	MetadataStrings bool
	// OnlyApp, when set, is the one app the store holds: the layout keeps
	// no app (google-adk-file's users/ tree, whose app is the store's,
	// --store-app). A Put into a scope of another app is CodeInvalidScope;
	// reads of one find nothing (CodeNotFound).
	OnlyApp string
	// PlainNames is true when a name's key or directory is the name itself
	// (Google ADK's layouts), not its NameHash: Walk's NameUsage.Hash is
	// then that key or path.
	PlainNames bool
	// HeaderMIMETypes is true when the MIME type is kept as an HTTP
	// header value (Cloud Storage's Content-Type): one with leading or
	// trailing white space or a control character, which the header would
	// not keep as given, is CodeInvalidMIMEType.
	HeaderMIMETypes bool
	// AttributeRecords is true when a version's record is its payload
	// object's own attributes (Content-Type, custom metadata, size and
	// time, as Cloud Storage keeps them: google-adk-gcs). They always
	// decode: there is no separate record that a fault could break.
	AttributeRecords bool
	// UncheckedPayloads is true when the layout keeps no digest, checksum
	// or size of a payload (google-adk-file: a record's Size is the
	// payload file's own), so no read can tell a changed or cut payload
	// from an intact one; only a broken record is CodeCorrupt. A layout
	// with StoresDigest false and UncheckedPayloads false checks payloads
	// some other way (the CRC32C Cloud Storage keeps, in google-adk-gcs).
	UncheckedPayloads bool
}

// HasKind reports whether the layout can hold scopes of kind k.
func (c Capabilities) HasKind(k Kind) bool {
	return c.ScopeKinds == nil || slices.Contains(c.ScopeKinds, k)
}

// ScopeCapacity is the number of scopes a store can ever hold.
func (c Capabilities) ScopeCapacity() int { return c.MaxScanEntries / 2 }

// NameCapacity is the number of names a scope can ever hold.
func (c Capabilities) NameCapacity() int { return c.MaxScanEntries / 2 }

// VersionCapacity is the number of versions a name can ever reserve.
func (c Capabilities) VersionCapacity() int { return c.MaxScanEntries / 3 }

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
	// Code classifies the problem (see ProblemCode): CodeCorrupt (the
	// bytes were read and are wrong; an empty Code means the same),
	// CodeUnsafeStore (a file of the layout is a symbolic link, a named
	// pipe or another non-regular file, and was not read), or CodePermission
	// and CodeIO (it could not be read: unreadable, not known to be broken),
	// or CodeForeign (an object or file the layout does not explain: Path
	// names it and Version is meaningless).
	Code Code `json:"code,omitempty"`
	// NextCommand, when the layout knows one, is the command that fixes
	// the problem (fs repair for a version a killed writer left
	// half-written, say); empty otherwise.
	NextCommand string `json:"next_command,omitempty"`
}
