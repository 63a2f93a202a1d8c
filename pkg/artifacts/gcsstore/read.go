package gcsstore

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/agentstore/agentstore/internal/pool"
	"github.com/agentstore/agentstore/internal/stall"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// listAttrs are the only object attributes listings ask for.
var listAttrs = []string{"Name", "Generation", "Size"}

// object is one listed version object.
type object struct {
	gen  int64
	size int64
}

// nameScan is what one listing of a name's objects tells.
type nameScan struct {
	prefix       string
	objects      int
	published    []int64 // versions with a .meta, ascending
	meta         map[int64]object
	data         map[int64]object
	reservations int
	highest      int64 // highest version among .reserve, .data and .meta
}

// scanName lists the objects of a name prefix, never their contents.
func (s *Store) scanName(ctx context.Context, prefix string) (nameScan, error) {
	return s.scanTail(ctx, prefix, 0)
}

// scanTail lists the objects of a name prefix for versions above after
// (object names sort by version: the version is zero-padded).
func (s *Store) scanTail(ctx context.Context, prefix string, after int64) (nameScan, error) {
	q := &storage.Query{Prefix: prefix, Delimiter: "/"}
	if after > 0 {
		q.StartOffset = prefix + fmt.Sprintf("v-%0*d", VersionDigits, after+1)
	}
	return s.scan(ctx, prefix, q)
}

// scanVersion lists the objects of version n of a name prefix alone: its
// reservation, payload and record (one request).
func (s *Store) scanVersion(ctx context.Context, prefix string, n int64) (nameScan, error) {
	v := VersionObject(n, SuffixMeta)
	return s.scan(ctx, prefix, &storage.Query{Prefix: prefix + strings.TrimSuffix(v, string(SuffixMeta)), Delimiter: "/"})
}

// scan lists the objects q selects below the name prefix.
func (s *Store) scan(ctx context.Context, prefix string, q *storage.Query) (nameScan, error) {
	sc := nameScan{prefix: prefix, meta: map[int64]object{}, data: map[int64]object{}}
	if err := q.SetAttrSelection(listAttrs); err != nil {
		return sc, err
	}
	it := s.bkt().Objects(ctx, q)
	it.PageInfo().MaxSize = 1000
	for {
		a, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return sc, err
		}
		stall.Touch(ctx)
		if a.Name == "" { // a sub-prefix: not of the layout
			continue
		}
		sc.objects++
		suffix, n, ok := ParseVersionObject(strings.TrimPrefix(a.Name, prefix))
		if !ok {
			continue
		}
		sc.highest = max(sc.highest, n)
		switch suffix {
		case SuffixReserve:
			sc.reservations++
		case SuffixData:
			sc.data[n] = object{gen: a.Generation, size: a.Size}
		case SuffixMeta:
			sc.meta[n] = object{gen: a.Generation, size: a.Size}
			sc.published = append(sc.published, n)
		}
	}
	slices.Sort(sc.published)
	return sc, nil
}

// listPrefixes returns the sub-prefixes directly below prefix whose last
// segment is a hash, stopping after stopAt when it is positive.
func (s *Store) listPrefixes(ctx context.Context, prefix string, stopAt int) ([]string, error) {
	q := &storage.Query{Prefix: prefix, Delimiter: "/"}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return nil, err
	}
	it := s.bkt().Objects(ctx, q)
	it.PageInfo().MaxSize = 1000
	var out []string
	for {
		a, err := it.Next()
		if err == iterator.Done {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		stall.Touch(ctx)
		if a.Prefix != "" && isHash(lastSegment(a.Prefix)) {
			out = append(out, a.Prefix)
			if stopAt > 0 && len(out) >= stopAt {
				return out, nil
			}
		}
	}
}

// readRecord reads and decodes the record object objName, pinned to gen
// when it is positive. A missing object is CodeNotFound; an object larger
// than the layout allows, or one that does not decode, CodeCorrupt.
func (s *Store) readRecord(ctx context.Context, op, objName string, gen int64) (artifacts.Record, error) {
	b, err := s.readRaw(ctx, op, objName, gen)
	if err != nil {
		return artifacts.Record{}, err
	}
	return artifacts.DecodeRecord(b)
}

