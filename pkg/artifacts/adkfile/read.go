package adkfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/big"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// firstVersion is the number of a name's first version.
const firstVersion = 0

// meta is metadata.json as ADK writes it.
type meta struct {
	FileName       *string          `json:"fileName"`
	MIMEType       *string          `json:"mimeType,omitempty"`
	FileURI        *string          `json:"fileUri,omitempty"`
	Version        *json.Number     `json:"version"`
	CanonicalURI   *string          `json:"canonicalUri,omitempty"`
	CustomMetadata *json.RawMessage `json:"customMetadata,omitempty"`
	CreateTime     *json.RawMessage `json:"createTime,omitempty"`
	DisplayName    *string          `json:"displayName,omitempty"`
}

// entry is one version directory as read: its record when published, or
// why it is not.
type entry struct {
	version int64
	dir     string // relative to the root: …/versions/N
	rec     artifacts.Record
	ref     bool   // a file reference (fileUri, no payload)
	payload string // relative path of the payload file ("" for a reference)
	base    string // the payload's file name
	// state is stPublished, stIncomplete (no metadata.json: a save killed
	// mid-write, never published) or stBroken (metadata.json present but
	// wrong, payload missing: err says how).
	state int
	err   error
}

const (
	stPublished = iota
	stIncomplete
	stBroken
)

// versionNumber parses a version directory's name: canonical decimal.
func versionNumber(s string) (int64, bool) {
	if s == "" || len(s) > 18 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// pendingNumber parses ".N.pending".
func pendingNumber(s string) (int64, bool) {
	if !strings.HasPrefix(s, ".") || !strings.HasSuffix(s, ".pending") {
		return 0, false
	}
	return versionNumber(strings.TrimSuffix(strings.TrimPrefix(s, "."), ".pending"))
}

// deletingPrefix starts the name a Delete renames a version directory to
// before removing it.
const deletingPrefix = ".deleting-"

// versionDirs lists a name's versions/ directory: the numbered version
// directories (ascending), and every other entry's name. A missing
// versions/ gives nothing.
func (s *Store) versionDirs(op, vdir string) (nums []int64, other []fs.DirEntry, err error) {
	entries, err := s.readDir(op, vdir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if n, ok := versionNumber(e.Name()); ok && e.IsDir() {
			nums = append(nums, n)
			continue
		}
		other = append(other, e)
	}
	slices.Sort(nums)
	return nums, other, nil
}

// readDir reads a directory of the tree; a missing one is empty, and one
// that is a symbolic link or not a directory is CodeUnsafeStore.
func (s *Store) readDir(op, rel string) ([]fs.DirEntry, error) {
	ok, err := s.dirExists(op, rel)
	if err != nil || !ok {
		return nil, err
	}
	f, err := s.root.Open(rel)
	if err != nil {
		return nil, readErr(op, s.abs(rel), err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, readErr(op, s.abs(rel), err)
	}
	return entries, nil
}

// lstatRegular stats rel and refuses anything but a regular file with
// CodeUnsafeStore (a symbolic link, named pipe, directory...).
func (s *Store) lstatRegular(op, rel string) (fs.FileInfo, error) {
	fi, err := s.root.Lstat(rel)
	if err != nil {
		return nil, readErr(op, s.abs(rel), err)
	}
	if !fi.Mode().IsRegular() {
		return nil, artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is %s, not a regular file; it was not read", s.abs(rel), osutil.KindOf(fi.Mode()))
	}
	return fi, nil
}

// openRegular opens a regular file of the tree without following a final
// symbolic link or blocking on a named pipe, and checks it is the file fi
// describes when fi is not nil.
func (s *Store) openRegular(op, rel string, fi fs.FileInfo) (*os.File, error) {
	if fi == nil {
		var err error
		if fi, err = s.lstatRegular(op, rel); err != nil {
			return nil, err
		}
	}
	f, err := s.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, readErr(op, s.abs(rel), err)
	}
	got, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, readErr(op, s.abs(rel), err)
	}
	if !got.Mode().IsRegular() || !os.SameFile(fi, got) {
		f.Close()
		return nil, artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s changed into another file while it was opened; it was not read", s.abs(rel))
	}
	return f, nil
}

