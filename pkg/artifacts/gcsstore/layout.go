package gcsstore

import (
	"fmt"
	"strconv"
	"strings"
)

// Object names of the v1 Cloud Storage layout, below the store's prefix:
//
//	PREFIX/s/<scope hash>/n/<name hash>/v-<20 digits>.reserve
//	PREFIX/s/<scope hash>/n/<name hash>/v-<20 digits>.data
//	PREFIX/s/<scope hash>/n/<name hash>/v-<20 digits>.meta
const (
	// DefaultPrefix is the object name prefix used when Open is given "".
	DefaultPrefix = "adk-artifacts/v1"
	// ScopesSegment follows the prefix and precedes the scope hashes.
	ScopesSegment = "s"
	// NamesSegment follows a scope hash and precedes the name hashes.
	NamesSegment = "n"
	// VersionDigits is the zero-padded width of the version in object names.
	VersionDigits = 20
)

// Suffix names the three objects of a version.
type Suffix string

// The three object suffixes.
const (
	SuffixReserve Suffix = "reserve"
	SuffixData    Suffix = "data"
	SuffixMeta    Suffix = "meta"
)

// VersionObject returns the base name of version n's object with suffix,
// e.g. v-00000000000000000007.meta.
func VersionObject(n int64, suffix Suffix) string {
	return fmt.Sprintf("v-%0*d.%s", VersionDigits, n, suffix)
}

// ParseVersionObject parses the base name of a version object. It accepts
// exactly "v-", 20 decimal digits holding a positive version, a dot and one
// of the three suffixes.
func ParseVersionObject(base string) (Suffix, int64, bool) {
	if len(base) < 2+VersionDigits+2 || !strings.HasPrefix(base, "v-") || base[2+VersionDigits] != '.' {
		return "", 0, false
	}
	digits := base[2 : 2+VersionDigits]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 1 {
		return "", 0, false
	}
	switch s := Suffix(base[2+VersionDigits+1:]); s {
	case SuffixReserve, SuffixData, SuffixMeta:
		return s, n, true
	}
	return "", 0, false
}

// isHash reports whether s is 64 lowercase hex characters.
func isHash(s string) bool {
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

// scopesPrefix is PREFIX/s/.
func (s *Store) scopesPrefix() string { return s.prefix + "/" + ScopesSegment + "/" }

// namesPrefix is PREFIX/s/<scope hash>/n/.
func (s *Store) namesPrefix(scopeHash string) string {
	return s.scopesPrefix() + scopeHash + "/" + NamesSegment + "/"
}

// namePrefix is PREFIX/s/<scope hash>/n/<name hash>/.
func (s *Store) namePrefix(scopeHash, nameHash string) string {
	return s.namesPrefix(scopeHash) + nameHash + "/"
}

// lastSegment returns the last non-empty slash-separated segment of p.
func lastSegment(p string) string {
	p = strings.TrimSuffix(p, "/")
	return p[strings.LastIndexByte(p, '/')+1:]
}
