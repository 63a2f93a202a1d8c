package artifacts

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultGCSPrefix is the object prefix of a gs:// location that names only
// a bucket.
const DefaultGCSPrefix = "adk-artifacts/v1"

// Location schemes.
const (
	SchemeFile = "file"
	SchemeGCS  = "gs"
)

// Location is a parsed store location: a local directory or a Cloud
// Storage bucket and prefix. It says where a store is, not which layout it
// has; URLMux.Open detects that.
type Location struct {
	// Scheme is SchemeFile or SchemeGCS.
	Scheme string
	// Root is the absolute, cleaned directory of a file location.
	Root string
	// Bucket is the bucket of a gs:// location.
	Bucket string
	// Prefix is the object prefix of a gs:// location, without leading or
	// trailing slash; DefaultGCSPrefix when the URI has none.
	Prefix string
	// BucketOnly is true for a gs:// location that names only a bucket
	// (gs://BUCKET): Prefix is then DefaultGCSPrefix for the layouts that
	// live below a prefix, and layouts whose objects lie at the bucket's
	// root (google-adk-gcs) use the root.
	BucketOnly bool
	// FirstVersion is the number a new name's first version takes, from
	// the URI's ?first_version=N (0 or 1), for layouts whose writers number
	// differently (Google ADK's); meaningful only when FirstVersionSet.
	FirstVersion int64
	// FirstVersionSet is true when the URI gave ?first_version=N.
	FirstVersionSet bool
}

// FirstVersionParam is the query parameter of a store URI that sets the
// number of a new name's first version, gs://BUCKET?first_version=1, in a
// layout that lets it choose (FirstVersionChooser); other layouts refuse it.
const FirstVersionParam = "first_version"

// ObjectRoot returns the object name prefix below which a layout whose
// objects lie at the bucket's root keeps them: "" for a location naming
// only a bucket, else Prefix with a trailing slash.
func (l Location) ObjectRoot() string {
	if l.BucketOnly {
		return ""
	}
	return l.Prefix + "/"
}

// String formats the location canonically: file:///ROOT, gs://BUCKET/PREFIX,
// or gs://BUCKET for a location that names only a bucket; with
// ?first_version=N when the URI gave it. It parses back to the same
// Location.
func (l Location) String() string {
	q := ""
	if l.FirstVersionSet {
		q = "?" + FirstVersionParam + "=" + strconv.FormatInt(l.FirstVersion, 10)
	}
	switch l.Scheme {
	case SchemeGCS:
		if l.BucketOnly {
			return "gs://" + l.Bucket + q
		}
		return "gs://" + l.Bucket + "/" + l.Prefix + q
	case SchemeFile:
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(l.Root)}).String() + q
	}
	return ""
}

// Arg is the location as an operator types it in a --store flag: the
// directory of a file location (its file:// URI when it has
// ?first_version=N), the URI of any other.
func (l Location) Arg() string {
	if l.Scheme == SchemeFile && !l.FirstVersionSet {
		return l.Root
	}
	return l.String()
}

// parseFirstVersion parses a URI's query: nothing, or first_version=0 or
// first_version=1.
func parseFirstVersion(raw string) (n int64, set bool, err error) {
	if raw == "" {
		return 0, false, nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return 0, false, fmt.Errorf("query %q does not parse", raw)
	}
	for k := range q {
		if k != FirstVersionParam {
			return 0, false, fmt.Errorf("unknown query parameter %q (the only one is %s)", k, FirstVersionParam)
		}
	}
	vals := q[FirstVersionParam]
	if len(vals) != 1 {
		return 0, false, fmt.Errorf("%s is given %d times", FirstVersionParam, len(vals))
	}
	switch vals[0] {
	case "0":
		return 0, true, nil
	case "1":
		return 1, true, nil
	}
	return 0, false, fmt.Errorf("%s=%q: want 0 (ADK Python, Java and JS) or 1 (adk-go)", FirstVersionParam, vals[0])
}

