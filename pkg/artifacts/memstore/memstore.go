// Package memstore is the in-memory adapter of the artifact store, with the
// quotas of the Erlang ADK's in-memory store: a payload limit, byte quotas
// per scope and in total, published-version quotas per scope and in total,
// and the same lifetime ceilings as the v1 layout (scopes, names per scope
// and reservations per name).
//
// It keeps the contract of artifacts.Store exactly as the filesystem
// adapter does: it validates every argument with the same rules, never
// reuses a version number, publishes a version only once its payload is
// complete, and returns payloads through the verifying artifacts.Reader.
// Nothing survives the process. A Store is safe for concurrent use.
package memstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Options configure a Store. The zero value gives the defaults: 64 MiB
// payloads, no byte or version quotas, 10,000 scan entries, pages of at most
// 1000.
type Options struct {
	// MaxArtifactBytes is the largest payload Put accepts (default 64 MiB).
	MaxArtifactBytes int64
	// MaxScopeBytes caps the published payload bytes of one scope; 0 means
	// unlimited.
	MaxScopeBytes int64
	// MaxTotalBytes caps the published payload bytes of the store; 0 means
	// unlimited.
	MaxTotalBytes int64
	// MaxScopeVersions caps the published versions of one scope; 0 means
	// unlimited.
	MaxScopeVersions int
	// MaxTotalVersions caps the published versions of the store; 0 means
	// unlimited.
	MaxTotalVersions int
	// MaxScanEntries sets the lifetime ceilings, as in the v1 layout:
	// scopes and names per scope at MaxScanEntries/2, reservations per name
	// at MaxScanEntries/3 (default 10,000, at least 3).
	MaxScanEntries int
	// MaxPageLimit is the largest page limit (default 1000).
	MaxPageLimit int
	// Now is the clock for created_at (default time.Now).
	Now func() time.Time
}

// Store is an in-memory artifact store. It implements artifacts.Store,
// artifacts.ScopeLister and artifacts.Walker. Use New to make one.
type Store struct {
	opts Options

	mu            sync.RWMutex
	scopes        map[artifacts.Scope]*scopeState
	totalBytes    int64 // published payload bytes
	totalVersions int   // published versions
}

// scopeState is one scope: every name it ever held and its usage.
type scopeState struct {
	names    map[string]*nameState
	bytes    int64
	versions int
}

// nameState is one name: the highest version ever reserved and the
// published versions.
type nameState struct {
	reserved  int64
	published map[int64]*version
}

// version is one published version. Its payload slice is never written
// after publication (CorruptPayload replaces it), so readers may share it.
type version struct {
	rec     artifacts.Record
	payload []byte
}

var (
	_ artifacts.Driver      = (*Store)(nil)
	_ artifacts.ScopeLister = (*Store)(nil)
	_ artifacts.Walker      = (*Store)(nil)
)

// New returns an empty Store. It fails with CodeInvalidArgument when a
// limit is negative or MaxScanEntries is below 3.
func New(opts Options) (*Store, error) {
	bad := func(format string, args ...any) (*Store, error) {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "open", nil, format, args...)
	}
	switch {
	case opts.MaxArtifactBytes < 0, opts.MaxScopeBytes < 0, opts.MaxTotalBytes < 0:
		return bad("byte limits must not be negative")
	case opts.MaxScopeVersions < 0, opts.MaxTotalVersions < 0:
		return bad("version quotas must not be negative")
	case opts.MaxPageLimit < 0:
		return bad("max page limit %d is negative", opts.MaxPageLimit)
	case opts.MaxScanEntries < 0 || (opts.MaxScanEntries > 0 && opts.MaxScanEntries < artifacts.MinMaxScanEntries):
		return bad("max scan entries %d is below %d", opts.MaxScanEntries, artifacts.MinMaxScanEntries)
	}
	if opts.MaxArtifactBytes == 0 {
		opts.MaxArtifactBytes = artifacts.DefaultMaxArtifact
	}
	if opts.MaxScanEntries == 0 {
		opts.MaxScanEntries = artifacts.DefaultMaxScanEntries
	}
	if opts.MaxPageLimit == 0 {
		opts.MaxPageLimit = artifacts.DefaultMaxPageLimit
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{opts: opts, scopes: map[artifacts.Scope]*scopeState{}}, nil
}

