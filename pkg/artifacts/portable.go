package artifacts

import (
	"context"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/lock"
)

// Store is the portable artifact store every caller uses: a Driver (one
// storage layout) beneath one layer that does, once for every layout,
// everything that does not depend on the layout. It checks every argument
// (scope and its kind, name, MIME type, metadata and the record's size,
// versions, ranges, page limits and cursors, selectors) before the driver
// runs, classifies what it refuses into the closed set of codes, and
// reports CodeUnsupported for an ability the driver does not have.
//
// The contract, for every driver (package artifactstest checks it):
//   - Put makes a new version, numbered from Capabilities.FirstVersion;
//     numbers are never reused after Delete unless
//     Capabilities.ReusesVersions says so.
//   - A version is visible (to Get, the listings and Delete) only once its
//     record is published, and the record is published last.
//   - Get and GetRange return bytes through a Reader that reports
//     CodeCorrupt instead of io.EOF when the payload's size or SHA-256 does
//     not match the record; callers must treat any error as failure.
//   - Every call takes a context; a deadline is checked before each
//     publication step and bounds every I/O call.
//   - Errors are *Error values with a stable Code.
//
// A Store is safe for concurrent use when its driver is.
type Store struct {
	drv  Driver
	caps Capabilities
}

// NewStore returns the portable Store over d. The driver's Capabilities
// are read once; zero fields take their defaults: MaxPageLimit
// DefaultMaxPageLimit, MaxScanEntries DefaultMaxScanEntries,
// MaxRecordBytes MaxRecordFileBytes, MaxNameBytes MaxNameBytes, and
// ScopeKinds all three kinds. FirstVersion has no default: 0 is a layout
// that numbers from 0, and a negative one is taken as 1.
func NewStore(d Driver) *Store {
	c := d.Capabilities()
	if c.MaxPageLimit <= 0 {
		c.MaxPageLimit = DefaultMaxPageLimit
	}
	if c.MaxScanEntries <= 0 {
		c.MaxScanEntries = DefaultMaxScanEntries
	}
	if c.FirstVersion < 0 {
		c.FirstVersion = 1
	}
	if c.MaxRecordBytes <= 0 {
		c.MaxRecordBytes = MaxRecordFileBytes
	}
	if c.MaxNameBytes <= 0 || c.MaxNameBytes > MaxNameBytes {
		c.MaxNameBytes = MaxNameBytes
	}
	c.ScopeKinds = slices.Clone(c.ScopeKinds)
	c.ReservedSegments = slices.Clone(c.ReservedSegments)
	return &Store{drv: d, caps: c}
}

// Capabilities returns the driver's declared facts and limits, with the
// defaults NewStore fills in.
func (s *Store) Capabilities() Capabilities {
	c := s.caps
	c.ScopeKinds = slices.Clone(c.ScopeKinds)
	c.ReservedSegments = slices.Clone(c.ReservedSegments)
	return c
}

// As sets target, which must be a pointer to a driver type (or an
// interface), to the driver and reports whether it could: the way to reach
// what only one layout has. Most callers never need it.
func (s *Store) As(target any) bool {
	v := reflect.ValueOf(target)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	d := reflect.ValueOf(s.drv)
	if !d.Type().AssignableTo(v.Elem().Type()) {
		return false
	}
	v.Elem().Set(d)
	return true
}

// checkScope validates scope and refuses a kind the layout does not have.
func (s *Store) checkScope(op string, scope Scope) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	if !s.caps.HasKind(scope.Kind) {
		return Errorf(CodeUnsupported, op, nil, "the %s store holds no %s scopes", s.caps.Name, scope.Kind)
	}
	return nil
}

// checkName validates name against ValidateName and the layout's length.
func (s *Store) checkName(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if len(name) > s.caps.MaxNameBytes {
		return Errorf(CodeInvalidName, "validate name", nil, "name is %d bytes, more than the %s store's %d", len(name), s.caps.Name, s.caps.MaxNameBytes)
	}
	return nil
}

// checkArtifact validates a scope, a name and a version (Latest, or a
// number). A number below the layout's first version is CodeNotFound: it
// can name no version of this store.
func (s *Store) checkArtifact(op string, scope Scope, name string, version int64) error {
	if err := s.checkScope(op, scope); err != nil {
		return err
	}
	if err := s.checkName(name); err != nil {
		return err
	}
	return s.checkVersion(op, version)
}

// checkVersion refuses a negative version other than Latest
// (CodeInvalidArgument) and one below Capabilities.FirstVersion
// (CodeNotFound).
func (s *Store) checkVersion(op string, version int64) error {
	switch {
	case version == Latest:
		return nil
	case version < 0:
		return Errorf(CodeInvalidArgument, op, nil, "version %d is negative", version)
	case version < s.caps.FirstVersion:
		return Errorf(CodeNotFound, op, nil, "no version %d: this store numbers versions from %d", version, s.caps.FirstVersion)
	}
	return nil
}