// readRaw reads the record object objName, pinned to gen when it is
// positive, at most artifacts.MaxRecordFileBytes: CodeNotFound when it (or
// that generation) is gone, CodeCorrupt when it is larger.
func (s *Store) readRaw(ctx context.Context, op, objName string, gen int64) ([]byte, error) {
	o := s.obj(objName)
	if gen > 0 {
		o = o.Generation(gen)
	}
	r, err := o.NewReader(ctx)
	if err != nil {
		if isNotExist(err) {
			return nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
		}
		return nil, classify(ctx, op, err, "reading record %s", objName)
	}
	defer r.Close()
	if r.Attrs.Size > artifacts.MaxRecordFileBytes {
		return nil, artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "record %s is %d bytes, more than %d", objName, r.Attrs.Size, artifacts.MaxRecordFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(r, artifacts.MaxRecordFileBytes+1))
	if err != nil {
		return nil, classify(ctx, op, err, "reading record %s", objName)
	}
	if len(b) > artifacts.MaxRecordFileBytes {
		return nil, artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "record %s is larger than %d bytes", objName, artifacts.MaxRecordFileBytes)
	}
	stall.Touch(ctx)
	return b, nil
}

// readVersion reads the record of version n of the listing sc, pinned to
// the generation listed, and binds it in Token to the generations of its
// record and payload objects (see versionToken). A version the listing
// has no record object for is CodeNotFound.
func (s *Store) readVersion(ctx context.Context, op string, sc nameScan, n int64) (artifacts.Record, error) {
	m, ok := sc.meta[n]
	if !ok {
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
	}
	rec, err := s.readRecord(ctx, op, sc.prefix+VersionObject(n, SuffixMeta), m.gen)
	if err != nil {
		return artifacts.Record{}, err
	}
	rec.Token = versionToken(m.gen, sc.data[n].gen)
	return rec, nil
}

// Stat returns the record of a version (artifacts.Latest for the latest).
func (s *Store) Stat(ctx context.Context, scope artifacts.Scope, name string, version int64) (artifacts.Record, error) {
	const op = "stat"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	rec, err := s.stat(cctx, op, scope, name, version)
	if err != nil {
		return artifacts.Record{}, classify(cctx, op, err, "").With(scope, name, version)
	}
	return rec, nil
}

// stat finds and checks the record of a version (artifacts.Latest for the latest).
func (s *Store) stat(ctx context.Context, op string, scope artifacts.Scope, name string, version int64) (artifacts.Record, error) {
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.Record{}, err
	}
	prefix := s.namePrefix(scope.Hash(), artifacts.NameHash(name))
	var sc nameScan
	var err error
	if version == artifacts.Latest {
		if sc, err = s.scanName(ctx, prefix); err != nil {
			return artifacts.Record{}, err
		}
		if len(sc.published) == 0 {
			return artifacts.Record{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no published version")
		}
		version = sc.published[len(sc.published)-1]
	} else if sc, err = s.scanVersion(ctx, prefix, version); err != nil {
		return artifacts.Record{}, err
	}
	rec, err := s.readVersion(ctx, op, sc, version)
	if err != nil {
		return artifacts.Record{}, err
	}
	if err := artifacts.CheckRecord(rec, scope, name, version); err != nil {
		return artifacts.Record{}, err
	}
	return rec, nil
}

// Get opens a version (artifacts.Latest for the latest) for verified reading: the object's
// size is checked against the record before a byte is returned, and the
// Reader checks size and SHA-256 before it reports io.EOF.
func (s *Store) Get(ctx context.Context, scope artifacts.Scope, name string, version int64) (*artifacts.Reader, error) {
	const op = "get"
	rec, err := s.Stat(ctx, scope, name, version)
	if err != nil {
		return nil, relabel(err, op)
	}
	dataName := s.ObjectName(scope, name, rec.Version, SuffixData)
	r, err := s.obj(dataName).NewReader(ctx)
	if err != nil {
		if isNotExist(err) {
			return nil, artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "payload %s is missing", dataName).With(scope, name, rec.Version)
		}
		return nil, classify(ctx, op, err, "opening payload").With(scope, name, rec.Version)
	}
	if r.Attrs.Size != rec.Size {
		r.Close()
		return nil, artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "payload has %d bytes, record says %d", r.Attrs.Size, rec.Size).With(scope, name, rec.Version)
	}
	return artifacts.NewReader(rec, r, 0, -1, true)
}

