// Package adkgcs is the driver of the google-adk-gcs layout: the Cloud
// Storage objects of Google ADK's GcsArtifactService (adk-go, ADK Python,
// Java and JS), one object per version named
// {app}/{user}/{session}/{filename}/{version} or
// {app}/{user}/user/{filename}/{version}, at the bucket's root.
//
// The layout stores no record and no digest: an object's Content-Type is
// the version's MIME type, its custom metadata the version's metadata
// (ADK's adk* keys included), its size, creation time and generation what
// Cloud Storage reports. Reads check the bytes against the CRC32C the
// service computed when the object was written. Numbers are max+1 over a
// listing and are reused after the highest version is deleted; new
// versions are created with the DoesNotExist precondition and move to the
// next number when a concurrent writer took theirs.
//
// Objects below the root that do not parse as a version of the layout are
// never guessed at: Walk reports each as a Problem with code
// artifacts.CodeForeign naming the object.
package adkgcs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/agentstore/agentstore/internal/gcserr"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// LayoutName is the name of the layout.
const LayoutName = "google-adk-gcs"

// MaxMetadataBytes is Cloud Storage's limit on an object's custom metadata:
// the bytes of every key and value together.
const MaxMetadataBytes = 8192

// Defaults of Options.
const (
	DefaultMaxPutAttempts = 100
	DefaultChunkSize      = 8 << 20
)

// Options configure a Store. The zero value gives the defaults.
type Options struct {
	// MaxArtifactBytes is the largest payload Put accepts (default 64 MiB).
	MaxArtifactBytes int64
	// MaxPageLimit is the largest page limit (default 1000).
	MaxPageLimit int
	// FirstVersion, when FirstVersionSet, is the number of a new name's
	// first version; otherwise it is detected from the bucket (see Open).
	FirstVersion    int64
	FirstVersionSet bool
	// MaxPutAttempts bounds how many numbers one Put tries when
	// concurrent writers keep taking them (HTTP 412) before it fails with
	// CodeConflict (default 100).
	MaxPutAttempts int
	// ChunkSize is the upload chunk of large payloads: the memory one Put
	// holds (default 8 MiB).
	ChunkSize int
	// Retry configures the retries of each request, as gcsstore's, and
	// Retry.WalkIdle bounds a store-wide walk (Walk, ListScopes,
	// PlanRepair) whose context has no deadline by its progress, as
	// gcsstore's: it ends with CodeTimeout once that long passes with no
	// object listed, time spent in the caller's callback not counted
	// (default 5 minutes).
	Retry gcsstore.Options
}

// Store is a google-adk-gcs store: the objects below a root of one bucket.
// It is safe for concurrent use.
type Store struct {
	client *storage.Client
	owned  bool
	bucket string
	root   string // "" or "PREFIX/"
	opts   Options
	first  int64
}

var (
	_ artifacts.Driver        = (*Store)(nil)
	_ artifacts.ExactDeleter  = (*Store)(nil)
	_ artifacts.PayloadOpener = (*Store)(nil)
	_ artifacts.Walker        = (*Store)(nil)
	_ artifacts.ScopeLister   = (*Store)(nil)
)

// listAttrs are the attributes listings ask for: everything a version's
// record is made of, never the bytes.
var listAttrs = []string{"Name", "Generation", "Size", "ContentType", "Metadata", "Created", "CRC32C", "MD5"}

// Open returns the store below root ("" for the bucket's root, else a
// prefix; leading and trailing slashes are dropped) of bucket, using
// client, which it does not close. Unless opts.FirstVersionSet, a new
// name's first version is inferred from the objects detection reads (the
// first 100 below the root, or up to the first 1,000 when none of the
// first 100 is a version): 1 when some are versions and none is version 0
// (adk-go numbers from 1), else 0 (ADK Python, Java, JS).
func Open(ctx context.Context, client *storage.Client, bucket, root string, opts Options) (*Store, error) {
	const op = "open"
	if client == nil || bucket == "" {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "no storage client or bucket")
	}
	root = strings.Trim(root, "/")
	if root != "" {
		root += "/"
	}
	if opts.MaxArtifactBytes <= 0 {
		opts.MaxArtifactBytes = artifacts.DefaultMaxArtifact
	}
	if opts.MaxPageLimit <= 0 {
		opts.MaxPageLimit = artifacts.DefaultMaxPageLimit
	}
	if opts.MaxPutAttempts <= 0 {
		opts.MaxPutAttempts = DefaultMaxPutAttempts
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	s := &Store{client: client, bucket: bucket, root: root, opts: opts}
	if opts.FirstVersionSet {
		if opts.FirstVersion != 0 && opts.FirstVersion != 1 {
			return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "first version %d: want 0 or 1", opts.FirstVersion)
		}
		s.first = opts.FirstVersion
		return s, nil
	}
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	first, err := s.detectFirst(cctx)
	if err != nil {
		return nil, gcserr.Classify(cctx, op, err, "bucket %q is not readable", bucket)
	}
	s.first = first
	return s, nil
}