// refuse names the artifact in an argument error.
func refuse(err error, scope Scope, name string, version int64) error {
	if e, ok := err.(*Error); ok {
		return e.With(scope, name, version)
	}
	return err
}

// Put streams r into a new version of name in scope and returns its
// published record. The MIME type defaults to DefaultMIMEType and the
// metadata to an empty map.
func (s *Store) Put(ctx context.Context, scope Scope, name string, r io.Reader, opts PutOptions) (Record, error) {
	const op = "put"
	if opts.MIMEType == "" {
		opts.MIMEType = DefaultMIMEType
	}
	if opts.Metadata == nil {
		opts.Metadata = Metadata{}
	}
	if err := s.checkPut(op, scope, name, opts); err != nil {
		return Record{}, refuse(err, scope, name, NoVersion)
	}
	return s.drv.Put(ctx, scope, name, r, opts)
}

// checkPut checks everything a Put's record will hold, by encoding the
// record with the widest values its variable fields can take: the MIME
// type and metadata rules, and the layout's record size.
func (s *Store) checkPut(op string, scope Scope, name string, opts PutOptions) error {
	if err := s.checkScope(op, scope); err != nil {
		return err
	}
	if err := s.checkName(name); err != nil {
		return err
	}
	if err := ValidateMIMEType(opts.MIMEType); err != nil {
		return err
	}
	if s.caps.HeaderMIMETypes && !headerSafe(opts.MIMEType) {
		return Errorf(CodeInvalidMIMEType, op, nil, "MIME type %q: the %s layout keeps it as an HTTP Content-Type header, which cannot hold leading or trailing white space or control characters", opts.MIMEType, s.caps.Layout)
	}
	probe := Record{
		Scope: scope, Name: name, Version: math.MaxInt32, MIMEType: opts.MIMEType,
		Digest: probeDigest, Size: max(s.caps.MaxArtifactBytes, 0), CreatedAt: time.Now().UnixMilli(),
		Metadata: opts.Metadata,
	}
	b, err := EncodeRecord(probe)
	if err != nil {
		return err
	}
	if len(b) > s.caps.MaxRecordBytes {
		return Errorf(CodeInvalidMetadata, op, nil, "the record would be %d bytes, more than %d", len(b), s.caps.MaxRecordBytes)
	}
	return nil
}

var probeDigest = strings.Repeat("0", 64)

// Get opens a version (Latest for the latest) for verified reading.
func (s *Store) Get(ctx context.Context, scope Scope, name string, version int64) (*Reader, error) {
	if err := s.checkArtifact("get", scope, name, version); err != nil {
		return nil, refuse(err, scope, name, version)
	}
	return s.drv.Get(ctx, scope, name, version)
}

// GetRange opens length bytes at offset of a version (Latest for the
// latest); length -1 reads to the end. See Capabilities.VerifiedRanges.
func (s *Store) GetRange(ctx context.Context, scope Scope, name string, version, offset, length int64) (*Reader, error) {
	const op = "get"
	if err := s.checkArtifact(op, scope, name, version); err != nil {
		return nil, refuse(err, scope, name, version)
	}
	if offset < 0 || length < -1 {
		return nil, Errorf(CodeInvalidArgument, op, nil, "offset %d, length %d", offset, length).With(scope, name, version)
	}
	return s.drv.GetRange(ctx, scope, name, version, offset, length)
}

// Stat returns the record of a version (Latest for the latest) without
// reading its payload.
func (s *Store) Stat(ctx context.Context, scope Scope, name string, version int64) (Record, error) {
	if err := s.checkArtifact("stat", scope, name, version); err != nil {
		return Record{}, refuse(err, scope, name, version)
	}
	return s.drv.Stat(ctx, scope, name, version)
}

// ListNames returns a page of the scope's names that have at least one
// published version, sorted bytewise, after opts.Cursor. A scope without
// one is CodeNotFound.
func (s *Store) ListNames(ctx context.Context, scope Scope, opts ListOptions) (NamePage, error) {
	limit, err := NamePageArgs(scope, opts, s.caps.MaxPageLimit)
	if err == nil {
		err = s.checkScope("list names", scope)
	}
	if err != nil {
		return NamePage{}, refuse(err, scope, "", NoVersion)
	}
	opts.Limit = limit
	return s.drv.ListNames(ctx, scope, opts)
}

// ListVersions returns a page of a name's published records, by ascending
// version, after opts.Cursor (a version number).
func (s *Store) ListVersions(ctx context.Context, scope Scope, name string, opts ListOptions) (VersionPage, error) {
	limit, _, err := VersionPageArgs(scope, name, opts, s.caps.MaxPageLimit)
	if err == nil {
		err = s.checkScope("list versions", scope)
	}
	if err == nil {
		err = s.checkName(name)
	}
	if err != nil {
		return VersionPage{}, refuse(err, scope, name, NoVersion)
	}
	opts.Limit = limit
	return s.drv.ListVersions(ctx, scope, name, opts)
}