// Capabilities describes the adapter: name "memory", verified ranges, not
// durable.
func (s *Store) Capabilities() artifacts.Capabilities {
	return artifacts.Capabilities{
		Name:             "memory",
		Layout:           "memory",
		MaxArtifactBytes: s.opts.MaxArtifactBytes,
		MaxPageLimit:     s.opts.MaxPageLimit,
		MaxScanEntries:   s.opts.MaxScanEntries,
		VerifiedRanges:   true,
		Durable:          false,
		FirstVersion:     1,
		StoresDigest:     true,
		MaxRecordBytes:   artifacts.MaxRecordFileBytes,
		MaxNameBytes:     artifacts.MaxNameBytes,
	}
}

// wrap turns err into an *artifacts.Error naming the artifact.
func wrap(op string, err error, scope artifacts.Scope, name string, v int64) error {
	var e *artifacts.Error
	if !errors.As(err, &e) {
		e = artifacts.Errorf(artifacts.CodeUnknown, op, err, "")
	}
	return e.With(scope, name, v)
}

// Put streams r into a new version of name in scope. It reads at most
// MaxArtifactBytes+1 bytes, checks the context between reads and once more
// before publishing, and publishes nothing when any check fails. A failed
// Put reserves no version number.
func (s *Store) Put(ctx context.Context, scope artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions) (artifacts.Record, error) {
	const op = "put"
	rec, err := s.put(ctx, scope, name, r, opts)
	if err != nil {
		return artifacts.Record{}, wrap(op, err, scope, name, artifacts.NoVersion)
	}
	return rec, nil
}

func (s *Store) put(ctx context.Context, scope artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions) (artifacts.Record, error) {
	const op = "put"
	mime := opts.MIMEType // checked by artifacts.Store
	if mime == "" {
		mime = artifacts.DefaultMIMEType
	}
	md, err := canonicalMetadata(opts.Metadata)
	if err != nil {
		return artifacts.Record{}, err
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.Record{}, err
	}
	payload, err := readLimited(ctx, r, s.opts.MaxArtifactBytes)
	if err != nil {
		return artifacts.Record{}, err
	}
	sum := sha256.Sum256(payload)
	rec := artifacts.Record{
		Scope:    scope,
		Name:     name,
		MIMEType: mime,
		Digest:   artifacts.DigestHex(sum[:]),
		Size:     int64(len(payload)),
		Metadata: md,
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	// The publication point: check the deadline once more under the lock.
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.Record{}, err
	}
	sc := s.scopes[scope]
	if sc == nil && len(s.scopes) >= s.opts.MaxScanEntries/2 {
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeScopeCapacity, op, nil, "all %d scope slots used", s.opts.MaxScanEntries/2)
	}
	var ns *nameState
	if sc != nil {
		ns = sc.names[name]
		if ns == nil && len(sc.names) >= s.opts.MaxScanEntries/2 {
			return artifacts.Record{}, artifacts.Errorf(artifacts.CodeNameCapacity, op, nil, "all %d name slots of the scope used", s.opts.MaxScanEntries/2)
		}
	}
	if ns != nil && ns.reserved >= int64(s.opts.MaxScanEntries/3) {
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeVersionCapacity, op, nil, "%d of %d reservations used", ns.reserved, s.opts.MaxScanEntries/3)
	}
	var scopeBytes int64
	var scopeVersions int
	if sc != nil {
		scopeBytes, scopeVersions = sc.bytes, sc.versions
	}
	if err := s.checkQuotas(scopeBytes, scopeVersions, rec.Size); err != nil {
		return artifacts.Record{}, err
	}
	if sc == nil {
		sc = &scopeState{names: map[string]*nameState{}}
		s.scopes[scope] = sc
	}
	if ns == nil {
		ns = &nameState{published: map[int64]*version{}}
		sc.names[name] = ns
	}
	ns.reserved++
	rec.Version = ns.reserved
	rec.CreatedAt = max(s.opts.Now().UnixMilli(), 0)
	ns.published[rec.Version] = &version{rec: rec, payload: payload}
	sc.bytes += rec.Size
	sc.versions++
	s.totalBytes += rec.Size
	s.totalVersions++
	rec.Metadata = cloneMetadata(rec.Metadata)
	return rec, nil
}

