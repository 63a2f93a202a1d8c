package gcsstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// LayoutName is the name of the layout this package reads and writes.
const LayoutName = "erlang-gcs"

// inspectShown is how many children of a prefix Inspect names.
const inspectShown = 4

// InspectNames is how many object names Inspect lists, at most: the first
// page of a flat listing of the location's root, which it hands to the
// layouts' detection (artifacts.Contents.Listing), and which they extend
// only when it does not decide. 100 names decide almost every store: a
// Google ADK store's first object is an ADK version unless foreign objects
// sort before it, an Erlang store's PREFIX/s/ objects sort early unless
// other objects come first, and where the page stops short of where a
// layout's objects sort, that layout's one-object probe answers. It keeps the common page small: the emulator ignores
// fields= and returns about 875 bytes an object, Cloud Storage sends
// names only.
const InspectNames = 100

// Layout is the erlang-gcs opener for an artifacts.URLMux: objects below
// gs://BUCKET/PREFIX/s/. Its Inspect method is the Inspector of gs://
// locations. It makes one storage client (as OpenURI does) on first use,
// shared by detection, and hands it to the Store that Open returns, whose
// Close closes it; call Close when Open was never reached.
type Layout struct {
	opts Options
	*LazyClient
}

// LazyClient makes one storage client (NewClient) on first use and holds
// it until a Store takes it over (Take) or Close closes it: the client of
// a layout's opener, shared by detection and the Store it opens.
type LazyClient struct {
	mu     sync.Mutex
	client *storage.Client
}

// Client returns the client, making it on first use.
func (l *LazyClient) Client(ctx context.Context) (*storage.Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.client == nil {
		c, err := newClient(ctx)
		if err != nil {
			return nil, err
		}
		l.client = c
	}
	return l.client, nil
}

// Take forgets the client: a Store owns it now, and closes it.
func (l *LazyClient) Take() {
	l.mu.Lock()
	l.client = nil
	l.mu.Unlock()
}

// Close closes the client that no Store took over.
func (l *LazyClient) Close() error {
	l.mu.Lock()
	c := l.client
	l.client = nil
	l.mu.Unlock()
	if c != nil {
		return c.Close()
	}
	return nil
}

// NewLayout returns the erlang-gcs layout's opener; its stores are opened
// with opts.
func NewLayout(opts Options) *Layout { return NewLayoutClient(opts, &LazyClient{}) }

// NewLayoutClient is NewLayout with the storage client of c, which the
// other gs:// layouts of one command share (adkgcs.NewLayoutClient), so
// that detection and the store opened set up one client, not one a layout:
// the Store that Open returns takes it over.
func NewLayoutClient(opts Options, c *LazyClient) *Layout { return &Layout{opts: opts, LazyClient: c} }

// Names returns the PageReader of a flat listing of the object names
// below root (a prefix ending in "/", or "" for the bucket's root) of
// bkt, names only, relative to root: one request a page, with a deadline
// of MaxDeadlineMillis unless ctx has one. Its errors are wrap's of the
// client's (the client's own when wrap is nil).
func Names(bkt *storage.BucketHandle, root string, wrap func(context.Context, error) error) artifacts.PageReader {
	return func(ctx context.Context, token string, n int) ([]string, string, error) {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, artifacts.MaxDeadlineMillis*time.Millisecond)
			defer cancel()
		}
		fail := func(err error) ([]string, string, error) {
			if wrap != nil {
				err = wrap(ctx, err)
			}
			return nil, "", err
		}
		q := &storage.Query{Prefix: root}
		if err := q.SetAttrSelection([]string{"Name"}); err != nil {
			return fail(err)
		}
		var page []*storage.ObjectAttrs
		next, err := iterator.NewPager(bkt.Objects(ctx, q), n, token).NextPage(&page)
		if err != nil {
			return fail(err)
		}
		names := make([]string, len(page))
		for i, a := range page {
			names[i] = strings.TrimPrefix(a.Name, root)
		}
		return names, next, nil
	}
}