// GetRange opens length bytes (-1: to the end) at offset of a version. Only
// the range is read, from the payload generation whose size was checked
// against the record; the range's length is checked, its digest is not
// (Capabilities.VerifiedRanges is false).
func (s *Store) GetRange(ctx context.Context, scope artifacts.Scope, name string, version, offset, length int64) (*artifacts.Reader, error) {
	const op = "get"
	rec, err := s.Stat(ctx, scope, name, version)
	if err != nil {
		return nil, relabel(err, op)
	}
	wrap := func(err error, format string, args ...any) error {
		return classify(ctx, op, err, format, args...).With(scope, name, rec.Version)
	}
	dataName := s.ObjectName(scope, name, rec.Version, SuffixData)
	o := s.obj(dataName)
	attrs, err := o.Attrs(ctx)
	if err != nil {
		if isNotExist(err) {
			return nil, artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "payload %s is missing", dataName).With(scope, name, rec.Version)
		}
		return nil, wrap(err, "payload attributes")
	}
	if attrs.Size != rec.Size {
		return nil, artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "payload has %d bytes, record says %d", attrs.Size, rec.Size).With(scope, name, rec.Version)
	}
	off, n := min(offset, rec.Size), length
	if n == -1 || off+n > rec.Size {
		n = rec.Size - off
	}
	var body io.ReadCloser = io.NopCloser(strings.NewReader(""))
	if n > 0 {
		rr, err := o.Generation(attrs.Generation).NewRangeReader(ctx, off, n)
		if err != nil {
			if isNotExist(err) {
				return nil, artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "payload %s vanished", dataName).With(scope, name, rec.Version)
			}
			return nil, wrap(err, "opening payload range")
		}
		body = rr
	}
	return artifacts.NewReader(rec, body, offset, length, false)
}

// relabel returns err with its operation set to op.
func relabel(err error, op string) error {
	if e, ok := err.(*artifacts.Error); ok {
		c := *e
		c.Op = op
		return &c
	}
	return err
}

// ListVersions returns a page of a name's published records.
func (s *Store) ListVersions(ctx context.Context, scope artifacts.Scope, name string, opts artifacts.ListOptions) (artifacts.VersionPage, error) {
	const op = "list versions"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	page, err := s.listVersions(cctx, op, scope, name, opts)
	if err != nil {
		return artifacts.VersionPage{}, classify(cctx, op, err, "").With(scope, name, artifacts.NoVersion)
	}
	return page, nil
}

func (s *Store) listVersions(ctx context.Context, op string, scope artifacts.Scope, name string, opts artifacts.ListOptions) (artifacts.VersionPage, error) {
	var page artifacts.VersionPage
	limit, after := opts.PageSize(), artifacts.VersionCursor(opts)
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return page, err
	}
	prefix := s.namePrefix(scope.Hash(), artifacts.NameHash(name))
	sc, err := s.scanName(ctx, prefix)
	if err != nil {
		return page, err
	}
	if len(sc.published) == 0 {
		return page, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no published version")
	}
	i, _ := slices.BinarySearch(sc.published, after+1)
	rest := sc.published[i:]
	more := len(rest) > limit
	if more {
		rest = rest[:limit]
	}
	recs := make([]artifacts.Record, len(rest))
	found := make([]bool, len(rest))
	errs := make([]error, len(rest))
	idx := make([]int, len(rest))
	for j := range idx {
		idx[j] = j
	}
	err = parallel(ctx, s.opts.Workers, idx, func(j int) {
		n := rest[j]
		rec, err := s.readVersion(ctx, op, sc, n)
		if err == nil {
			err = artifacts.CheckRecord(rec, scope, name, n)
		}
		if artifacts.IsNotFound(err) {
			return // deleted since the listing
		}
		recs[j], found[j], errs[j] = rec, err == nil, err
	})
	if err != nil {
		return page, err
	}
	for j, n := range rest {
		if errs[j] != nil && opts.IncludeBroken && artifacts.ProblemCode(errs[j]) == artifacts.CodeCorrupt {
			// A record that does not decode or does not belong: listed
			// beside the others, bound to its objects (BrokenLister).
			b, err := s.brokenVersion(ctx, op, prefix, sc, n, errs[j])
			if artifacts.IsNotFound(err) {
				continue
			}
			if err != nil {
				return artifacts.VersionPage{}, err
			}
			page.Broken = append(page.Broken, b)
			continue
		}
		if errs[j] != nil {
			return artifacts.VersionPage{}, errs[j]
		}
		if !found[j] {
			continue
		}
		if opts.IncludeBroken {
			if b, bad := s.payloadProblem(prefix, sc, recs[j]); bad {
				page.Broken = append(page.Broken, b)
			}
		}
		page.Items = append(page.Items, recs[j])
	}
	if more && len(rest) > 0 {
		page.NextCursor = strconv.FormatInt(rest[len(rest)-1], 10)
	}
	return page, nil
}

