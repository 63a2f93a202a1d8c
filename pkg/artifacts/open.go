package artifacts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// LayoutInfo describes a store layout: what it is called, where it lives,
// how it is recognised and what it can do. `agentstore layouts` prints it.
type LayoutInfo struct {
	// Name is the layout's stable name, e.g. "erlang-fs".
	Name string `json:"name"`
	// Scheme is the location scheme it lives at: SchemeFile or SchemeGCS.
	Scheme string `json:"scheme"`
	// Writer names the library whose files or objects this layout are.
	Writer string `json:"writer"`
	// Marker says how detection recognises it, e.g. "ROOT holds v1/".
	Marker string `json:"marker"`
	// Example is a --store value of this layout.
	Example string `json:"example"`
	// Facts are what the layout can and cannot do, one sentence each.
	Facts []string `json:"facts"`
}

// Layout is one layout's opener: it recognises its stores and opens them.
// A layout lives in its driver's package and is registered on a URLMux.
type Layout interface {
	// Info describes the layout.
	Info() LayoutInfo
	// Detect reports whether loc holds a store of this layout. It only
	// reads.
	Detect(ctx context.Context, loc Location) (bool, error)
	// Guess returns, when loc looks like a part of (or the place next to) a
	// store of this layout, a sentence saying what to use instead; "" when
	// it does not. It only reads.
	Guess(ctx context.Context, loc Location) string
	// Open opens the store at loc. With create a store that does not
	// exist yet is made (on first write or now, as the layout does it);
	// without it nothing is ever created.
	Open(ctx context.Context, loc Location, create bool) (Driver, error)
}

// FirstVersionChooser is implemented by a Layout whose writers differ in the
// number of a name's first version, so that a store URI's ?first_version=N
// picks it. Opening a location that gives ?first_version=N in a layout that
// does not choose is CodeInvalidArgument: the parameter would be ignored.
type FirstVersionChooser interface {
	// ChoosesFirstVersion reports whether ?first_version=N applies.
	ChoosesFirstVersion() bool
}

// Contents is what a location holds, as a scheme's Inspector sees it
// before any layout is detected.
type Contents struct {
	// Exists is false when nothing is there: no directory, no object
	// under the prefix, no bucket.
	Exists bool
	// Empty is true for an existing directory with no entries.
	Empty bool
	// Found describes what is there, for messages: "a regular file",
	// "a directory holding etc, hosts, passwd and 80 more".
	Found string
	// Describe, when set, stands for Found: it describes what has been
	// read by the time it is called (detection may extend a Listing, and
	// then knows more than the Inspector did), and costs nothing unless a
	// message needs it. What returns the one that applies.
	Describe func() string
	// Listing is, when the Inspector listed the location's objects to
	// answer (gs://), what that listing found, for the layouts'
	// DetectContents; nil otherwise.
	Listing *Listing
}

// What describes what the location holds, for messages: Describe's
// answer when it is set, else Found.
func (c Contents) What() string {
	if c.Describe != nil {
		return c.Describe()
	}
	return c.Found
}

// Listing is a flat listing of the objects below a Cloud Storage
// location's root (Location.ObjectRoot: the bucket's root for
// gs://BUCKET, else PREFIX/), names only, in byte order, read a page at a
// time: Names are the names read so far, and Extend reads more on demand,
// from where the last page stopped, so that the layouts' detection shares
// one listing and the common case costs one small request. A Listing is
// not safe for concurrent use.
type Listing struct {
	// Names are the object names, relative to the root, in byte order.
	Names []string
	// Complete is true when Names are all the objects below the root.
	Complete bool

	read  PageReader // reads the next page; nil for a Listing literal
	token string     // the next page's token
}

// PageReader reads one page of a flat listing of object names: up to n
// names from where token says ("" for the first page), relative to the
// listing's root, in byte order, and the next page's token ("" after the
// last page). Its errors are the ones its callers return: classified
// (CodeOf).
type PageReader func(ctx context.Context, token string, n int) (names []string, next string, err error)

// NewListing reads the first page of up to n names with read, and
// returns a Listing whose Extend reads the next ones with read.
func NewListing(ctx context.Context, read PageReader, n int) (*Listing, error) {
	l := &Listing{read: read}
	if err := l.Extend(ctx, n); err != nil {
		return nil, err
	}
	return l, nil
}

// Extend reads further pages until the listing holds at least n names or
// is complete: nothing when it does already, else usually one request of
// the names missing. On an error the listing is unchanged. A listing that
// was not made by NewListing cannot read more: Extend then fails with
// CodeInvalidArgument when it would have to.
func (l *Listing) Extend(ctx context.Context, n int) error {
	for !l.Complete && len(l.Names) < n {
		if l.read == nil {
			return Errorf(CodeInvalidArgument, "list", nil, "a listing of %d object names cannot read more", len(l.Names))
		}
		names, next, err := l.read(ctx, l.token, n-len(l.Names))
		if err != nil {
			return err
		}
		l.Names = append(l.Names, names...)
		l.token, l.Complete = next, next == ""
	}
	return nil
}