// detectFirst reads the names detection reads (readSample): the first
// page of gcsstore.InspectNames names, up to 1,000 when none of them is a
// version; then firstVersionOf.
func (s *Store) detectFirst(ctx context.Context) (int64, error) {
	lst, err := gcsstore.FirstNames(ctx, s.bkt(), s.root, gcsstore.InspectNames)
	if err != nil {
		return 0, err
	}
	names, err := readSample(ctx, lst)
	if err != nil {
		return 0, err
	}
	return firstVersionOf(names), nil
}

// firstVersionOf is the first version of a bucket whose first listed
// object names (relative to the root) are names: 1 when some of them are
// versions and none is version 0 (adk-go numbers from 1), else 0.
func firstVersionOf(names []string) int64 {
	found := false
	for _, n := range names {
		p, err := parseObject(n)
		if err != nil {
			continue
		}
		if p.version == 0 {
			return 0
		}
		found = true
	}
	if found {
		return 1
	}
	return 0
}

// Close closes the storage client when the Store owns it.
func (s *Store) Close() error {
	if s.owned {
		return s.client.Close()
	}
	return nil
}

// Bucket returns the bucket's name.
func (s *Store) Bucket() string { return s.bucket }

// Root returns the object name prefix of the store: "" for the bucket's
// root, else PREFIX/.
func (s *Store) Root() string { return s.root }

// Client returns the storage client.
func (s *Store) Client() *storage.Client { return s.client }

// ObjectName returns the object name of a version in the form ADK Go and
// Python write ("user:" kept in user-scope names).
func (s *Store) ObjectName(scope artifacts.Scope, name string, version int64) string {
	return s.root + scopePrefix(scope) + name + "/" + strconv.FormatInt(version, 10)
}

// Capabilities describes the layout: user and session scopes, numbers from
// the bucket's first version and reused after deletes, no digest, no
// lifetime ceilings.
func (s *Store) Capabilities() artifacts.Capabilities {
	return artifacts.Capabilities{
		Name:             "adk-gcs",
		Layout:           LayoutName,
		MaxArtifactBytes: s.opts.MaxArtifactBytes,
		MaxPageLimit:     s.opts.MaxPageLimit,
		VerifiedRanges:   false,
		Durable:          true,
		ScopeKinds:       []artifacts.Kind{artifacts.KindUser, artifacts.KindSession},
		FirstVersion:     s.first,
		ReusesVersions:   true,
		NoCeilings:       true,
		StoresDigest:     false,
		MaxRecordBytes:   MaxMetadataBytes,
		// Object names hold ids and names unescaped; object metadata
		// holds strings; reads check the object's CRC32C.
		UserNamePrefix:     UserPrefix,
		ScopePartForbidden: "/",
		MetadataStrings:    true,
		PlainNames:         true,
		AttributeRecords:   true,
		HeaderMIMETypes:    true,
	}
}

// walkCtx bounds a store-wide walk by its progress, as gcsstore's
// (gcsstore.WalkContext with Options.Retry.WalkIdle).
func (s *Store) walkCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return gcsstore.WalkContext(ctx, s.opts.Retry)
}

func (s *Store) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, artifacts.MaxDeadlineMillis*time.Millisecond)
}

func (s *Store) bkt() *storage.BucketHandle {
	return s.client.Bucket(s.bucket).Retryer(gcsstore.RetryOptions(s.opts.Retry)...)
}

func (s *Store) obj(name string) *storage.ObjectHandle {
	return s.bkt().Object(name)
}

// object is one listed version object.
type object struct {
	p     parsed
	name  string
	attrs *storage.ObjectAttrs
}