// FirstNames lists the first n object names below root of bkt (see
// Names), usually in one request. Its error is the client's, unclassified.
func FirstNames(ctx context.Context, bkt *storage.BucketHandle, root string, n int) (*artifacts.Listing, error) {
	return artifacts.NewListing(ctx, Names(bkt, root, nil), n)
}

// OpenError classifies err, an error of a request that opening a store
// of bucket made: CodeNotFound when the bucket does not exist, else as
// the Store's requests' errors.
func OpenError(ctx context.Context, bucket string, err error) error {
	if isNotExist(err) {
		return artifacts.Errorf(artifacts.CodeNotFound, "open", nil, "bucket %q does not exist", bucket)
	}
	return classify(ctx, "open", err, "bucket %q is not readable", bucket)
}

// Info describes the layout.
func (*Layout) Info() artifacts.LayoutInfo {
	return artifacts.LayoutInfo{
		Name:    LayoutName,
		Scheme:  artifacts.SchemeGCS,
		Writer:  "Erlang ADK adk_artifact_gcs",
		Marker:  "gs://BUCKET/PREFIX holds PREFIX/" + ScopesSegment + "/ (PREFIX defaults to " + DefaultPrefix + ")",
		Example: "gs://my-bucket/" + DefaultPrefix,
		Facts: []string{
			"PREFIX/s/<scope hash>/n/<name hash>/v-<20 digits>.{reserve,data,meta}",
			"versions start at 1; numbers are never reused, not even after a delete (the .reserve object stays)",
			"every record holds the payload's SHA-256; full reads check size and digest, ranges only the size",
			"lifetime ceilings per prefix: " + strconv.Itoa(artifacts.DefaultMaxScanEntries/2) + " scopes, " + strconv.Itoa(artifacts.DefaultMaxScanEntries/2) + " names per scope, " + strconv.Itoa(artifacts.DefaultMaxScanEntries/3) + " version numbers per name",
			"every object is created with ifGenerationMatch=0; repair locks with an object beside the artifacts",
		},
	}
}

// children lists up to n immediate children of prefix/ (of the bucket's
// root for "") in the bucket: object base names, and sub-prefixes with a
// trailing slash.
func (l *Layout) children(ctx context.Context, loc artifacts.Location, prefix string, n int) ([]string, error) {
	const op = "open"
	client, err := l.Client(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, artifacts.MaxDeadlineMillis*time.Millisecond)
		defer cancel()
	}
	// The same bounded retries as the Store's requests: a service that is
	// down fails promptly as unavailable.
	bkt := client.Bucket(loc.Bucket).Retryer(RetryOptions(l.opts)...)
	if prefix != "" {
		prefix += "/"
	}
	it := bkt.Objects(ctx, &storage.Query{Prefix: prefix, Delimiter: "/"})
	it.PageInfo().MaxSize = n
	var out []string
	for len(out) < n {
		a, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			if isNotExist(err) {
				return nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "bucket %q does not exist", loc.Bucket)
			}
			return nil, classify(ctx, op, err, "bucket %q is not readable", loc.Bucket)
		}
		name := a.Name
		if a.Prefix != "" {
			name = a.Prefix
		}
		out = append(out, strings.TrimPrefix(name, prefix))
	}
	return out, nil
}

// Inspect is the Inspector of gs:// locations: a prefix exists when an
// object lies below it; a location naming only a bucket also when the
// bucket holds any object. It makes one request, a flat listing of the
// first InspectNames object names below the location's root
// (Location.ObjectRoot), and returns it as the Contents' Listing for the
// layouts' DetectContents, which may extend it; Contents.Describe then
// describes what the extended listing holds.
func (l *Layout) Inspect(ctx context.Context, loc artifacts.Location) (artifacts.Contents, error) {
	client, err := l.Client(ctx)
	if err != nil {
		return artifacts.Contents{}, err
	}
	lst, err := OpenListing(ctx, client.Bucket(loc.Bucket).Retryer(RetryOptions(l.opts)...), loc)
	if err != nil {
		return artifacts.Contents{}, err
	}
	return artifacts.Contents{Exists: len(lst.Names) > 0, Listing: lst, Describe: func() string { return found(loc, lst) }}, nil
}