// nameInfo is a name prefix as ListNames sees it.
type nameInfo struct {
	prefix   string
	name     string // "" until known
	scanned  bool
	versions []int64
	meta     map[int64]object
	data     map[int64]object
	latest   *artifacts.Record
	err      error
}

// ListNames returns a page of the scope's names. It lists the scope's name
// prefixes (a delimiter listing), learns the name of each prefix it has not
// seen before from its latest record (names are immutable, so they are
// cached), and then lists the objects of only as many names, in name order
// after the cursor, as it takes to fill the page and to know whether
// another follows. Requests run Options.Workers at a time.
func (s *Store) ListNames(ctx context.Context, scope artifacts.Scope, opts artifacts.ListOptions) (artifacts.NamePage, error) {
	const op = "list names"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	page, err := s.listNames(cctx, op, scope, opts)
	if err != nil {
		return artifacts.NamePage{}, classify(cctx, op, err, "").With(scope, "", artifacts.NoVersion)
	}
	return page, nil
}

func (s *Store) listNames(ctx context.Context, op string, scope artifacts.Scope, opts artifacts.ListOptions) (artifacts.NamePage, error) {
	var page artifacts.NamePage
	limit := opts.PageSize()
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return page, err
	}
	infos, err := s.resolveNames(ctx, op, scope)
	if err != nil {
		return page, err
	}
	slices.SortFunc(infos, func(a, b *nameInfo) int { return strings.Compare(a.name, b.name) })
	i, _ := slices.BinarySearchFunc(infos, opts.Cursor, func(a *nameInfo, c string) int { return strings.Compare(a.name, c) })
	if i < len(infos) && infos[i].name == opts.Cursor {
		i++
	}
	// Walk the candidates in order, listing the objects of those not
	// listed yet in batches, until limit+1 have a published version.
	var found []*nameInfo
	for rest := infos[i:]; len(rest) > 0 && len(found) <= limit; {
		batch := rest[:min(len(rest), limit+1-len(found))]
		rest = rest[len(batch):]
		err := parallel(ctx, s.opts.Workers, batch, func(in *nameInfo) {
			if in.scanned {
				return
			}
			sc, err := s.scanName(ctx, in.prefix)
			in.scanned, in.versions, in.meta, in.data, in.err = true, sc.published, sc.meta, sc.data, err
		})
		if err != nil {
			return page, err
		}
		for _, in := range batch {
			if in.err != nil {
				return page, in.err
			}
			if len(in.versions) > 0 {
				found = append(found, in)
			}
		}
	}
	if len(found) == 0 && opts.Cursor == "" {
		return page, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "scope has no artifacts")
	}
	if len(found) > limit {
		found = found[:limit]
		page.NextCursor = found[len(found)-1].name
	}
	// Read the latest record of every name on the page that lacks it.
	err = parallel(ctx, s.opts.Workers, found, func(in *nameInfo) {
		n := in.versions[len(in.versions)-1]
		if in.latest != nil && in.latest.Version == n {
			return
		}
		rec, err := s.readVersion(ctx, op, nameScan{prefix: in.prefix, meta: in.meta, data: in.data}, n)
		if err == nil {
			err = artifacts.CheckRecord(rec, scope, in.name, n)
		}
		in.latest, in.err = &rec, err
	})
	if err != nil {
		return page, err
	}
	for _, in := range found {
		if in.err != nil {
			return artifacts.NamePage{}, in.err
		}
		page.Items = append(page.Items, artifacts.NameEntry{Name: in.name, Latest: *in.latest, Versions: len(in.versions)})
	}
	return page, nil
}