// record makes the version's record from the object's attributes.
func (o object) record() artifacts.Record {
	mime := o.attrs.ContentType
	if artifacts.ValidateMIMEType(mime) != nil {
		// What Cloud Storage serves an object stored without one.
		mime = artifacts.DefaultMIMEType
	}
	md := make(artifacts.Metadata, len(o.attrs.Metadata))
	for k, v := range o.attrs.Metadata {
		md[k] = v
	}
	return artifacts.Record{
		Scope:     o.p.scope,
		Name:      o.p.name,
		Version:   o.p.version,
		MIMEType:  mime,
		Size:      o.attrs.Size,
		CreatedAt: max(o.attrs.Created.UnixMilli(), 0),
		Metadata:  md,
		Token:     Token(o.attrs.Generation),
	}
}

// Token is a version's binding to its stored bytes: the object's
// generation, "gen:N". Cloud Storage gives an overwritten object a new
// generation, so a plan that holds the token deletes nothing that was
// rewritten after it was made.
func Token(generation int64) string { return "gen:" + strconv.FormatInt(generation, 10) }

// generationOf parses a Token; 0 when it is not one.
func generationOf(tok string) int64 {
	rest, ok := strings.CutPrefix(tok, "gen:")
	n, err := strconv.ParseInt(rest, 10, 64)
	if !ok || err != nil || n <= 0 {
		return 0
	}
	return n
}

// listing is what one listing below a prefix found.
type listing struct {
	objects []object // parsed version objects
	foreign []foreignObject
}

// foreignObject is an object below the root that is not a version.
type foreignObject struct {
	name   string
	reason string
}

