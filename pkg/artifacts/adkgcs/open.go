package adkgcs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"cloud.google.com/go/storage"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// detectSample is how many objects detection reads, at most: a root is a
// Google ADK store when one of its first 1,000 objects parses as a
// version. It reads the first page of gcsstore.InspectNames names (which
// almost always decides), and the rest only when none of them parses.
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
			"versions start at 1 where adk-go wrote the bucket, else at 0, judged by the first 100 objects (1,000 when none of those is a version): 1 when none of the versions among them is 0 (?first_version=N on the store URI overrides)",
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
	names  []string // the object names detection read, relative to the root
	erlang bool     // the root's top level holds adk-artifacts/
}

// sample lists the first page below the location's root and reads it as
// DetectContents reads the Inspector's listing (see fromListing). Open
// reuses the sample of the last Detect of its location for the bucket's
// first version, instead of listing again.
func (l *Layout) sample(ctx context.Context, loc artifacts.Location) (sampled, error) {
	client, err := l.Client(ctx)
	if err != nil {
		return sampled{loc: loc}, err
	}
	lst, err := gcsstore.OpenListing(ctx, l.bucket(client, loc), loc)
	if err != nil {
		return sampled{loc: loc}, err
	}
	return l.fromListing(ctx, loc, lst)
}

// bucket is loc's bucket with the layout's retries.
func (l *Layout) bucket(client *storage.Client, loc artifacts.Location) *storage.BucketHandle {
	return client.Bucket(loc.Bucket).Retryer(gcsstore.RetryOptions(l.opts.Retry)...)
}

// readSample returns the names of lst that detection reads: the names it
// holds (its first page) when one of them parses as a version, else,
// extending it, the first detectSample names (or all, when fewer).
func readSample(ctx context.Context, lst *artifacts.Listing) ([]string, error) {
	if !slices.ContainsFunc(lst.Names, isVersion) {
		if err := lst.Extend(ctx, detectSample); err != nil {
			return nil, err
		}
	}
	return lst.Names[:min(len(lst.Names), detectSample)], nil
}

// isVersion reports whether an object name (relative to the root) parses
// as a version of this layout.
func isVersion(name string) bool {
	_, err := parseObject(name)
	return err == nil
}

// fromListing is the sample of lst, a listing of the names below loc's
// root (see readSample). The listing answers whether the root's top level
// holds adk-artifacts/ when it is complete, or reaches past the names
// adk-artifacts/ objects would have; only a listing cut short before them
// takes a request (one object below adk-artifacts/).
func (l *Layout) fromListing(ctx context.Context, loc artifacts.Location, lst *artifacts.Listing) (sampled, error) {
	out := sampled{loc: loc}
	names, err := readSample(ctx, lst)
	if err != nil {
		return out, err
	}
	out.names = names
	for _, name := range lst.Names {
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
		return out, gcsstore.OpenError(ctx, loc.Bucket, err)
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

// Detect reports whether the root holds ADK version objects (one among
// the first 1,000 objects parses) and no adk-artifacts/ prefix. It reads
// the first gcsstore.InspectNames names, and up to 1,000 only when none of
// them parses.
func (l *Layout) Detect(ctx context.Context, loc artifacts.Location) (bool, error) {
	s, err := l.sample(ctx, loc)
	if err != nil {
		return false, err
	}
	return l.detected(s), nil
}

var _ artifacts.ContentsDetector = (*Layout)(nil)

// DetectContents is Detect on the Inspector's listing, which it extends
// (for every layout after it) when its first page does not decide.
func (l *Layout) DetectContents(ctx context.Context, loc artifacts.Location, c artifacts.Contents) (bool, error) {
	if c.Listing == nil {
		return l.Detect(ctx, loc)
	}
	s, err := l.fromListing(ctx, loc, c.Listing)
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
	if slices.ContainsFunc(s.names, isVersion) {
		l.remember(s)
		return true
	}
	return false
}

// Guess names --layout for a root that holds objects none of which parse
// as ADK versions, and for one that holds ADK objects beside adk-artifacts/.
func (l *Layout) Guess(ctx context.Context, loc artifacts.Location) string {
	s, err := l.sample(ctx, loc)
	names, erlang := s.names, s.erlang
	if err != nil || len(names) == 0 {
		return ""
	}
	adk := slices.ContainsFunc(names, isVersion)
	switch {
	case adk && erlang:
		return fmt.Sprintf("it also holds Google ADK objects beside adk-artifacts/: give --layout %s to read those", LayoutName)
	case !adk && !erlang && !strings.Contains(loc.Prefix, "/s/") && loc.BucketOnly:
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
		// Detection read the same sample Open would.
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
