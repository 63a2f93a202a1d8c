package cmdutil

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// DefaultGCSPrefix is the object prefix used when a gs:// URI names only a
// bucket.
const DefaultGCSPrefix = "adk-artifacts/v1"

// Store URI schemes.
const (
	SchemeFile = "file"
	SchemeGCS  = "gs"
)

// StoreURI is a parsed --store value.
type StoreURI struct {
	// Scheme is SchemeFile or SchemeGCS.
	Scheme string
	// Root is the absolute, cleaned directory of a file store (the ROOT
	// that holds v1/).
	Root string
	// Bucket is the bucket of a GCS store.
	Bucket string
	// Prefix is the object prefix of a GCS store, without leading or
	// trailing slash; DefaultGCSPrefix when the URI has none.
	Prefix string
}

// String formats the URI canonically: file:///ROOT or gs://BUCKET/PREFIX.
func (u StoreURI) String() string {
	switch u.Scheme {
	case SchemeGCS:
		return "gs://" + u.Bucket + "/" + u.Prefix
	case SchemeFile:
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(u.Root)}).String()
	}
	return ""
}

// ParseStoreURI parses a --store value: a directory path (relative paths
// are made absolute), file:///ABS/PATH (file://localhost/ABS/PATH too), or
// gs://BUCKET[/PREFIX]. Errors are *UsageError values (exit status 2).
func ParseStoreURI(s string) (StoreURI, error) {
	bad := func(format string, args ...any) (StoreURI, error) {
		return StoreURI{}, &UsageError{Err: fmt.Errorf("invalid store %q: %s", s, fmt.Sprintf(format, args...))}
	}
	if s == "" {
		return bad("empty")
	}
	if strings.ContainsRune(s, 0) {
		return bad("contains NUL")
	}
	scheme, rest, hasScheme := strings.Cut(s, "://")
	if !hasScheme || strings.ContainsAny(scheme, `/\`) || scheme == "" {
		// A plain path. (Something like "./a://b" is a path too.)
		abs, err := filepath.Abs(s)
		if err != nil {
			return bad("%v", err)
		}
		return StoreURI{Scheme: SchemeFile, Root: abs}, nil
	}
	switch strings.ToLower(scheme) {
	case SchemeGCS:
		bucket, prefix, _ := strings.Cut(rest, "/")
		if err := checkBucket(bucket); err != nil {
			return bad("%v", err)
		}
		prefix = strings.Trim(prefix, "/")
		if prefix == "" {
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
		return StoreURI{Scheme: SchemeGCS, Bucket: bucket, Prefix: prefix}, nil
	case SchemeFile:
		u, err := url.Parse(s)
		if err != nil {
			return bad("%v", err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return bad("file URIs must not name a host (use file:///path)")
		}
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return bad("file URIs take no user, query or fragment")
		}
		if u.Path == "" || !strings.HasPrefix(u.Path, "/") {
			return bad("file URIs need an absolute path (file:///path)")
		}
		return StoreURI{Scheme: SchemeFile, Root: filepath.Clean(filepath.FromSlash(u.Path))}, nil
	default:
		return bad("unsupported scheme %q (want a directory, file:// or gs://)", scheme)
	}
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