// list lists every object below prefix (relative to the root), with
// delimiter "/" when flat is false (only the objects directly below).
func (s *Store) list(ctx context.Context, prefix string, flat bool) (listing, error) {
	var out listing
	q := &storage.Query{Prefix: s.root + prefix}
	if !flat {
		q.Delimiter = "/"
	}
	if err := q.SetAttrSelection(listAttrs); err != nil {
		return out, err
	}
	it := s.bkt().Objects(ctx, q)
	it.PageInfo().MaxSize = 1000
	for {
		a, err := it.Next()
		if err == iterator.Done {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if a.Name == "" { // a sub-prefix
			continue
		}
		if len(out.objects) == cap(out.objects) {
			// Room for the rest of the page at once, not by doubling.
			out.objects = slices.Grow(out.objects, it.PageInfo().Remaining()+1)
		}
		rel := strings.TrimPrefix(a.Name, s.root)
		if isLockObject(rel) {
			continue
		}
		p, perr := parseObject(rel)
		if perr != nil {
			out.foreign = append(out.foreign, foreignObject{name: a.Name, reason: perr.Error()})
			continue
		}
		out.objects = append(out.objects, object{p: p, name: a.Name, attrs: a})
	}
}

// nameVersions is a name's versions in one scope.
type nameVersions struct {
	name    string
	objects []object // by ascending version
	// shadowed are objects of the other user-scope form for the same name
	// and version: ambiguous, never read.
	shadowed []object
}

// group sorts a scope's objects into names, by bytewise name order, and
// each name's versions ascending. When a user-scope name has objects in
// both forms, the form ADK Go and Python read ("user:" kept) wins and the
// other form's objects are shadowed. It sorts objs in place and the
// names' objects are parts of it: one allocation for the names, none per
// name, whatever the number of objects.
func group(objs []object) []nameVersions {
	slices.SortFunc(objs, func(a, b object) int {
		if c := strings.Compare(a.p.name, b.p.name); c != 0 {
			return c
		}
		return cmp.Compare(a.p.version, b.p.version)
	})
	n := 0
	for i := range objs {
		if i == 0 || objs[i].p.name != objs[i-1].p.name {
			n++
		}
	}
	out := make([]nameVersions, 0, n)
	for i := 0; i < len(objs); {
		j := i + 1
		for j < len(objs) && objs[j].p.name == objs[i].p.name {
			j++
		}
		nv := nameVersions{name: objs[i].p.name, objects: objs[i:j:j]}
		kept := slices.ContainsFunc(nv.objects, func(o object) bool { return o.p.form == formKept })
		stripped := slices.ContainsFunc(nv.objects, func(o object) bool { return o.p.form == formStripped })
		if kept && stripped {
			var keep []object
			for _, o := range nv.objects {
				if o.p.form == formKept {
					keep = append(keep, o)
				} else {
					nv.shadowed = append(nv.shadowed, o)
				}
			}
			nv.objects = keep
		}
		out = append(out, nv)
		i = j
	}
	return out
}

// versions lists a name's version objects (both user-scope forms), by
// ascending version.
func (s *Store) versions(ctx context.Context, scope artifacts.Scope, name string) (nameVersions, error) {
	forms := []form{formKept}
	if scope.Kind == artifacts.KindUser {
		forms = append(forms, formStripped)
	}
	var objs []object
	for _, f := range forms {
		l, err := s.list(ctx, scopePrefix(scope)+filename(scope, name, f)+"/", false)
		if err != nil {
			return nameVersions{}, err
		}
		for _, o := range l.objects {
			if o.p.scope == scope && o.p.name == name {
				objs = append(objs, o)
			}
		}
	}
	g := group(objs)
	if len(g) == 0 {
		return nameVersions{name: name}, nil
	}
	return g[0], nil
}

// find returns the object of a version (artifacts.Latest or a number).
func (s *Store) find(ctx context.Context, op string, scope artifacts.Scope, name string, version int64) (object, error) {
	if err := s.check(op, scope, name); err != nil {
		return object{}, err
	}
	nv, err := s.versions(ctx, scope, name)
	if err != nil {
		return object{}, gcserr.Classify(ctx, op, err, "listing versions")
	}
	if len(nv.objects) == 0 {
		return object{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no published version")
	}
	if version == artifacts.Latest {
		return nv.objects[len(nv.objects)-1], nil
	}
	for _, o := range nv.objects {
		if o.p.version == version {
			return o, nil
		}
	}
	return object{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
}

// check refuses the scopes and names the layout cannot hold unambiguously.
func (s *Store) check(op string, scope artifacts.Scope, name string) error {
	if err := checkScope(op, scope); err != nil {
		return err
	}
	return checkName(op, scope, name)
}

// Stat returns the record of a version.
func (s *Store) Stat(ctx context.Context, scope artifacts.Scope, name string, version int64) (artifacts.Record, error) {
	const op = "stat"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	o, err := s.find(cctx, op, scope, name, version)
	if err != nil {
		return artifacts.Record{}, gcserr.Classify(cctx, op, err, "").With(scope, name, version)
	}
	return o.record(), nil
}

// Get opens a version for reading; the Reader checks the bytes against the
// CRC32C Cloud Storage computed when the object was written and reports
// CodeCorrupt instead of io.EOF on a mismatch.
func (s *Store) Get(ctx context.Context, scope artifacts.Scope, name string, version int64) (*artifacts.Reader, error) {
	return s.GetRange(ctx, scope, name, version, 0, -1)
}

// GetRange opens length bytes at offset of a version; a range that is the
// whole object is checked against its CRC32C, others only by size.
func (s *Store) GetRange(ctx context.Context, scope artifacts.Scope, name string, version, offset, length int64) (*artifacts.Reader, error) {
	const op = "get"
	cctx, cancel := s.callCtx(ctx)
	o, err := s.find(cctx, op, scope, name, version)
	cancel()
	if err != nil {
		return nil, gcserr.Classify(ctx, op, err, "").With(scope, name, version)
	}
	return s.open(ctx, o, offset, length)
}

// OpenPayload opens the bytes of a record a listing or Walk returned,
// pinned to the generation its Token names: an object overwritten since is
// CodeConflict, never read in its place.
func (s *Store) OpenPayload(ctx context.Context, rec artifacts.Record) (*artifacts.Reader, error) {
	const op = "get"
	gen := generationOf(rec.Token)
	if gen == 0 {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "record token %q names no object generation", rec.Token).With(rec.Scope, rec.Name, rec.Version)
	}
	cctx, cancel := s.callCtx(ctx)
	o, err := s.find(cctx, op, rec.Scope, rec.Name, rec.Version)
	cancel()
	if err != nil {
		return nil, gcserr.Classify(ctx, op, err, "").With(rec.Scope, rec.Name, rec.Version)
	}
	if o.attrs.Generation != gen {
		return nil, artifacts.Errorf(artifacts.CodeConflict, op, nil, "object %s was overwritten since it was listed (generation %d, listed %d)", o.name, o.attrs.Generation, gen).With(rec.Scope, rec.Name, rec.Version)
	}
	return s.open(ctx, o, 0, -1)
}

// DeleteExact deletes a version only if its object is still the generation
// ref's Token names, in one request conditioned on that generation
// (ifGenerationMatch): CodeConflict, deleting nothing, when it was
// overwritten; CodeNotFound when it is gone.
func (s *Store) DeleteExact(ctx context.Context, scope artifacts.Scope, name string, ref artifacts.VersionRef) (artifacts.Record, error) {
	const op = "delete"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	gen := generationOf(ref.Token)
	if gen == 0 {
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "token %q names no object generation", ref.Token).With(scope, name, ref.Version)
	}
	o, err := s.find(cctx, op, scope, name, ref.Version)
	if err != nil {
		return artifacts.Record{}, gcserr.Classify(cctx, op, err, "").With(scope, name, ref.Version)
	}
	// Delete the generation planned, whatever the listing says now: the
	// service refuses it when the object was overwritten.
	o.attrs.Generation = gen
	if err := s.deleteGen(cctx, op, o); err != nil {
		return artifacts.Record{}, err
	}
	return o.record(), nil
}

// open reads an object's generation.
func (s *Store) open(ctx context.Context, o object, offset, length int64) (*artifacts.Reader, error) {
	const op = "get"
	rec := o.record()
	size := o.attrs.Size
	if offset > size {
		offset = size
	}
	if length < 0 || offset+length > size {
		length = size - offset
	}
	whole := offset == 0 && length == size
	// A range request of exactly the bytes wanted: the client checks no
	// checksum itself, crcBody does for the whole object.
	var body io.ReadCloser = io.NopCloser(strings.NewReader(""))
	if length > 0 {
		r, err := s.obj(o.name).Generation(o.attrs.Generation).NewRangeReader(ctx, offset, length)
		if err != nil {
			if gcserr.IsNotExist(err) {
				return nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "object %s was deleted", o.name).With(rec.Scope, rec.Name, rec.Version)
			}
			return nil, gcserr.Classify(ctx, op, err, "reading object %s", o.name).With(rec.Scope, rec.Name, rec.Version)
		}
		body = r
	}
	if whole {
		body = newCRCBody(body, o, rec)
		if size <= artifacts.SmallPayloadBytes {
			// A small payload is read and checked whole before its first
			// byte is handed out, as the verified Reader does for a
			// digest: damaged bytes are never returned.
			b, err := io.ReadAll(body)
			body.Close()
			if err != nil {
				if artifacts.CodeOf(err) == artifacts.CodeCorrupt {
					return nil, err
				}
				return nil, gcserr.Classify(ctx, op, err, "reading object %s", o.name).With(rec.Scope, rec.Name, rec.Version)
			}
			body = io.NopCloser(bytes.NewReader(b))
		}
	}
	return artifacts.NewReader(rec, body, offset, length, false)
}

