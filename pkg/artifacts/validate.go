package artifacts

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the v1 layout, shared with the Erlang ADK adapters.
const (
	MaxNameBytes          = 1024
	MinMIMETypeBytes      = 3
	MaxMIMETypeBytes      = 255
	DefaultMIMEType       = "application/octet-stream"
	MaxMetadataDepth      = 8
	MaxMetadataEntries    = 128
	MaxMetadataBytes      = 16384
	DefaultMaxPageLimit   = 1000
	DefaultPageLimit      = 100
	MaxDeadlineMillis     = 300000
	DefaultMaxArtifact    = 64 << 20
	DefaultMaxScanEntries = 10000
	MinMaxScanEntries     = 3
	MaxRecordFileBytes    = 65536
)

// ValidateName checks an artifact name: valid UTF-8, 1..1024 bytes, no NUL,
// and no empty, "." or ".." segment between slashes.
func ValidateName(name string) error {
	bad := func(format string, args ...any) error {
		return Errorf(CodeInvalidName, "validate name", nil, format, args...)
	}
	switch {
	case name == "":
		return bad("name is empty")
	case len(name) > MaxNameBytes:
		return bad("name is %d bytes, more than %d", len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return bad("name is not valid UTF-8")
	case strings.IndexByte(name, 0) >= 0:
		return bad("name contains NUL")
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch seg {
		case "":
			return bad("name %q has an empty segment (leading, trailing or doubled slash)", name)
		case ".", "..":
			return bad("name %q has a %q segment", name, seg)
		}
	}
	return nil
}

// ValidateMIMEType checks a MIME type: valid UTF-8, 3..255 bytes, contains
// a slash, no CR, LF or NUL.
func ValidateMIMEType(m string) error {
	bad := func(format string, args ...any) error {
		return Errorf(CodeInvalidMIMEType, "validate mime type", nil, format, args...)
	}
	switch {
	case len(m) < MinMIMETypeBytes || len(m) > MaxMIMETypeBytes:
		return bad("MIME type is %d bytes, want %d..%d", len(m), MinMIMETypeBytes, MaxMIMETypeBytes)
	case !utf8.ValidString(m):
		return bad("MIME type is not valid UTF-8")
	case strings.ContainsAny(m, "\r\n\x00"):
		return bad("MIME type contains CR, LF or NUL")
	case !strings.Contains(m, "/"):
		return bad("MIME type %q has no slash", m)
	}
	return nil
}

// Metadata is the custom metadata of a version. Keys are UTF-8 strings;
// values are string, int64 (int is accepted on input), *big.Int, float64,
// bool, nil (the atom null), []any of such values, and nested Metadata or
// map[string]any.
type Metadata = map[string]any

// ValidateMetadata checks custom metadata against the layout's limits: depth
// at most 8 (the top map is 1), at most 128 entries over every nested map
// and list, values of the allowed types, valid UTF-8 strings, and at most
// 16,384 bytes encoded.
func ValidateMetadata(md Metadata) error {
	_, err := metadataTerm(md)
	return err
}

// metadataWalker checks types, depth and entry count as it converts.
type metadataWalker struct{ entries int }

func (w *metadataWalker) bad(format string, args ...any) error {
	return Errorf(CodeInvalidMetadata, "validate metadata", nil, format, args...)
}

func (w *metadataWalker) countAndDepth(n, depth int, path string) error {
	if depth > MaxMetadataDepth {
		return w.bad("%s nests deeper than %d", path, MaxMetadataDepth)
	}
	w.entries += n
	if w.entries > MaxMetadataEntries {
		return w.bad("more than %d entries", MaxMetadataEntries)
	}
	return nil
}

func (w *metadataWalker) check(v any, depth int, path string) error {
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint8, uint16, uint32:
		return nil
	case uint64:
		return nil
	case uint:
		return nil
	case *big.Int:
		if x == nil {
			return w.bad("%s is a nil *big.Int", path)
		}
		return nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return w.bad("%s is not a finite float", path)
		}
		return nil
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return w.bad("%s is not a finite float", path)
		}
		return nil
	case string:
		if !utf8.ValidString(x) {
			return w.bad("%s is not valid UTF-8", path)
		}
		return nil
	case []any:
		if err := w.countAndDepth(len(x), depth+1, path); err != nil {
			return err
		}
		for i, e := range x {
			if err := w.check(e, depth+1, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		return w.checkMap(x, depth+1, path)
	default:
		return w.bad("%s has unsupported type %T", path, v)
	}
}

func (w *metadataWalker) checkMap(m map[string]any, depth int, path string) error {
	if err := w.countAndDepth(len(m), depth, path); err != nil {
		return err
	}
	for k, v := range m {
		if !utf8.ValidString(k) {
			return w.bad("key %q under %s is not valid UTF-8", k, path)
		}
		if err := w.check(v, depth, path+"."+k); err != nil {
			return err
		}
	}
	return nil
}

// PageLimit checks a page limit against max (DefaultMaxPageLimit when max
// is 0) and returns the limit to use: 0 means the default, min(100, max).
func PageLimit(limit, max int) (int, error) {
	if max <= 0 {
		max = DefaultMaxPageLimit
	}
	if limit == 0 {
		return min(DefaultPageLimit, max), nil
	}
	if limit < 1 || limit > max {
		return 0, Errorf(CodeInvalidArgument, "validate page limit", nil, "page limit %d is outside 1..%d", limit, max)
	}
	return limit, nil
}

// CloneMetadata deep-copies metadata (maps, lists and big integers), so
// that a store can hand out records without sharing what it holds. A nil
// map gives an empty one.
func CloneMetadata(md Metadata) Metadata {
	if md == nil {
		return Metadata{}
	}
	return cloneValue(md).(map[string]any)
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneValue(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = cloneValue(e)
		}
		return l
	case *big.Int:
		return new(big.Int).Set(x)
	}
	return v
}

// NamePageArgs checks the arguments of a ListNames call, once for every
// adapter: the scope, the page limit against maxLimit (DefaultMaxPageLimit
// when 0) and the name cursor. It returns the page limit to use.
func NamePageArgs(scope Scope, opts ListOptions, maxLimit int) (int, error) {
	if err := scope.Validate(); err != nil {
		return 0, err
	}
	limit, err := PageLimit(opts.Limit, maxLimit)
	if err != nil {
		return 0, err
	}
	if opts.Cursor != "" {
		if err := ValidateName(opts.Cursor); err != nil {
			return 0, Errorf(CodeInvalidArgument, "list names", err, "name cursor")
		}
	}
	return limit, nil
}

// VersionPageArgs checks the arguments of a ListVersions call, once for
// every adapter: the scope, the name, the page limit against maxLimit and
// the version cursor. It returns the page limit to use and the version
// after which the page starts (-1 for the first page).
func VersionPageArgs(scope Scope, name string, opts ListOptions, maxLimit int) (limit int, after int64, err error) {
	if err := scope.Validate(); err != nil {
		return 0, 0, err
	}
	if err := ValidateName(name); err != nil {
		return 0, 0, err
	}
	if limit, err = PageLimit(opts.Limit, maxLimit); err != nil {
		return 0, 0, err
	}
	after = -1
	if opts.Cursor != "" {
		after, err = strconv.ParseInt(opts.Cursor, 10, 64)
		if err != nil || after < 0 {
			return 0, 0, Errorf(CodeInvalidArgument, "list versions", nil, "version cursor %q is not a version number", opts.Cursor)
		}
	}
	return limit, after, nil
}
