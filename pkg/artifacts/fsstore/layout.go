package fsstore

import (
	"strconv"
	"strings"
)

// File and directory names of the v1 filesystem layout.
const (
	// LayoutDir is the versioned directory directly below the store root.
	LayoutDir = "v1"
	// ScopesDir holds the scope directories and scope slots.
	ScopesDir = "scopes"
	// NamesDir holds a scope's name directories and name slots.
	NamesDir = "names"
	// ScopeSlotPrefix starts a scope slot file name.
	ScopeSlotPrefix = ".adk-scope-slot-"
	// NameSlotPrefix starts a name slot file name.
	NameSlotPrefix = ".adk-name-slot-"
	// SlotSuffix ends a slot file name.
	SlotSuffix = ".reserve"
	// TmpMarker separates a staged file's final name from its token.
	TmpMarker = ".tmp-"
)

// FileKind classifies a file inside a name directory.
type FileKind int

// The kinds of file in a name directory.
const (
	KindOther   FileKind = iota // anything the layout does not name
	KindReserve                 // v-N.reserve
	KindData                    // v-N.data
	KindMeta                    // v-N.meta
	KindTmp                     // v-N.data.tmp-T or v-N.meta.tmp-T (any name holding ".tmp-")
)

// String returns the kind's file suffix.
func (k FileKind) String() string {
	switch k {
	case KindReserve:
		return "reserve"
	case KindData:
		return "data"
	case KindMeta:
		return "meta"
	case KindTmp:
		return "tmp"
	}
	return "other"
}

// ParseVersionFile classifies a file name found in a name directory and
// returns its version number (0 for KindOther and for staged files whose
// prefix is not v-N.data or v-N.meta).
func ParseVersionFile(name string) (FileKind, int64) {
	if i := strings.Index(name, TmpMarker); i >= 0 {
		k, n := ParseVersionFile(name[:i])
		if k != KindData && k != KindMeta {
			n = 0
		}
		return KindTmp, n
	}
	if !strings.HasPrefix(name, "v-") {
		return KindOther, 0
	}
	rest := name[2:]
	dot := strings.IndexByte(rest, '.')
	if dot <= 0 {
		return KindOther, 0
	}
	n, ok := parseVersion(rest[:dot])
	if !ok {
		return KindOther, 0
	}
	switch rest[dot:] {
	case ".reserve":
		return KindReserve, n
	case ".data":
		return KindData, n
	case ".meta":
		return KindMeta, n
	}
	return KindOther, 0
}

// parseVersion parses an unpadded positive decimal.
func parseVersion(s string) (int64, bool) {
	if s == "" || s[0] == '0' || len(s) > 18 {
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

// VersionFile returns the file name of version n with the given suffix
// ("reserve", "data" or "meta").
func VersionFile(n int64, suffix string) string {
	return "v-" + strconv.FormatInt(n, 10) + "." + suffix
}

// ParseSlot returns K for a slot file name with the given prefix
// (ScopeSlotPrefix or NameSlotPrefix).
func ParseSlot(name, prefix string) (int, bool) {
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, SlotSuffix) {
		return 0, false
	}
	n, ok := parseVersion(name[len(prefix) : len(name)-len(SlotSuffix)])
	if !ok || n > 1<<30 {
		return 0, false
	}
	return int(n), true
}

// SlotFile returns the slot file name for K.
func SlotFile(prefix string, k int) string {
	return prefix + strconv.Itoa(k) + SlotSuffix
}

// IsHash reports whether s is 64 lowercase hex characters: a scope or name
// directory.
func IsHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