// Delete removes the selected published versions and returns their records.
func (s *Store) Delete(ctx context.Context, scope Scope, name string, sel Selector) ([]Record, error) {
	const op = "delete"
	err := s.checkArtifact(op, scope, name, Latest)
	if err == nil {
		err = sel.Check(op)
	}
	if err == nil && sel.Kind == SelectVersion {
		err = s.checkVersion(op, sel.Version)
	}
	if err != nil {
		return nil, refuse(err, scope, name, sel.ErrorVersion())
	}
	return s.drv.Delete(ctx, scope, name, sel)
}

// ListScopes returns every scope that has at least one published version,
// or CodeUnsupported when the driver cannot enumerate its scopes.
func (s *Store) ListScopes(ctx context.Context) ([]Scope, error) {
	l, ok := s.drv.(ScopeLister)
	if !ok {
		return nil, s.unsupported("list scopes", "list its scopes")
	}
	return l.ListScopes(ctx)
}

// Walk calls fn once per scope the store holds, reading records but never
// payloads (see Walker), or returns CodeUnsupported when the driver cannot
// walk its store.
func (s *Store) Walk(ctx context.Context, fn func(ScopeUsage) error) error {
	w, ok := s.drv.(Walker)
	if !ok {
		return s.unsupported("walk", "walk its store")
	}
	return w.Walk(ctx, fn)
}

// StoreLock returns the backend of the store's maintenance lock (see
// Locker), or CodeUnsupported when its driver cannot be locked.
func (s *Store) StoreLock() (lock.Backend, error) {
	l, ok := s.drv.(Locker)
	if !ok {
		return nil, s.unsupported("lock", "be locked for maintenance")
	}
	return l.StoreLock(), nil
}

// CanWalk reports whether Walk is supported.
func (s *Store) CanWalk() bool {
	_, ok := s.drv.(Walker)
	return ok
}

// OpenPayload opens the payload of a record already read (by Walk, say)
// for verified reading. Drivers that cannot open a payload without its
// record read the record again, through Get.
func (s *Store) OpenPayload(ctx context.Context, rec Record) (*Reader, error) {
	if o, ok := s.drv.(PayloadOpener); ok {
		return o.OpenPayload(ctx, rec)
	}
	return s.Get(ctx, rec.Scope, rec.Name, rec.Version)
}

func (s *Store) unsupported(op, what string) error {
	return Errorf(CodeUnsupported, op, nil, "the %s store cannot %s", s.caps.Name, what)
}

// Check refuses a selector of an unknown kind, and a SelectVersion whose
// version is negative, with CodeInvalidArgument.
func (sel Selector) Check(op string) error {
	switch sel.Kind {
	case SelectVersion:
		if sel.Version < 0 {
			return Errorf(CodeInvalidArgument, op, nil, "version %d is negative", sel.Version)
		}
	case SelectLatest, SelectAll:
	default:
		return Errorf(CodeInvalidArgument, op, nil, "unknown selector %q", sel.Kind)
	}
	return nil
}

// Resolve returns the versions sel picks among published (ascending): the
// one version, the highest, or all. It fails with CodeNotFound when it picks
// none and with CodeInvalidArgument for a selector Check refuses. Every
// driver's Delete resolves its selector here.
func (sel Selector) Resolve(op string, published []int64) ([]int64, error) {
	if err := sel.Check(op); err != nil {
		return nil, err
	}
	var targets []int64
	switch sel.Kind {
	case SelectVersion:
		if _, ok := slices.BinarySearch(published, sel.Version); !ok {
			return nil, Errorf(CodeNotFound, op, nil, "no such version")
		}
		targets = []int64{sel.Version}
	case SelectLatest:
		if len(published) > 0 {
			targets = published[len(published)-1:]
		}
	case SelectAll:
		targets = published
	}
	if len(targets) == 0 {
		return nil, Errorf(CodeNotFound, op, nil, "no published version")
	}
	return targets, nil
}

// VersionCursor returns the version after which a ListVersions page starts:
// -1 for the first page (versions may start at 0). Store has checked the
// cursor before a driver sees it; an unparsable one gives -1.
func VersionCursor(opts ListOptions) int64 {
	if opts.Cursor == "" {
		return -1
	}
	n, err := strconv.ParseInt(opts.Cursor, 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// ScopeSlots returns the number of scope slots the layout ever claimed
// (see ScopeSlotCounter), or CodeUnsupported when it keeps none.
func (s *Store) ScopeSlots(ctx context.Context) (int, error) {
	c, ok := s.drv.(ScopeSlotCounter)
	if !ok {
		return 0, s.unsupported("count scope slots", "count scope slots")
	}
	return c.ScopeSlots(ctx)
}

// PageSize returns the page size a driver serves: Limit, which Store has
// set and checked, or DefaultPageLimit when a caller that is not Store left
// it at zero.
func (o ListOptions) PageSize() int {
	if o.Limit <= 0 {
		return DefaultPageLimit
	}
	return o.Limit
}

// headerSafe reports whether an HTTP header keeps m as given: no leading
// or trailing white space, no control characters.
func headerSafe(m string) bool {
	return strings.TrimSpace(m) == m && !strings.ContainsFunc(m, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