// crcBody checks the bytes it passes on against the object's CRC32C (or,
// without one, its MD5) at the end of the stream.
type crcBody struct {
	io.ReadCloser
	h    hash.Hash32
	o    object
	rec  artifacts.Record
	done bool
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newCRCBody(r io.ReadCloser, o object, rec artifacts.Record) io.ReadCloser {
	return &crcBody{ReadCloser: r, h: crc32.New(castagnoli), o: o, rec: rec}
}

func (c *crcBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.h.Write(p[:n])
	if err == io.EOF && !c.done {
		c.done = true
		if got := c.h.Sum32(); got != c.o.attrs.CRC32C {
			var want, have [4]byte
			binary.BigEndian.PutUint32(want[:], c.o.attrs.CRC32C)
			binary.BigEndian.PutUint32(have[:], got)
			return n, artifacts.Errorf(artifacts.CodeCorrupt, "read", nil, "object %s: the bytes have CRC32C %s, Cloud Storage stored %s when it was written",
				c.o.name, base64.StdEncoding.EncodeToString(have[:]), base64.StdEncoding.EncodeToString(want[:])).With(c.rec.Scope, c.rec.Name, c.rec.Version)
		}
	}
	return n, err
}

// ListNames lists a scope's names: one flat listing of the scope's prefix.
func (s *Store) ListNames(ctx context.Context, scope artifacts.Scope, opts artifacts.ListOptions) (artifacts.NamePage, error) {
	const op = "list names"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	if err := checkScope(op, scope); err != nil {
		return artifacts.NamePage{}, refuse(err, scope, "")
	}
	l, err := s.list(cctx, scopePrefix(scope), true)
	if err != nil {
		return artifacts.NamePage{}, gcserr.Classify(cctx, op, err, "listing %s", s.root+scopePrefix(scope)).With(scope, "", artifacts.NoVersion)
	}
	// The scope's objects, kept in place: the listing is not used again.
	objs := l.objects[:0]
	for _, o := range l.objects {
		if o.p.scope == scope {
			objs = append(objs, o)
		}
	}
	names := group(objs)
	foreign := len(l.foreign)
	for _, nv := range names {
		foreign += len(nv.shadowed)
	}
	if len(names) == 0 {
		return artifacts.NamePage{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no published version in the scope").With(scope, "", artifacts.NoVersion)
	}
	limit := opts.PageSize()
	page := artifacts.NamePage{Foreign: foreign, Items: make([]artifacts.NameEntry, 0, min(limit, len(names)))}
	for _, nv := range names {
		if opts.Cursor != "" && nv.name <= opts.Cursor {
			continue
		}
		if len(page.Items) == limit {
			page.NextCursor = page.Items[len(page.Items)-1].Name
			break
		}
		page.Items = append(page.Items, artifacts.NameEntry{Name: nv.name, Latest: nv.objects[len(nv.objects)-1].record(), Versions: len(nv.objects)})
	}
	return page, nil
}

// ListVersions lists a name's versions, ascending.
func (s *Store) ListVersions(ctx context.Context, scope artifacts.Scope, name string, opts artifacts.ListOptions) (artifacts.VersionPage, error) {
	const op = "list versions"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	if err := s.check(op, scope, name); err != nil {
		return artifacts.VersionPage{}, refuse(err, scope, name)
	}
	nv, err := s.versions(cctx, scope, name)
	if err != nil {
		return artifacts.VersionPage{}, gcserr.Classify(cctx, op, err, "listing versions").With(scope, name, artifacts.NoVersion)
	}
	if len(nv.objects) == 0 {
		return artifacts.VersionPage{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no published version").With(scope, name, artifacts.NoVersion)
	}
	after := int64(-1)
	if opts.Cursor != "" {
		after = artifacts.VersionCursor(opts)
	}
	limit := opts.PageSize()
	var page artifacts.VersionPage
	for _, o := range nv.objects {
		if o.p.version <= after {
			continue
		}
		if len(page.Items) == limit {
			page.NextCursor = strconv.FormatInt(page.Items[len(page.Items)-1].Version, 10)
			break
		}
		page.Items = append(page.Items, o.record())
	}
	return page, nil
}

func refuse(err error, scope artifacts.Scope, name string) error {
	var e *artifacts.Error
	if errors.As(err, &e) {
		return e.With(scope, name, artifacts.NoVersion)
	}
	return err
}

// Delete removes the selected versions: each object is deleted on the
// condition that it is still the generation listed, so a version
// overwritten meanwhile is not deleted (CodeConflict).
func (s *Store) Delete(ctx context.Context, scope artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	const op = "delete"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	if err := s.check(op, scope, name); err != nil {
		return nil, refuse(err, scope, name)
	}
	nv, err := s.versions(cctx, scope, name)
	if err != nil {
		return nil, gcserr.Classify(cctx, op, err, "listing versions").With(scope, name, artifacts.NoVersion)
	}
	published := make([]int64, len(nv.objects))
	for i, o := range nv.objects {
		published[i] = o.p.version
	}
	targets, err := sel.Resolve(op, published)
	if err != nil {
		return nil, refuse(err, scope, name)
	}
	var out []artifacts.Record
	for _, o := range nv.objects {
		if !slices.Contains(targets, o.p.version) {
			continue
		}
		if err := s.deleteGen(cctx, op, o); err != nil {
			return out, err
		}
		out = append(out, o.record())
	}
	return out, nil
}

// deleteGen deletes one object if it is still the generation listed: the
// request names the generation and is conditioned on it, so an object
// overwritten since (another generation) is never deleted.
func (s *Store) deleteGen(ctx context.Context, op string, o object) error {
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return err
	}
	gen := o.attrs.Generation
	err := s.obj(o.name).Generation(gen).If(storage.Conditions{GenerationMatch: gen}).Delete(ctx)
	overwritten := func() error {
		return artifacts.Errorf(artifacts.CodeConflict, op, nil, "object %s was overwritten since it was listed (generation %d): nothing of it was deleted", o.name, gen).With(o.p.scope, o.p.name, o.p.version)
	}
	switch {
	case err == nil:
		return nil
	case gcserr.IsNotExist(err):
		// That generation is gone: overwritten, or deleted.
		if _, aerr := s.obj(o.name).Attrs(ctx); aerr == nil {
			return overwritten()
		}
		return artifacts.Errorf(artifacts.CodeNotFound, op, nil, "object %s was deleted meanwhile", o.name).With(o.p.scope, o.p.name, o.p.version)
	case gcserr.HTTPCode(err) == 412:
		return overwritten()
	}
	return gcserr.Classify(ctx, op, err, "deleting object %s", o.name).With(o.p.scope, o.p.name, o.p.version)
}
