package adkgcs

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"cloud.google.com/go/storage"

	"github.com/agentstore/agentstore/internal/gcserr"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// detectSample is how many objects detection reads, at most.
const detectSample = 1000

// Layout is the google-adk-gcs opener for an artifacts.URLMux. A location
// naming only a bucket (gs://BUCKET) is the bucket's root, where ADK keeps
// its objects; gs://BUCKET/PREFIX is below PREFIX/. It makes one storage
// client on first use, shared by detection, and hands it to the Store that
// Open returns; call Close when Open was never reached.
type Layout struct {
	opts Options
	*gcsstore.LazyClient
	mu   sync.Mutex
	last *sampled // the last successful Detect's sample, for Open
}

// NewLayout returns the layout's opener; its stores are opened with opts
// (and the location's ?first_version=N).
func NewLayout(opts Options) *Layout { return NewLayoutClient(opts, &gcsstore.LazyClient{}) }

// NewLayoutClient is NewLayout with the storage client of c, which the
// other gs:// layouts of one command share (gcsstore.NewLayoutClient): the
// Store that Open returns takes it over.
func NewLayoutClient(opts Options, c *gcsstore.LazyClient) *Layout {
	return &Layout{opts: opts, LazyClient: c}
}

// ChoosesFirstVersion reports that ?first_version=N applies: adk-go numbers
// a name's versions from 1, ADK Python, Java and JS from 0.
func (*Layout) ChoosesFirstVersion() bool { return true }

var _ artifacts.FirstVersionChooser = (*Layout)(nil)

// Info describes the layout.
func (*Layout) Info() artifacts.LayoutInfo {
	return artifacts.LayoutInfo{
		Name:    LayoutName,
		Scheme:  artifacts.SchemeGCS,
		Writer:  "Google ADK GcsArtifactService (adk-go, ADK Python, Java, JS)",
		Marker:  "gs://BUCKET holds {app}/{user}/{session|user}/{filename}/{version} objects and no adk-artifacts/",
		Example: "gs://my-adk-bucket",
		Facts: []string{
			"{app}/{user}/{session}/{filename}/{version} and {app}/{user}/user/{filename}/{version}; no app scope",
			"versions start at 1 where adk-go wrote the bucket, else at 0 (?first_version=N on the store URI overrides)",
			"numbers are max+1 over a listing: deleting a name's highest version lets ADK hand it out again",
			"no digest is stored: reads check the CRC32C Cloud Storage computed; ranges are checked by size only",
			"Content-Type is the MIME type, object metadata the custom metadata (strings); no lifetime ceilings",
			"agentstore creates objects with ifGenerationMatch=0 and deletes them on the generation it listed",
		},
	}
}

// erlangPrefix is the Erlang layouts' default prefix: a root holding it is
// not read as a Google ADK store unless the layout is forced.
const erlangPrefix = "adk-artifacts/"

// sampled is what one detection listing found below a location's root.
type sampled struct {
	loc    artifacts.Location
	names  []string // the first object names, relative to the root
	erlang bool     // the root's top level holds adk-artifacts/
}

// sample reads up to n object names below the location's root, flat, in
// one request, and whether the root's top level holds adk-artifacts/ (the
// Erlang layouts' default prefix): see fromListing. Open reuses the sample
// of the last Detect of its location for the bucket's first version,
// instead of listing again.
func (l *Layout) sample(ctx context.Context, loc artifacts.Location, n int) (sampled, error) {
	client, err := l.Client(ctx)
	if err != nil {
		return sampled{loc: loc}, err
	}
	lst, err := gcsstore.FirstNames(ctx, l.bucket(client, loc), loc.ObjectRoot(), n)
	if err != nil {
		return sampled{loc: loc}, classifyOpen(ctx, loc, err)
	}
	return l.fromListing(ctx, loc, lst)
}

// bucket is loc's bucket with the layout's retries.
func (l *Layout) bucket(client *storage.Client, loc artifacts.Location) *storage.BucketHandle {
	return client.Bucket(loc.Bucket).Retryer(gcsstore.RetryOptions(l.opts.Retry)...)
}

