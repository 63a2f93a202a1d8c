// Package etf is a strict, deterministic codec for the subset of the Erlang
// External Term Format (ETF) used by the Erlang ADK artifact store: atoms,
// tuples, maps, binaries, integers, floats and lists.
//
// Terms are represented by plain Go values:
//
//	Erlang            Go
//	atom              Atom
//	tuple             Tuple
//	map               Map (a slice of Pair)
//	binary            string
//	integer           int64, or *big.Int when it does not fit in int64
//	float             float64 (never NaN or ±Inf)
//	list              []any (a proper list; the empty list is []any{})
//
// Decode accepts every encoding Erlang's binary_to_term accepts for these
// types (tags 70, 97, 98, 100, 104-111, 115, 116, 118, 119, and the
// compressed form, tag 80), and rejects everything else: unknown tags,
// improper lists, trailing bytes, truncated input, invalid UTF-8 in atoms,
// duplicate map keys and input past the caller's Limits.
//
// Encode emits exactly the bytes term_to_binary(Term, [deterministic])
// gives on OTP 26 and later, so the output can be hashed or compared byte for
// byte with records written by Erlang: atoms as SMALL_ATOM_UTF8_EXT, the
// smallest integer tag, STRING_EXT for lists of bytes and map keys sorted in
// Erlang map-key order.
package etf

import (
	"errors"
	"fmt"
)

// Atom is an Erlang atom, held as its UTF-8 text.
type Atom string

// Tuple is an Erlang tuple.
type Tuple []any

// Pair is one key/value association of a Map.
type Pair struct{ Key, Value any }

// Map is an Erlang map. Decode keeps the pairs in the order they appear in
// the input; Encode writes them sorted by key in Erlang map-key order,
// whatever their order in the slice.
type Map []Pair

// Get returns the value associated with key (compared with exact Erlang
// equality, =:=) and whether the key is present.
func (m Map) Get(key any) (any, bool) {
	for _, p := range m {
		if compareTerms(p.Key, key, true, 0) == 0 {
			return p.Value, true
		}
	}
	return nil, false
}

// Limits bounds the resources Decode may spend on one term. A zero field
// means no limit for that dimension.
type Limits struct {
	// MaxDepth is the maximum nesting depth of containers (lists, tuples
	// and maps, empty ones included); a top-level map is depth 1.
	// Independently of MaxDepth, Decode and Encode refuse nesting deeper
	// than HardMaxDepth.
	MaxDepth int
	// MaxEntries is the maximum total number of elements over every list,
	// tuple and map of the term; each map pair counts once.
	MaxEntries int
	// MaxBytes is the maximum size of the uncompressed encoding, including
	// the leading 131 byte. For compressed input (tag 80) the declared
	// uncompressed size is checked against it before inflating.
	MaxBytes int
}

// HardMaxDepth is the nesting depth that Decode and Encode never exceed,
// even when Limits.MaxDepth is 0, so that hostile input cannot exhaust the
// goroutine stack.
const HardMaxDepth = 10000

// Errors reported by Decode (wrapped in a *DecodeError) and by Encode
// (wrapped with context). Test for them with errors.Is.
var (
	// ErrVersion: the input does not start with the version byte 131.
	ErrVersion = errors.New("missing version byte 131")
	// ErrTruncated: the input ends inside a term, or a length exceeds the
	// remaining input.
	ErrTruncated = errors.New("truncated input")
	// ErrTrailingBytes: bytes follow the complete term (or the zlib stream).
	ErrTrailingBytes = errors.New("trailing bytes")
	// ErrUnknownTag: a tag outside the supported subset.
	ErrUnknownTag = errors.New("unknown tag")
	// ErrImproperList: a list whose tail is not a list.
	ErrImproperList = errors.New("improper list")
	// ErrInvalidAtom: an atom that is not valid UTF-8 or longer than 255
	// characters.
	ErrInvalidAtom = errors.New("invalid atom")
	// ErrInvalidFloat: a NaN or infinite float.
	ErrInvalidFloat = errors.New("invalid float")
	// ErrInvalidInteger: a big integer with a sign byte other than 0 or 1,
	// or a nil *big.Int given to Encode.
	ErrInvalidInteger = errors.New("invalid integer")
	// ErrDuplicateKey: a map with two exactly equal keys.
	ErrDuplicateKey = errors.New("duplicate map key")
	// ErrCompressed: a bad zlib stream, or one whose inflated size differs
	// from the size its header declares.
	ErrCompressed = errors.New("bad compressed term")
	// ErrTooDeep: nesting past Limits.MaxDepth or HardMaxDepth.
	ErrTooDeep = errors.New("nesting too deep")
	// ErrTooManyEntries: more elements than Limits.MaxEntries.
	ErrTooManyEntries = errors.New("too many entries")
	// ErrTooLarge: an encoding larger than Limits.MaxBytes, or a value too
	// large for the format.
	ErrTooLarge = errors.New("term too large")
	// ErrUnsupportedType: Encode was given a Go value with no ETF mapping.
	ErrUnsupportedType = errors.New("unsupported type")
)

// DecodeError describes why Decode rejected its input.
type DecodeError struct {
	// Offset is the byte offset of the offending element. For compressed
	// input it is an offset into the uncompressed term (131 byte at 0)
	// when Inflated is set, and into the input otherwise.
	Offset int
	// Inflated reports whether Offset refers to the inflated term.
	Inflated bool
	// Err is one of the package's Err* values.
	Err error
	// Msg is a human-readable detail.
	Msg string
}

// Error implements error, e.g. "etf: offset 17: unknown tag 0x71".
func (e *DecodeError) Error() string {
	where := "offset"
	if e.Inflated {
		where = "inflated offset"
	}
	return fmt.Sprintf("etf: %s %d: %s", where, e.Offset, e.Msg)
}

// Unwrap returns the Err* value classifying the error.
func (e *DecodeError) Unwrap() error { return e.Err }