// checkQuotas reports CodeQuotaExceeded, with the allowance left, when a
// payload of size bytes would pass a byte or version quota.
func (s *Store) checkQuotas(scopeBytes int64, scopeVersions int, size int64) error {
	const op = "put"
	type quota struct {
		what       string
		limit, use int64
		add        int64
	}
	quotas := []quota{
		{"scope bytes", s.opts.MaxScopeBytes, scopeBytes, size},
		{"total bytes", s.opts.MaxTotalBytes, s.totalBytes, size},
		{"scope versions", int64(s.opts.MaxScopeVersions), int64(scopeVersions), 1},
		{"total versions", int64(s.opts.MaxTotalVersions), int64(s.totalVersions), 1},
	}
	for _, q := range quotas {
		if q.limit > 0 && q.use+q.add > q.limit {
			e := artifacts.Errorf(artifacts.CodeQuotaExceeded, op, nil, "%s quota %d: %d used, %d more needed", q.what, q.limit, q.use, q.add)
			e.Remaining = max(q.limit-q.use, 0)
			return e
		}
	}
	return nil
}

// readLimited reads r whole, failing with CodeTooLarge once it has read
// more than limit bytes (it never reads past limit+1), and with the
// context's error when it is done.
func readLimited(ctx context.Context, r io.Reader, limit int64) ([]byte, error) {
	const op = "put"
	var buf bytes.Buffer
	lr := &io.LimitedReader{R: r, N: limit + 1}
	chunk := make([]byte, 32<<10)
	for {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return nil, err
		}
		n, err := lr.Read(chunk)
		buf.Write(chunk[:n])
		if int64(buf.Len()) > limit {
			return nil, artifacts.Errorf(artifacts.CodeTooLarge, op, nil, "payload exceeds %d bytes", limit)
		}
		if err == io.EOF {
			return buf.Bytes(), nil
		}
		if err != nil {
			if cerr := artifacts.CheckContext(ctx, op); cerr != nil {
				return nil, cerr
			}
			return nil, artifacts.Errorf(artifacts.CodeIO, op, err, "reading the payload")
		}
	}
}

// canonicalMetadata returns md (checked by artifacts.Store) in the form a
// decoded record has, by encoding a record holding it and decoding it:
// integers as int64 or *big.Int, floats as float64, lists as []any and
// maps as map[string]any. The result shares nothing with md.
func canonicalMetadata(md artifacts.Metadata) (artifacts.Metadata, error) {
	probe := artifacts.Record{
		Scope:    artifacts.AppScope("memstore"),
		Name:     "probe",
		Version:  1,
		MIMEType: artifacts.DefaultMIMEType,
		Digest:   strings.Repeat("0", 64),
		Metadata: md,
	}
	b, err := artifacts.EncodeRecord(probe)
	if err != nil {
		return nil, err
	}
	back, err := artifacts.DecodeRecord(b)
	if err != nil {
		return nil, artifacts.Errorf(artifacts.CodeInvalidMetadata, "validate metadata", err, "does not survive encoding")
	}
	return back.Metadata, nil
}

// cloneMetadata deep-copies canonical metadata so that callers cannot
// change what the store holds.
func cloneMetadata(md artifacts.Metadata) artifacts.Metadata { return artifacts.CloneMetadata(md) }

// checkRecord verifies a stored record the way a reader of the layout
// does: it must belong to the scope, name and version it is stored under,
// and every field must be valid (it must encode).
func checkRecord(op string, rec artifacts.Record, scope artifacts.Scope, name string, v int64) error {
	if err := artifacts.CheckRecord(rec, scope, name, v); err != nil {
		return err
	}
	if _, err := artifacts.EncodeRecord(rec); err != nil {
		return artifacts.Errorf(artifacts.CodeCorrupt, op, err, "record is invalid")
	}
	return nil
}