// ParseLocation parses a store location: a directory path (relative paths
// are made absolute), file:///ABS/PATH (file://localhost/ABS/PATH too), or
// gs://BUCKET[/PREFIX]. Errors have CodeInvalidArgument.
func ParseLocation(s string) (Location, error) {
	bad := func(format string, args ...any) (Location, error) {
		return Location{}, Errorf(CodeInvalidArgument, "open", nil, "invalid store %q: %s", s, fmt.Sprintf(format, args...))
	}
	if s == "" {
		return bad("empty")
	}
	if strings.ContainsRune(s, 0) {
		return bad("contains NUL")
	}
	scheme, rest, hasScheme := strings.Cut(s, "://")
	if !hasScheme || strings.ContainsAny(scheme, `/\`) || scheme == "" {
		// A plain path. (Something like "./a://b" is a path too.) A path
		// that begins with a scheme this package knows and one colon
		// ("gs:/bucket", "gs:bucket", "file:/x") is a mistyped URI, not
		// a directory the operator meant: taking it as one would make
		// ./gs:/bucket under the current directory.
		if loc, ok, err := parseShortURI(s); ok {
			return loc, err
		}
		abs, err := filepath.Abs(s)
		if err != nil {
			return bad("%v", err)
		}
		return Location{Scheme: SchemeFile, Root: abs}, nil
	}
	switch strings.ToLower(scheme) {
	case SchemeGCS:
		rest, query, _ := strings.Cut(rest, "?")
		fv, fvSet, err := parseFirstVersion(query)
		if err != nil {
			return bad("%v", err)
		}
		bucket, prefix, _ := strings.Cut(rest, "/")
		if err := checkBucket(bucket); err != nil {
			return bad("%v", err)
		}
		prefix = strings.Trim(prefix, "/")
		bucketOnly := prefix == ""
		if bucketOnly {
			prefix = DefaultGCSPrefix
		}
		for _, seg := range strings.Split(prefix, "/") {
			switch seg {
			case "":
				return bad("prefix has an empty path segment")
			case ".", "..":
				return bad("prefix has a %q path segment", seg)
			}
		}
		if strings.ContainsAny(prefix, "\r\n") {
			return bad("prefix contains a line break")
		}
		return Location{Scheme: SchemeGCS, Bucket: bucket, Prefix: prefix, BucketOnly: bucketOnly, FirstVersion: fv, FirstVersionSet: fvSet}, nil
	case SchemeFile:
		u, err := url.Parse(s)
		if err != nil {
			return bad("%v", err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return bad("file URIs must not name a host (use file:///path)")
		}
		if u.Fragment != "" || u.User != nil {
			return bad("file URIs take no user or fragment")
		}
		fv, fvSet, err := parseFirstVersion(u.RawQuery)
		if err != nil {
			return bad("%v", err)
		}
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return bad("file URIs need an absolute path (file:///path)")
		}
		return Location{Scheme: SchemeFile, Root: filepath.Clean(filepath.FromSlash(u.Path)), FirstVersion: fv, FirstVersionSet: fvSet}, nil
	default:
		return bad("unsupported scheme %q (want a directory, file:// or gs://)", scheme)
	}
}

// parseShortURI handles a location that starts with "gs:" or "file:"
// without the two slashes of a URI. "file:/path" is RFC 8089's short form
// of file:///path and is taken as such; "gs:…" is refused with the URI
// that was probably meant, and the spelling that names a local directory
// of that name. ok is false for anything else.
func parseShortURI(s string) (loc Location, ok bool, err error) {
	scheme, rest, found := strings.Cut(s, ":")
	if !found {
		return Location{}, false, nil
	}
	switch strings.ToLower(scheme) {
	case SchemeFile:
		if !strings.HasPrefix(rest, "/") || strings.HasPrefix(rest, "//") {
			return Location{}, true, Errorf(CodeInvalidArgument, "open", nil,
				"invalid store %q: a file URI is file:///PATH (or file:/PATH); for a local directory of this name use ./%s", s, s)
		}
		loc, err := ParseLocation("file://" + rest)
		return loc, true, err
	case SchemeGCS:
		bucket := strings.TrimLeft(rest, "/")
		return Location{}, true, Errorf(CodeInvalidArgument, "open", nil,
			"invalid store %q: a Cloud Storage location is gs://BUCKET[/PREFIX]: did you mean gs://%s? (for a local directory of this name use ./%s)", s, bucket, s)
	}
	return Location{}, false, nil
}

// checkBucket applies the Cloud Storage bucket naming rules: 3 to 63
// characters (222 with dots, each dot-separated part at most 63) of
// lowercase letters, digits, '-', '_' and '.', starting and ending with a
// letter or digit.
func checkBucket(b string) error {
	if b == "" {
		return fmt.Errorf("no bucket name (want gs://BUCKET[/PREFIX])")
	}
	maxLen := 63
	if strings.Contains(b, ".") {
		maxLen = 222
	}
	if len(b) < 3 || len(b) > maxLen {
		return fmt.Errorf("bucket name %q must be 3 to %d characters", b, maxLen)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.':
			if i == 0 || i == len(b)-1 {
				return fmt.Errorf("bucket name %q must start and end with a letter or digit", b)
			}
		default:
			return fmt.Errorf("bucket name %q has the character %q (allowed: a-z 0-9 - _ .)", b, c)
		}
	}
	for _, part := range strings.Split(b, ".") {
		if part == "" {
			return fmt.Errorf("bucket name %q has an empty dot-separated part", b)
		}
		if len(part) > 63 {
			return fmt.Errorf("bucket name %q has a dot-separated part longer than 63 characters", b)
		}
	}
	if strings.HasPrefix(b, "goog") {
		return fmt.Errorf("bucket name %q must not begin with \"goog\"", b)
	}
	return nil
}