// After reports whether the listing answers, for every object name below
// the root that starts with prefix (relative to the root), whether one
// exists: it is complete, or its last name sorts after every name that
// starts with prefix. Names are compared as bytes, as Cloud Storage lists
// them.
func (l *Listing) After(prefix string) bool {
	if l.Complete {
		return true
	}
	if len(l.Names) == 0 || prefix == "" {
		return false
	}
	last := l.Names[len(l.Names)-1]
	// Every name starting with prefix sorts before prefix with its last
	// byte incremented (when that byte is not 0xff).
	b := prefix[len(prefix)-1]
	if b == 0xff {
		return false
	}
	return last >= prefix[:len(prefix)-1]+string([]byte{b + 1})
}

// ContentsDetector is implemented by a Layout that can recognise its
// stores from what the scheme's Inspector found (Contents.Listing)
// instead of reading the location again. OpenLocation calls
// DetectContents instead of Detect when the layout implements it.
type ContentsDetector interface {
	// DetectContents reports, as Detect, whether loc holds a store of
	// this layout, given c, what the scheme's Inspector found there. It
	// reads only what c does not answer.
	DetectContents(ctx context.Context, loc Location, c Contents) (bool, error)
}

// Inspector reports what a location of one scheme holds. It only reads.
type Inspector func(ctx context.Context, loc Location) (Contents, error)

// OpenOptions are the optional parts of URLMux.Open.
type OpenOptions struct {
	// Layout forces a layout by name instead of detecting one. A location
	// that holds something else is then refused with CodeUnknownLayout;
	// an empty directory is an empty store of that layout.
	Layout string
	// Create makes a store when the location does not exist or is empty:
	// of Layout, or else of the scheme's default layout (the first one
	// registered for it). Only writing commands set it.
	Create bool
}

// Opened is a store URLMux.Open opened, with what it was opened as.
type Opened struct {
	// Store is the store: Driver behind the portable layer.
	Store *Store
	// Driver is the layout's driver (a Closer for the ones that hold a
	// client).
	Driver Driver
	// Location is where it is.
	Location Location
	// Layout is the name of its layout.
	Layout string
}

// URLMux opens stores by location, detecting their layout, in the spirit
// of Go CDK's URL openers: each scheme has an Inspector and layouts, each
// registered once. The zero value is empty; callers build one and hold it
// (the command line's factory does), there is no package-wide registry.
// A URLMux is safe for concurrent use once registration is done.
type URLMux struct {
	mu         sync.RWMutex
	inspectors map[string]Inspector
	layouts    []Layout // in registration order
}

// RegisterScheme sets the Inspector of a scheme. It panics when the scheme
// already has one: registration is set-up code.
func (m *URLMux) RegisterScheme(scheme string, in Inspector) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inspectors == nil {
		m.inspectors = map[string]Inspector{}
	}
	if _, dup := m.inspectors[scheme]; dup {
		panic(fmt.Sprintf("artifacts: scheme %q registered twice", scheme))
	}
	m.inspectors[scheme] = in
}

// RegisterLayout adds a layout. The first layout registered for a scheme
// is that scheme's default for creating stores. It panics when a layout of
// the same name is registered: registration is set-up code.
func (m *URLMux) RegisterLayout(l Layout) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := l.Info().Name
	for _, o := range m.layouts {
		if o.Info().Name == name {
			panic(fmt.Sprintf("artifacts: layout %q registered twice", name))
		}
	}
	m.layouts = append(m.layouts, l)
}

// Layouts describes the registered layouts, in registration order.
func (m *URLMux) Layouts() []LayoutInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]LayoutInfo, len(m.layouts))
	for i, l := range m.layouts {
		out[i] = l.Info()
	}
	return out
}

// LayoutNames returns the names of the registered layouts, in
// registration order.
func (m *URLMux) LayoutNames() []string {
	var names []string
	for _, in := range m.Layouts() {
		names = append(names, in.Name)
	}
	return names
}

func (m *URLMux) layout(name string) Layout {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, l := range m.layouts {
		if l.Info().Name == name {
			return l
		}
	}
	return nil
}

func (m *URLMux) ofScheme(scheme string) []Layout {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []Layout
	for _, l := range m.layouts {
		if l.Info().Scheme == scheme {
			out = append(out, l)
		}
	}
	return out
}

// Open parses uri (see ParseLocation) and opens the store there.
func (m *URLMux) Open(ctx context.Context, uri string, opts OpenOptions) (*Opened, error) {
	loc, err := ParseLocation(uri)
	if err != nil {
		return nil, err
	}
	return m.OpenLocation(ctx, loc, opts)
}