// out returns a stored record for a caller, verified and deep-copied.
func out(op string, ver *version, scope artifacts.Scope, name string, v int64) (artifacts.Record, error) {
	if err := checkRecord(op, ver.rec, scope, name, v); err != nil {
		return artifacts.Record{}, err
	}
	rec := ver.rec
	rec.Metadata = cloneMetadata(rec.Metadata)
	return rec, nil
}

// sortedVersions returns a name's published versions, ascending.
func (ns *nameState) sortedVersions() []int64 {
	vs := make([]int64, 0, len(ns.published))
	for v := range ns.published {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	return vs
}

// latest returns the highest published version, or 0.
func (ns *nameState) latest() int64 {
	var high int64
	for v := range ns.published {
		high = max(high, v)
	}
	return high
}

// lookup returns the state of a name (checked by artifacts.Store), or
// CodeNotFound. The caller holds s.mu.
func (s *Store) lookup(op string, scope artifacts.Scope, name string) (*scopeState, *nameState, error) {
	sc := s.scopes[scope]
	if sc == nil {
		return nil, nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such artifact")
	}
	ns := sc.names[name]
	if ns == nil {
		return nil, nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such artifact")
	}
	return sc, ns, nil
}

// find returns a published version (artifacts.Latest for the latest) and its verified
// record.
func (s *Store) find(ctx context.Context, op string, scope artifacts.Scope, name string, v int64) (artifacts.Record, []byte, error) {
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.Record{}, nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ns, err := s.lookup(op, scope, name)
	if err != nil {
		return artifacts.Record{}, nil, err
	}
	if v == artifacts.Latest {
		if v = ns.latest(); v == 0 {
			return artifacts.Record{}, nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no published version")
		}
	}
	ver := ns.published[v]
	if ver == nil {
		return artifacts.Record{}, nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
	}
	rec, err := out(op, ver, scope, name, v)
	if err != nil {
		return artifacts.Record{}, nil, err
	}
	return rec, ver.payload, nil
}

// Stat returns the verified record of a version (artifacts.Latest for the latest).
func (s *Store) Stat(ctx context.Context, scope artifacts.Scope, name string, version int64) (artifacts.Record, error) {
	const op = "stat"
	rec, _, err := s.find(ctx, op, scope, name, version)
	if err != nil {
		return artifacts.Record{}, wrap(op, err, scope, name, version)
	}
	return rec, nil
}

// Get opens a version (artifacts.Latest for the latest) for verified reading.
func (s *Store) Get(ctx context.Context, scope artifacts.Scope, name string, version int64) (*artifacts.Reader, error) {
	return s.GetRange(ctx, scope, name, version, 0, -1)
}

// GetRange opens length bytes (-1: to the end) at offset of a version. The
// whole payload is hashed, so a range is returned only from a payload that
// matches its record.
func (s *Store) GetRange(ctx context.Context, scope artifacts.Scope, name string, version, offset, length int64) (*artifacts.Reader, error) {
	const op = "get"
	rec, payload, err := s.find(ctx, op, scope, name, version)
	if err != nil {
		return nil, wrap(op, err, scope, name, version)
	}
	return artifacts.NewReader(rec, io.NopCloser(bytes.NewReader(payload)), offset, length, true)
}

// ListVersions returns a page of a name's published records, ascending.
func (s *Store) ListVersions(ctx context.Context, scope artifacts.Scope, name string, opts artifacts.ListOptions) (artifacts.VersionPage, error) {
	const op = "list versions"
	page, err := s.listVersions(ctx, scope, name, opts)
	if err != nil {
		return artifacts.VersionPage{}, wrap(op, err, scope, name, artifacts.NoVersion)
	}
	return page, nil
}

func (s *Store) listVersions(ctx context.Context, scope artifacts.Scope, name string, opts artifacts.ListOptions) (artifacts.VersionPage, error) {
	const op = "list versions"
	var page artifacts.VersionPage
	limit, after := opts.PageSize(), artifacts.VersionCursor(opts)
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return page, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ns, err := s.lookup(op, scope, name)
	if err != nil {
		return page, err
	}
	vs := ns.sortedVersions()
	if len(vs) == 0 {
		return page, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no published version")
	}
	i, _ := slices.BinarySearch(vs, after+1)
	rest := vs[i:]
	if len(rest) > limit {
		rest = rest[:limit]
		page.NextCursor = strconv.FormatInt(rest[len(rest)-1], 10)
	}
	for _, v := range rest {
		rec, err := out(op, ns.published[v], scope, name, v)
		if err != nil {
			return artifacts.VersionPage{}, err
		}
		page.Items = append(page.Items, rec)
	}
	return page, nil
}

// ListNames returns a page of the scope's names that have a published
// version, sorted bytewise, each with its latest record.
func (s *Store) ListNames(ctx context.Context, scope artifacts.Scope, opts artifacts.ListOptions) (artifacts.NamePage, error) {
	const op = "list names"
	page, err := s.listNames(ctx, scope, opts)
	if err != nil {
		return artifacts.NamePage{}, wrap(op, err, scope, "", artifacts.NoVersion)
	}
	return page, nil
}

func (s *Store) listNames(ctx context.Context, scope artifacts.Scope, opts artifacts.ListOptions) (artifacts.NamePage, error) {
	const op = "list names"
	var page artifacts.NamePage
	limit := opts.PageSize()
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return page, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sc := s.scopes[scope]
	var names []string
	if sc != nil {
		for n, ns := range sc.names {
			if len(ns.published) > 0 {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return page, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "scope has no artifacts")
	}
	slices.Sort(names)
	i, found := slices.BinarySearch(names, opts.Cursor)
	if found {
		i++
	}
	rest := names[i:]
	if len(rest) > limit {
		rest = rest[:limit]
		page.NextCursor = rest[len(rest)-1]
	}
	for _, n := range rest {
		ns := sc.names[n]
		v := ns.latest()
		rec, err := out(op, ns.published[v], scope, n, v)
		if err != nil {
			return artifacts.NamePage{}, err
		}
		page.Items = append(page.Items, artifacts.NameEntry{Name: n, Latest: rec, Versions: len(ns.published)})
	}
	return page, nil
}

// Delete removes the selected published versions and returns their
// records, ascending. Each record is verified first, so a damaged record is
// reported rather than removed. Bytes and counts are freed; version numbers
// are not.
func (s *Store) Delete(ctx context.Context, scope artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	const op = "delete"
	recs, err := s.delete(ctx, scope, name, sel)
	if err != nil {
		return nil, wrap(op, err, scope, name, sel.ErrorVersion())
	}
	return recs, nil
}

func (s *Store) delete(ctx context.Context, scope artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	const op = "delete"
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ns, err := s.lookup(op, scope, name)
	if err != nil {
		return nil, err
	}
	targets, err := sel.Resolve(op, ns.sortedVersions())
	if err != nil {
		return nil, err
	}
	recs := make([]artifacts.Record, 0, len(targets))
	for _, v := range targets {
		rec, err := out(op, ns.published[v], scope, name, v)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return nil, err
	}
	for _, v := range targets {
		size := int64(len(ns.published[v].payload))
		delete(ns.published, v)
		sc.bytes -= size
		sc.versions--
		s.totalBytes -= size
		s.totalVersions--
	}
	return recs, nil
}

// ListScopes returns every scope with at least one published version,
// ordered by scope hash as the filesystem adapter lists them.
func (s *Store) ListScopes(ctx context.Context) ([]artifacts.Scope, error) {
	if err := artifacts.CheckContext(ctx, "list scopes"); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var scopes []artifacts.Scope
	for scope, sc := range s.scopes {
		if sc.versions > 0 {
			scopes = append(scopes, scope)
		}
	}
	slices.SortFunc(scopes, func(a, b artifacts.Scope) int { return strings.Compare(a.Hash(), b.Hash()) })
	return scopes, nil
}

// Walk reports every scope and every name the store ever held, with their
// verified records; records that fail verification are reported as
// Problems. Scopes come in scope-hash order and fn is called without the
// store's lock held, so fn may call the store.
func (s *Store) Walk(ctx context.Context, fn func(artifacts.ScopeUsage) error) error {
	const op = "walk"
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return err
	}
	s.mu.RLock()
	usages := make([]artifacts.ScopeUsage, 0, len(s.scopes))
	for scope, sc := range s.scopes {
		u := artifacts.ScopeUsage{Scope: scope, Known: true, Hash: scope.Hash(), NameSlots: len(sc.names)}
		for name, ns := range sc.names {
			nu := artifacts.NameUsage{Name: name, Hash: artifacts.NameHash(name), Reservations: int(ns.reserved)}
			for _, v := range ns.sortedVersions() {
				rec, err := out(op, ns.published[v], scope, name, v)
				if err != nil {
					nu.Problems = append(nu.Problems, artifacts.Problem{Version: v, Path: path(scope, name, v), Reason: err.Error()})
					continue
				}
				nu.Records = append(nu.Records, rec)
			}
			u.Names = append(u.Names, nu)
		}
		slices.SortFunc(u.Names, func(a, b artifacts.NameUsage) int { return strings.Compare(a.Name, b.Name) })
		usages = append(usages, u)
	}
	s.mu.RUnlock()
	slices.SortFunc(usages, func(a, b artifacts.ScopeUsage) int { return strings.Compare(a.Hash, b.Hash) })
	for _, u := range usages {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return err
		}
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

// path names a version in Problems and errors, in the shape of the layout.
func path(scope artifacts.Scope, name string, v int64) string {
	return fmt.Sprintf("memory:%s/names/%s/v-%d", scope.Hash(), artifacts.NameHash(name), v)
}

// CorruptPayload flips one bit in the middle of a published payload (the
// only byte, for a 1-byte payload), or appends a byte to an empty one, so
// that its digest no longer matches its record. It is a test hook for the
// conformance suite (artifactstest.Corrupter); it fails with CodeNotFound
// when the version is not published.
func (s *Store) CorruptPayload(scope artifacts.Scope, name string, v int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ver, err := s.published(scope, name, v)
	if err != nil {
		return err
	}
	p := slices.Clone(ver.payload) // readers may still hold the old slice
	if len(p) == 0 {
		p = append(p, 0)
	} else {
		p[len(p)/2] ^= 0x01
	}
	ver.payload = p
	return nil
}

// CorruptRecord damages a published version's record (its digest stops
// being a digest), as garbage in a record file would. Reads of the version
// then fail with CodeCorrupt and Walk reports it as a Problem. It is a test
// hook for the conformance suite (artifactstest.Corrupter); it fails with
// CodeNotFound when the version is not published.
func (s *Store) CorruptRecord(scope artifacts.Scope, name string, v int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ver, err := s.published(scope, name, v)
	if err != nil {
		return err
	}
	ver.rec.Digest = "not a digest"
	return nil
}

func (s *Store) published(scope artifacts.Scope, name string, v int64) (*version, error) {
	_, ns, err := s.lookup("corrupt", scope, name)
	if err != nil {
		return nil, err
	}
	ver := ns.published[v]
	if ver == nil {
		return nil, artifacts.Errorf(artifacts.CodeNotFound, "corrupt", nil, "no such version").With(scope, name, v)
	}
	return ver, nil
}

// Usage returns the published payload bytes and versions of a scope and of
// the whole store: what the quotas count.
func (s *Store) Usage(scope artifacts.Scope) (scopeBytes int64, scopeVersions int, totalBytes int64, totalVersions int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sc := s.scopes[scope]; sc != nil {
		scopeBytes, scopeVersions = sc.bytes, sc.versions
	}
	return scopeBytes, scopeVersions, s.totalBytes, s.totalVersions
}

var _ artifacts.NameSlotCounter = (*Store)(nil)

// NameSlots returns the number of names the scope ever held: deleted ones
// keep their slot, as in the v1 layout.
func (s *Store) NameSlots(ctx context.Context, scope artifacts.Scope) (int, error) {
	if err := artifacts.CheckContext(ctx, "count name slots"); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sc := s.scopes[scope]; sc != nil {
		return len(sc.names), nil
	}
	return 0, nil
}