// resolveNames lists every name prefix of a scope and returns those whose
// name is known: from the cache of immutable hash-to-name mappings, or else
// from the prefix's latest record, read after listing its objects (those
// are kept, scanned). Prefixes without a published version are left out
// when their name is not cached.
func (s *Store) resolveNames(ctx context.Context, op string, scope artifacts.Scope) ([]*nameInfo, error) {
	prefixes, err := s.listPrefixes(ctx, s.namesPrefix(scope.Hash()), 0)
	if err != nil {
		return nil, err
	}
	infos := make([]*nameInfo, len(prefixes))
	var unknown []*nameInfo
	s.mu.Lock()
	for i, p := range prefixes {
		infos[i] = &nameInfo{prefix: p, name: s.names[p]}
		if infos[i].name == "" {
			unknown = append(unknown, infos[i])
		}
	}
	s.mu.Unlock()
	err = parallel(ctx, s.opts.Workers, unknown, func(in *nameInfo) {
		sc, err := s.scanName(ctx, in.prefix)
		if err != nil {
			in.err = err
			return
		}
		in.scanned, in.versions, in.meta, in.data = true, sc.published, sc.meta, sc.data
		if len(sc.published) == 0 {
			return
		}
		n := sc.published[len(sc.published)-1]
		objName := in.prefix + VersionObject(n, SuffixMeta)
		rec, err := s.readVersion(ctx, op, sc, n)
		if err == nil && (rec.Scope != scope || rec.Version != n || artifacts.NameHash(rec.Name) != lastSegment(in.prefix)) {
			err = artifacts.Errorf(artifacts.CodeCorrupt, op, nil, "record %s belongs to %s %q v%d", objName, rec.Scope, rec.Name, rec.Version)
		}
		if artifacts.IsNotFound(err) { // deleted since the listing
			in.versions = nil
			return
		}
		if err != nil {
			in.err = err
			return
		}
		in.name, in.latest = rec.Name, &rec
		s.mu.Lock()
		s.names[in.prefix] = rec.Name
		s.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	out := infos[:0]
	for _, in := range infos {
		if in.err != nil {
			return nil, in.err
		}
		if in.name != "" {
			out = append(out, in)
		}
	}
	return out, nil
}

// parallel runs work on every item with at most Options.Workers goroutines
// and returns the context's error if it ended first.
func parallel[T any](ctx context.Context, workers int, items []T, work func(T)) error {
	pool.Each(ctx, workers, items, func(it T) error { work(it); return nil })
	return artifacts.CheckContext(ctx, "scan")
}

// Delete removes the selected published versions: each record is read and
// checked first, so a damaged record is reported, not guessed at; then the
// .meta is removed, then the .data, each only if it is still the generation
// that was listed. Reservations stay.
func (s *Store) Delete(ctx context.Context, scope artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	const op = "delete"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	recs, err := s.delete(cctx, op, scope, name, sel)
	if err != nil {
		return recs, classify(cctx, op, err, "").With(scope, name, sel.ErrorVersion())
	}
	return recs, nil
}

func (s *Store) delete(ctx context.Context, op string, scope artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return nil, err
	}
	prefix := s.namePrefix(scope.Hash(), artifacts.NameHash(name))
	sc, err := s.scanName(ctx, prefix)
	if err != nil {
		return nil, err
	}
	targets, err := sel.Resolve(op, sc.published)
	if err != nil {
		return nil, err
	}
	recs := make([]artifacts.Record, 0, len(targets))
	for _, n := range targets {
		rec, err := s.readVersion(ctx, op, sc, n)
		if err == nil {
			err = artifacts.CheckRecord(rec, scope, name, n)
		}
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return nil, err
	}
	for i, rec := range recs {
		n := rec.Version
		err := s.obj(prefix + VersionObject(n, SuffixMeta)).If(storage.Conditions{GenerationMatch: sc.meta[n].gen}).Delete(ctx)
		if isNotExist(err) || isPrecondition(err) {
			continue // a concurrent delete won
		}
		if err != nil {
			return recs[:i], err
		}
		if d, ok := sc.data[n]; ok {
			err := s.obj(prefix + VersionObject(n, SuffixData)).If(storage.Conditions{GenerationMatch: d.gen}).Delete(ctx)
			if err != nil && !isNotExist(err) && !isPrecondition(err) {
				return recs[:i+1], err
			}
		}
	}
	return recs, nil
}