// OpenListing reads the first page of InspectNames object names below
// loc's root (Location.ObjectRoot) of bkt, the listing detection reads,
// extends when it does not decide, and reads again where none was handed
// to it: its errors are OpenError's.
func OpenListing(ctx context.Context, bkt *storage.BucketHandle, loc artifacts.Location) (*artifacts.Listing, error) {
	return artifacts.NewListing(ctx, Names(bkt, loc.ObjectRoot(), func(ctx context.Context, err error) error {
		return OpenError(ctx, loc.Bucket, err)
	}), InspectNames)
}

// found describes, for messages, what lst, the listing of loc's root,
// holds: the children of loc's prefix, else (for gs://BUCKET) the
// bucket's top level; "and more" when there are more than it names or
// the listing stops short.
func found(loc artifacts.Location, lst *artifacts.Listing) string {
	if len(lst.Names) == 0 {
		return "no object lies below " + loc.Prefix + "/"
	}
	where := "objects below " + loc.Prefix + "/: "
	kids := childNames(lst.Names, strings.TrimPrefix(loc.Prefix+"/", loc.ObjectRoot()))
	if len(kids) == 0 {
		where, kids = "objects in bucket "+loc.Bucket+": ", childNames(lst.Names, "")
	}
	out := where + strings.Join(kids[:min(inspectShown, len(kids))], ", ")
	if len(kids) > inspectShown || !lst.Complete {
		out += " and more"
	}
	return out
}

// childNames returns the distinct children of prefix among names (sorted
// object names): the base name of an object right below it, or the next
// segment with a trailing slash.
func childNames(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, prefix)
		if !ok || rest == "" {
			continue
		}
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i+1]
		}
		if len(out) == 0 || out[len(out)-1] != rest {
			out = append(out, rest)
		}
	}
	return out
}

// Detect reports whether an object lies below PREFIX/s/.
func (l *Layout) Detect(ctx context.Context, loc artifacts.Location) (bool, error) {
	kids, err := l.children(ctx, loc, loc.Prefix+"/"+ScopesSegment, 1)
	return len(kids) > 0, err
}

var _ artifacts.ContentsDetector = (*Layout)(nil)

// DetectContents is Detect answered from the Inspector's listing when it
// reaches where PREFIX/s/ objects sort; it lists PREFIX/s/ itself only
// when the listing stops short of them.
func (l *Layout) DetectContents(ctx context.Context, loc artifacts.Location, c artifacts.Contents) (bool, error) {
	if lst := c.Listing; lst != nil {
		want := strings.TrimPrefix(loc.Prefix+"/"+ScopesSegment+"/", loc.ObjectRoot())
		for _, n := range lst.Names {
			if strings.HasPrefix(n, want) {
				return true, nil
			}
		}
		if lst.After(want) {
			return false, nil
		}
	}
	return l.Detect(ctx, loc)
}

// Guess recognises a prefix one level short of a store (PREFIX/v1/s/
// exists) and one inside a store (PREFIX ends in /s or holds /s/).
func (l *Layout) Guess(ctx context.Context, loc artifacts.Location) string {
	use := func(prefix, what string) string {
		return fmt.Sprintf("%s: use --store gs://%s/%s, the prefix that holds %s/", what, loc.Bucket, prefix, ScopesSegment)
	}
	if i := strings.LastIndex("/"+loc.Prefix+"/", "/"+ScopesSegment+"/"); i > 0 {
		return use(loc.Prefix[:i-1], "this looks like the inside of a store")
	}
	if kids, err := l.children(ctx, loc, loc.Prefix+"/v1/"+ScopesSegment, 1); err == nil && len(kids) > 0 {
		return use(loc.Prefix+"/v1", "a store is one level down")
	}
	return ""
}

// Open opens the store at loc with the layout's client, which the Store
// then owns. Nothing is created: objects are written by puts.
func (l *Layout) Open(ctx context.Context, loc artifacts.Location, _ bool) (artifacts.Driver, error) {
	client, err := l.Client(ctx)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, client, loc.Bucket, loc.Prefix, l.opts)
	if err != nil {
		return nil, err
	}
	l.Take()
	s.owned = true
	return s, nil
}