// OpenLocation opens the store at loc, loudly:
//   - with opts.Layout, that layout (a layout of another scheme, or a
//     location holding something that is not a store of it, is refused);
//   - else the one layout whose Detect recognises what loc holds;
//   - a location that does not exist is CodeNotFound, and an empty
//     directory CodeUnknownLayout, unless opts.Create (or, for the empty
//     directory, opts.Layout) says what to make of it;
//   - a location holding something no layout recognises, or that two
//     layouts claim, is CodeUnknownLayout, naming what was found and the
//     closest guess of the layouts.
//
// Nothing is created unless opts.Create is set.
func (m *URLMux) OpenLocation(ctx context.Context, loc Location, opts OpenOptions) (*Opened, error) {
	const op = "open"
	m.mu.RLock()
	inspect := m.inspectors[loc.Scheme]
	m.mu.RUnlock()
	layouts := m.ofScheme(loc.Scheme)
	if inspect == nil || len(layouts) == 0 {
		return nil, Errorf(CodeInvalidArgument, op, nil, "%s: this build opens no %s:// stores", loc, loc.Scheme)
	}
	var forced Layout
	if opts.Layout != "" {
		if forced = m.layout(opts.Layout); forced == nil {
			return nil, Errorf(CodeInvalidArgument, op, nil, "unknown layout %q (known: %s)", opts.Layout, strings.Join(m.LayoutNames(), ", "))
		}
		if s := forced.Info().Scheme; s != loc.Scheme {
			return nil, Errorf(CodeInvalidArgument, op, nil, "layout %s lives at %s:// locations, not at %s", opts.Layout, s, loc)
		}
	}
	c, err := inspect(ctx, loc)
	if err != nil {
		return nil, err
	}
	opened := func(l Layout, create bool) (*Opened, error) {
		if loc.FirstVersionSet {
			if fv, ok := l.(FirstVersionChooser); !ok || !fv.ChoosesFirstVersion() {
				return nil, Errorf(CodeInvalidArgument, op, nil, "%s: ?%s=%d does not apply to layout %s, whose first version is fixed; drop it from the store URI",
					loc, FirstVersionParam, loc.FirstVersion, l.Info().Name)
			}
		}
		drv, err := l.Open(ctx, loc, create)
		if err != nil {
			return nil, err
		}
		return &Opened{Store: NewStore(drv), Driver: drv, Location: loc, Layout: l.Info().Name}, nil
	}
	switch {
	case !c.Exists && !opts.Create:
		msg := fmt.Sprintf("no store at %s: %s", loc.Arg(), c.What())
		if g := m.guess(ctx, loc, layouts); g != "" {
			msg += "; " + g
		}
		return nil, Errorf(CodeNotFound, op, nil, "%s", msg)
	case !c.Exists || c.Empty:
		// Never make or read a new store inside another one (STORE/v1,
		// say): that is a mistyped --store, unless the layout is forced.
		if g := m.guess(ctx, loc, layouts); g != "" && forced == nil {
			what := "is an empty directory"
			if !c.Exists {
				what = "does not exist"
			}
			return nil, Errorf(CodeUnknownLayout, op, nil, "%s %s and is no place for a new store; %s", loc.Arg(), what, g)
		}
		switch {
		case forced != nil:
			return opened(forced, opts.Create)
		case opts.Create:
			return opened(layouts[0], true)
		}
		return nil, Errorf(CodeUnknownLayout, op, nil,
			"%s is an empty directory, so it has no layout to detect: to read it as an empty store, give --layout (one of %s); a writing command makes a new store of layout %s there",
			loc.Arg(), strings.Join(names(layouts), ", "), layouts[0].Info().Name)
	}
	var found []Layout
	for _, l := range layouts {
		var ok bool
		if cd, can := l.(ContentsDetector); can {
			ok, err = cd.DetectContents(ctx, loc, c)
		} else {
			ok, err = l.Detect(ctx, loc)
		}
		if err != nil {
			return nil, err
		}
		if ok {
			found = append(found, l)
		}
	}
	if forced != nil {
		if slices.Contains(names(found), opts.Layout) {
			return opened(forced, opts.Create)
		}
		msg := fmt.Sprintf("%s is not a store of layout %s (%s); found %s", loc.Arg(), forced.Info().Name, forced.Info().Marker, c.What())
		if len(found) > 0 {
			msg += fmt.Sprintf("; it is a store of layout %s: drop --layout", found[0].Info().Name)
		}
		return nil, Errorf(CodeUnknownLayout, op, nil, "%s", msg)
	}
	switch len(found) {
	case 1:
		return opened(found[0], opts.Create)
	case 0:
		msg := fmt.Sprintf("%s is not a store of a known layout (%s); found %s", loc.Arg(), strings.Join(names(layouts), ", "), c.What())
		if g := m.guess(ctx, loc, layouts); g != "" {
			msg += "; " + g
		}
		return nil, Errorf(CodeUnknownLayout, op, nil, "%s", msg)
	}
	return nil, Errorf(CodeUnknownLayout, op, nil, "%s holds stores of %d layouts at once (%s): give --layout to pick one",
		loc.Arg(), len(found), strings.Join(names(found), ", "))
}

// guess returns the first layout's guess for loc, or "".
func (m *URLMux) guess(ctx context.Context, loc Location, layouts []Layout) string {
	for _, l := range layouts {
		if g := l.Guess(ctx, loc); g != "" {
			return g
		}
	}
	return ""
}

func names(ls []Layout) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Info().Name
	}
	return out
}