// readVersion reads the version directory dir (…/versions/N) of name in
// scope; base is the payload's file name.
func (s *Store) readVersion(op string, scope artifacts.Scope, name, dir, base string, version int64) entry {
	e := entry{version: version, dir: dir, base: base}
	corrupt := func(format string, args ...any) entry {
		e.state = stBroken
		e.err = artifacts.Errorf(artifacts.CodeCorrupt, op, nil, format, args...).With(scope, name, version)
		return e
	}
	mrel := path.Join(dir, MetadataFile)
	mfi, err := s.root.Lstat(mrel)
	if errors.Is(err, fs.ErrNotExist) {
		e.state = stIncomplete
		return e
	}
	if err != nil {
		e.state, e.err = stBroken, readErr(op, s.abs(mrel), err)
		return e
	}
	if !mfi.Mode().IsRegular() {
		e.state = stBroken
		e.err = artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is %s, not a regular file; it was not read", s.abs(mrel), osutil.KindOf(mfi.Mode())).With(scope, name, version)
		return e
	}
	if mfi.Size() > MaxMetadataFileBytes {
		return corrupt("%s is %d bytes, more than the %d a metadata.json may have; it was not read", s.abs(mrel), mfi.Size(), MaxMetadataFileBytes)
	}
	f, err := s.openRegular(op, mrel, mfi)
	if err != nil {
		e.state, e.err = stBroken, err
		return e
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxMetadataFileBytes+1))
	f.Close()
	if err != nil {
		e.state, e.err = stBroken, readErr(op, s.abs(mrel), err)
		return e
	}
	if len(b) > MaxMetadataFileBytes {
		return corrupt("%s grew past %d bytes while it was read", s.abs(mrel), MaxMetadataFileBytes)
	}
	m, err := decodeMeta(b)
	if err != nil {
		return corrupt("%s does not parse: %v", s.abs(mrel), err)
	}
	v, err := m.Version.Int64()
	if err != nil || v != version {
		return corrupt("%s says version %s, but it lies in the directory of version %d", s.abs(mrel), m.Version, version)
	}
	if want := strings.TrimPrefix(name, UserPrefix); *m.FileName != name && *m.FileName != want {
		return corrupt("%s says fileName %q, but it lies in the directory of %q", s.abs(mrel), *m.FileName, name)
	}
	md, err := customMetadata(m.CustomMetadata)
	if err != nil {
		return corrupt("%s: customMetadata %v", s.abs(mrel), err)
	}
	rec := artifacts.Record{Scope: scope, Name: name, Version: version, Metadata: md}
	if m.MIMEType != nil {
		rec.MIMEType = *m.MIMEType
	}
	rec.CreatedAt = createdAt(m.CreateTime, mfi.ModTime())
	payloadSize, payloadNS := int64(0), int64(0)
	prel := path.Join(dir, base)
	switch pfi, err := s.lstatRegular(op, prel); {
	case err == nil:
		payloadSize, payloadNS = pfi.Size(), pfi.ModTime().UnixNano()
		e.payload = prel
	case m.FileURI != nil && artifacts.IsNotFound(err):
		// A file reference: metadata.json only, its fileUri says where.
		e.ref = true
	case artifacts.IsNotFound(err):
		return corrupt("the payload %s is missing (metadata.json names no fileUri)", s.abs(prel))
	default:
		e.state, e.err = stBroken, withArtifact(err, scope, name, version)
		return e
	}
	rec.Size = payloadSize
	e.rec = rec
	e.rec.Token = token(payloadSize, payloadNS, mfi)
	e.state = stPublished
	return e
}

// token binds the stored bytes of a version: size and modification time of
// its payload and of its metadata.json.
func token(payloadSize, payloadNS int64, mfi fs.FileInfo) string {
	return fmt.Sprintf("%d:%d:%d:%d", payloadSize, payloadNS, mfi.Size(), mfi.ModTime().UnixNano())
}

func withArtifact(err error, scope artifacts.Scope, name string, version int64) error {
	var e *artifacts.Error
	if errors.As(err, &e) {
		return e.With(scope, name, version)
	}
	return err
}