// fromListing is the sample of lst, the first names below loc's root. The
// listing answers whether the root's top level holds adk-artifacts/ when
// it is complete, or reaches past the names adk-artifacts/ objects would
// have; only a listing cut short before them takes a request (one object
// below adk-artifacts/).
func (l *Layout) fromListing(ctx context.Context, loc artifacts.Location, lst artifacts.Listing) (sampled, error) {
	out := sampled{loc: loc, names: lst.Names}
	for _, name := range out.names {
		if strings.HasPrefix(name, erlangPrefix) {
			out.erlang = true
			return out, nil
		}
	}
	if lst.After(erlangPrefix) {
		return out, nil
	}
	client, err := l.Client(ctx)
	if err != nil {
		return out, err
	}
	probe, err := gcsstore.FirstNames(ctx, l.bucket(client, loc), loc.ObjectRoot()+erlangPrefix, 1)
	if err != nil {
		return out, classifyOpen(ctx, loc, err)
	}
	out.erlang = len(probe.Names) > 0
	return out, nil
}

// remember keeps the sample for the next Open of its location.
func (l *Layout) remember(s sampled) {
	l.mu.Lock()
	l.last = &s
	l.mu.Unlock()
}

// recall returns, and forgets, the sample of loc that Detect kept.
func (l *Layout) recall(loc artifacts.Location) (sampled, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.last
	l.last = nil
	if s == nil || s.loc != loc {
		return sampled{}, false
	}
	return *s, true
}

func classifyOpen(ctx context.Context, loc artifacts.Location, err error) error {
	if gcserr.IsNotExist(err) {
		return artifacts.Errorf(artifacts.CodeNotFound, "open", nil, "bucket %q does not exist", loc.Bucket)
	}
	return gcserr.Classify(ctx, "open", err, "bucket %q is not readable", loc.Bucket)
}

// Detect reports whether the root holds ADK version objects (one among the
// first 1,000 objects parses) and no adk-artifacts/ prefix.
func (l *Layout) Detect(ctx context.Context, loc artifacts.Location) (bool, error) {
	s, err := l.sample(ctx, loc, detectSample)
	if err != nil {
		return false, err
	}
	return l.detected(s), nil
}

var _ artifacts.ContentsDetector = (*Layout)(nil)

// DetectContents is Detect on the Inspector's listing when it holds the
// same first 1,000 names (or all of them) that Detect would list.
func (l *Layout) DetectContents(ctx context.Context, loc artifacts.Location, c artifacts.Contents) (bool, error) {
	lst := c.Listing
	if lst == nil || (!lst.Complete && len(lst.Names) < detectSample) {
		return l.Detect(ctx, loc)
	}
	first := *lst
	if len(first.Names) > detectSample {
		first.Names, first.Complete = first.Names[:detectSample], false
	}
	s, err := l.fromListing(ctx, loc, first)
	if err != nil {
		return false, err
	}
	return l.detected(s), nil
}

// detected reports whether s shows a store of this layout, and keeps it
// for Open when it does.
func (l *Layout) detected(s sampled) bool {
	if s.erlang {
		return false
	}
	for _, n := range s.names {
		if _, err := parseObject(n); err == nil {
			l.remember(s)
			return true
		}
	}
	return false
}

// Guess names --layout for a root that holds objects none of which parse
// as ADK versions, and for one that holds ADK objects beside adk-artifacts/.
func (l *Layout) Guess(ctx context.Context, loc artifacts.Location) string {
	s, err := l.sample(ctx, loc, detectSample)
	names, erlang := s.names, s.erlang
	if err != nil || len(names) == 0 {
		return ""
	}
	adk := 0
	for _, n := range names {
		if _, err := parseObject(n); err == nil {
			adk++
		}
	}
	switch {
	case adk > 0 && erlang:
		return fmt.Sprintf("it also holds Google ADK objects beside adk-artifacts/: give --layout %s to read those", LayoutName)
	case adk == 0 && !erlang && !strings.Contains(loc.Prefix, "/s/") && loc.BucketOnly:
		return fmt.Sprintf("none of its first objects is a Google ADK artifact ({app}/{user}/{session}/{filename}/{version}); to read it as one anyway give --layout %s", LayoutName)
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
	opts := l.opts
	sample, sampledHere := l.recall(loc)
	switch {
	case loc.FirstVersionSet:
		opts.FirstVersion, opts.FirstVersionSet = loc.FirstVersion, true
	case !opts.FirstVersionSet && sampledHere:
		// Detection listed the same first page Open would.
		opts.FirstVersion, opts.FirstVersionSet = firstVersionOf(sample.names), true
	}
	root := ""
	if !loc.BucketOnly {
		root = loc.Prefix
	}
	s, err := Open(ctx, client, loc.Bucket, root, opts)
	if err != nil {
		return nil, err
	}
	l.Take()
	s.owned = true
	return s, nil
}