// decodeMeta parses metadata.json: a JSON object with at least fileName
// and version; the other keys of ADK's are checked for their types.
func decodeMeta(b []byte) (meta, error) {
	var m meta
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return meta{}, jsonReason(err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return meta{}, errors.New("more than one JSON value")
	}
	switch {
	case m.FileName == nil:
		return meta{}, errors.New("no fileName")
	case m.Version == nil:
		return meta{}, errors.New("no version")
	}
	return m, nil
}

// jsonReason words a JSON decoding error without Go type names.
func jsonReason(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s has a value of the wrong type", te.Field)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not JSON (at byte %d)", se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("not JSON (empty or cut short)")
	}
	return errors.New("not a JSON object")
}

// customMetadata converts customMetadata (a JSON object, or absent) into
// the record's metadata: integers that fit become int64, larger ones
// *big.Int, others float64.
func customMetadata(raw *json.RawMessage) (artifacts.Metadata, error) {
	if raw == nil || string(*raw) == "null" {
		return artifacts.Metadata{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(*raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, jsonReason(err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("is not a JSON object")
	}
	out, _ := convertNumbers(m).(map[string]any)
	return out, nil
}

func convertNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if bi, ok := new(big.Int).SetString(string(x), 10); ok {
			return bi
		}
		f, err := x.Float64()
		if err != nil || math.IsInf(f, 0) {
			return string(x)
		}
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = convertNumbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = convertNumbers(e)
		}
		return x
	}
	return v
}

// createdAt returns createTime (ADK Python's: seconds since the epoch, or
// an RFC 3339 time) in milliseconds, else the metadata file's time.
func createdAt(raw *json.RawMessage, mtime time.Time) int64 {
	if raw != nil {
		var n json.Number
		if err := json.Unmarshal(*raw, &n); err == nil {
			if f, err := n.Float64(); err == nil && f >= 0 && f < 1e11 {
				return int64(f * 1000)
			}
		}
		var s string
		if err := json.Unmarshal(*raw, &s); err == nil {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.UnixMilli() >= 0 {
				return t.UnixMilli()
			}
		}
	}
	return max(mtime.UnixMilli(), 0)
}

// versions reads every numbered version directory of name in scope.
func (s *Store) versions(op string, scope artifacts.Scope, name string) ([]entry, error) {
	dir, base, err := s.nameDir(op, scope, name)
	if err != nil {
		return nil, err
	}
	return s.versionsAt(op, scope, name, dir, base)
}

// versionsAt reads the version directories below the name directory dir.
func (s *Store) versionsAt(op string, scope artifacts.Scope, name, dir, base string) ([]entry, error) {
	vdir := path.Join(dir, VersionsDir)
	nums, _, err := s.versionDirs(op, vdir)
	if err != nil {
		return nil, withArtifact(err, scope, name, artifacts.NoVersion)
	}
	out := make([]entry, 0, len(nums))
	for _, n := range nums {
		out = append(out, s.readVersion(op, scope, name, path.Join(vdir, strconv.FormatInt(n, 10)), base, n))
	}
	return out, nil
}

// find returns the entry of version (latest: the highest published).
// A version that is not published is CodeNotFound; one whose metadata or
// payload is broken is its error.
func (s *Store) find(ctx context.Context, op string, scope artifacts.Scope, name string, version int64) (entry, error) {
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return entry{}, err
	}
	if version == artifacts.Latest {
		es, err := s.versions(op, scope, name)
		if err != nil {
			return entry{}, notFoundFor(err, scope, name)
		}
		for i := len(es) - 1; i >= 0; i-- {
			switch es[i].state {
			case stPublished:
				return es[i], nil
			case stBroken:
				return entry{}, es[i].err
			}
		}
		return entry{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such artifact").With(scope, name, artifacts.NoVersion)
	}
	dir, base, err := s.nameDir(op, scope, name)
	if err != nil {
		return entry{}, notFoundFor(err, scope, name)
	}
	vdir := path.Join(dir, VersionsDir, strconv.FormatInt(version, 10))
	ok, err := s.dirExists(op, vdir)
	if err != nil {
		return entry{}, withArtifact(err, scope, name, version)
	}
	if !ok {
		return entry{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version").With(scope, name, version)
	}
	e := s.readVersion(op, scope, name, vdir, base, version)
	switch e.state {
	case stIncomplete:
		return entry{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "version %d was never published (its directory has no metadata.json: a save killed mid-write; fs repair removes it)", version).With(scope, name, version)
	case stBroken:
		return entry{}, e.err
	}
	return e, nil
}

// notFoundFor turns the app error of a users/ store into its not-found.
func notFoundFor(err error, scope artifacts.Scope, name string) error {
	var ae *appError
	if errors.As(err, &ae) {
		return ae.err().With(scope, name, artifacts.NoVersion)
	}
	return err
}

// Stat returns the record of a version (latest: the highest published).
func (s *Store) Stat(ctx context.Context, scope artifacts.Scope, name string, version int64) (artifacts.Record, error) {
	e, err := s.find(ctx, "stat", scope, name, version)
	if err != nil {
		return artifacts.Record{}, err
	}
	return e.rec, nil
}

// Get opens a version for reading; the Reader checks the payload's size.
func (s *Store) Get(ctx context.Context, scope artifacts.Scope, name string, version int64) (*artifacts.Reader, error) {
	return s.GetRange(ctx, scope, name, version, 0, -1)
}

// GetRange opens length bytes at offset of a version (-1: to the end).
func (s *Store) GetRange(ctx context.Context, scope artifacts.Scope, name string, version int64, offset, length int64) (*artifacts.Reader, error) {
	e, err := s.find(ctx, "get", scope, name, version)
	if err != nil {
		return nil, err
	}
	return s.open(e.rec, e.payload, offset, length)
}

// OpenPayload opens the payload of a record Walk or a listing returned.
func (s *Store) OpenPayload(ctx context.Context, rec artifacts.Record) (*artifacts.Reader, error) {
	e, err := s.find(ctx, "get", rec.Scope, rec.Name, rec.Version)
	if err != nil {
		return nil, err
	}
	return s.open(e.rec, e.payload, 0, -1)
}

// open returns the Reader of a payload (rel; "" for a file reference,
// whose payload is empty).
func (s *Store) open(rec artifacts.Record, rel string, offset, length int64) (*artifacts.Reader, error) {
	offset = min(offset, rec.Size)
	if length == -1 || offset+length > rec.Size {
		length = rec.Size - offset
	}
	if rel == "" {
		return artifacts.NewReader(rec, io.NopCloser(bytes.NewReader(nil)), offset, length, false)
	}
	f, err := s.openRegular("get", rel, nil)
	if err != nil {
		return nil, withArtifact(err, rec.Scope, rec.Name, rec.Version)
	}
	// One byte past a range that ends the payload: a file that grew
	// since its size was read then reads longer, which the Reader
	// reports, instead of passing for the payload.
	n := length
	if offset+length == rec.Size {
		n++
	}
	body := struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, offset, n), f}
	return artifacts.NewReader(rec, body, offset, length, false)
}

// ListNames returns a page of the scope's names with a published version.
// It lists the scope's name directories (directories only), then reads
// the versions of the names after the cursor until the page is full: the
// cost of a page is the page's names, not the scope's.
func (s *Store) ListNames(ctx context.Context, scope artifacts.Scope, opts artifacts.ListOptions) (artifacts.NamePage, error) {
	const op = "list names"
	dir, err := s.scopeDir(op, scope)
	if err != nil {
		return artifacts.NamePage{}, notFoundFor(err, scope, "")
	}
	rels, _, err := s.scanNames(ctx, op, dir)
	if err != nil {
		return artifacts.NamePage{}, err
	}
	type candidate struct{ name, rel string }
	var names []candidate
	for _, rel := range rels {
		// As walkName: a path that is no name ADK can save is foreign.
		name := apiName(scope.Kind, rel)
		if p, err := pathName(scope, name); err != nil || p != rel || artifacts.ValidateName(name) != nil {
			continue
		}
		names = append(names, candidate{name, rel})
	}
	slices.SortFunc(names, func(a, b candidate) int { return strings.Compare(a.name, b.name) })
	// published reads a name's versions: its usage when it has a
	// published one.
	published := func(c candidate) (artifacts.NameUsage, bool, error) {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return artifacts.NameUsage{}, false, err
		}
		var n artifacts.NameUsage
		err := s.walkName(op, scope, dir, c.rel, func(u artifacts.NameUsage, _ []artifacts.Problem) { n = u })
		return n, err == nil && len(n.Records) > 0, err
	}
	var page artifacts.NamePage
	limit := opts.PageSize()
	found := false
	for _, c := range names {
		if opts.Cursor != "" && c.name <= opts.Cursor {
			continue
		}
		n, ok, err := published(c)
		if err != nil {
			return artifacts.NamePage{}, err
		}
		if !ok {
			continue
		}
		found = true
		if len(page.Items) == limit {
			page.NextCursor = page.Items[len(page.Items)-1].Name
			break
		}
		page.Items = append(page.Items, artifacts.NameEntry{Name: n.Name, Latest: n.Records[len(n.Records)-1], Versions: len(n.Records)})
	}
	// Nothing after the cursor: an empty last page of a scope that has
	// names before it, or a scope without any.
	for _, c := range names {
		if found || opts.Cursor == "" || c.name > opts.Cursor {
			break
		}
		_, ok, err := published(c)
		if err != nil {
			return artifacts.NamePage{}, err
		}
		found = ok
	}
	if !found {
		return artifacts.NamePage{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "scope has no artifacts").With(scope, "", artifacts.NoVersion)
	}
	return page, nil
}

// ListVersions returns a page of a name's published records, ascending,
// after opts.Cursor (a version number; empty: from the first). It lists
// the version directories, then reads those after the cursor until the
// page is full: the cost of a page is the page's versions.
func (s *Store) ListVersions(ctx context.Context, scope artifacts.Scope, name string, opts artifacts.ListOptions) (artifacts.VersionPage, error) {
	const op = "list versions"
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.VersionPage{}, err
	}
	dir, base, err := s.nameDir(op, scope, name)
	if err != nil {
		return artifacts.VersionPage{}, notFoundFor(err, scope, name)
	}
	vdir := path.Join(dir, VersionsDir)
	nums, _, err := s.versionDirs(op, vdir)
	if err != nil {
		return artifacts.VersionPage{}, withArtifact(err, scope, name, artifacts.NoVersion)
	}
	after := int64(-1)
	if opts.Cursor != "" {
		if after, err = strconv.ParseInt(opts.Cursor, 10, 64); err != nil {
			return artifacts.VersionPage{}, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "version cursor %q is not a version number", opts.Cursor)
		}
	}
	read := func(n int64) entry {
		return s.readVersion(op, scope, name, path.Join(vdir, strconv.FormatInt(n, 10)), base, n)
	}
	var page artifacts.VersionPage
	found := false
	limit := opts.PageSize()
	// With IncludeBroken a version ADK counts but cannot load is listed
	// as broken (see brokenOf); one that cannot be read is still an
	// error: unreadable is not corrupt.
	isBroken := func(e entry) bool {
		return opts.IncludeBroken && (e.state == stIncomplete || e.state == stBroken && artifacts.ProblemCode(e.err) == artifacts.CodeCorrupt)
	}
	listed, last := 0, int64(0) // versions on the page, broken ones included
	for _, n := range nums {
		if n <= after {
			continue
		}
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return artifacts.VersionPage{}, err
		}
		e := read(n)
		broken := isBroken(e)
		if e.state == stIncomplete && !broken {
			continue
		}
		if e.state == stBroken && !broken {
			// Never list around a damaged version quietly: ADK would
			// fail to load it too. fs verify names it.
			return artifacts.VersionPage{}, e.err
		}
		found = true
		if listed == limit {
			page.NextCursor = strconv.FormatInt(last, 10)
			break
		}
		if broken {
			b, _, err := s.brokenOf(op, e)
			if artifacts.IsNotFound(err) {
				continue // deleted since it was read
			}
			if err != nil {
				return artifacts.VersionPage{}, withArtifact(err, scope, name, e.version)
			}
			page.Broken = append(page.Broken, b)
		} else {
			page.Items = append(page.Items, e.rec)
		}
		listed, last = listed+1, e.version
	}
	// Nothing after the cursor: an empty last page of a name that has
	// versions before it, or a name without any.
	for _, n := range nums {
		if found || n > after {
			break
		}
		e := read(n)
		found = e.state == stPublished || isBroken(e)
	}
	if !found {
		return artifacts.VersionPage{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such artifact").With(scope, name, artifacts.NoVersion)
	}
	return page, nil
}
