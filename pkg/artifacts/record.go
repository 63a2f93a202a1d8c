package artifacts

import (
	"encoding/hex"
	"math/big"
	"slices"
	"time"

	"github.com/agentstore/agentstore/internal/etf"
)

// Record describes one published version: the eight keys of the layout's
// metadata record.
type Record struct {
	Scope     Scope    `json:"scope"`
	Name      string   `json:"name"`
	Version   int64    `json:"version"`
	MIMEType  string   `json:"mime_type"`
	Digest    string   `json:"digest"`     // 64 lowercase hex chars, SHA-256 of the payload
	Size      int64    `json:"size"`       // payload bytes
	CreatedAt int64    `json:"created_at"` // milliseconds since the Unix epoch
	Metadata  Metadata `json:"-"`          // custom metadata; never printed by the CLI
	// Token is the driver's opaque binding of the bytes stored for this
	// version, for layouts where a version's bytes can change under the
	// same number (a GCS object's generation, a file's size and
	// modification time). It is empty for layouts whose published versions
	// are immutable, where the size and digest bind them.
	Token string `json:"-"`
}

// Created returns CreatedAt as a time in UTC.
func (r Record) Created() time.Time { return time.UnixMilli(r.CreatedAt).UTC() }

// MetadataKeys returns the top-level custom metadata keys, sorted.
func (r Record) MetadataKeys() []string {
	keys := make([]string, 0, len(r.Metadata))
	for k := range r.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// recordLimits bound the decoder: a record is one map of eight pairs, a
// scope tuple of up to four elements and metadata of at most 128 entries
// nested at most 8 deep below the record.
var recordLimits = etf.Limits{
	MaxDepth:   1 + MaxMetadataDepth,
	MaxEntries: 8 + 4 + MaxMetadataEntries,
	MaxBytes:   MaxRecordFileBytes,
}

// scopeTerm returns the scope as an ETF tuple.
func scopeTerm(s Scope) etf.Tuple {
	t := etf.Tuple{etf.Atom(s.Kind)}
	for _, p := range s.Parts() {
		t = append(t, p)
	}
	return t
}

// metadataTerm validates md and converts it into an ETF map.
func metadataTerm(md Metadata) (etf.Map, error) {
	w := &metadataWalker{}
	if md == nil {
		md = Metadata{}
	}
	if err := w.checkMap(md, 1, "metadata"); err != nil {
		return nil, err
	}
	m := toTerm(md).(etf.Map)
	b, err := etf.Encode(m)
	if err != nil {
		return nil, Errorf(CodeInvalidMetadata, "validate metadata", err, "does not encode")
	}
	if len(b) > MaxMetadataBytes {
		return nil, Errorf(CodeInvalidMetadata, "validate metadata", nil, "encodes to %d bytes, more than %d", len(b), MaxMetadataBytes)
	}
	return m, nil
}

// toTerm converts a checked metadata value into its ETF term.
func toTerm(v any) any {
	switch x := v.(type) {
	case nil:
		return etf.Atom("null")
	case bool:
		if x {
			return etf.Atom("true")
		}
		return etf.Atom("false")
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint:
		return new(big.Int).SetUint64(uint64(x))
	case uint64:
		return new(big.Int).SetUint64(x)
	case float32:
		return float64(x)
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = toTerm(e)
		}
		return l
	case map[string]any:
		m := make(etf.Map, 0, len(x))
		for k, e := range x {
			m = append(m, etf.Pair{Key: k, Value: toTerm(e)})
		}
		return m
	default: // string, int64, *big.Int, float64
		return v
	}
}

// EncodeRecord returns the record as the layout's ETF map, keys sorted,
// uncompressed. It validates every field first.
func EncodeRecord(r Record) ([]byte, error) {
	t, err := recordTerm(r)
	if err != nil {
		return nil, err
	}
	return etf.Encode(t)
}

// EncodeRecordCompressed is EncodeRecord in the form the Erlang filesystem
// adapter writes: term_to_binary(M, [compressed]), which keeps the zlib form
// only when it is smaller.
func EncodeRecordCompressed(r Record) ([]byte, error) {
	t, err := recordTerm(r)
	if err != nil {
		return nil, err
	}
	return etf.EncodeCompressed(t)
}

func recordTerm(r Record) (etf.Map, error) {
	if err := r.Scope.Validate(); err != nil {
		return nil, err
	}
	if err := ValidateName(r.Name); err != nil {
		return nil, err
	}
	if err := ValidateMIMEType(r.MIMEType); err != nil {
		return nil, err
	}
	if r.Version < 1 || r.Size < 0 || r.CreatedAt < 0 || !isDigest(r.Digest) {
		return nil, Errorf(CodeInvalidArgument, "encode record", nil, "version %d, size %d, created_at %d or digest %q out of range", r.Version, r.Size, r.CreatedAt, r.Digest)
	}
	md, err := metadataTerm(r.Metadata)
	if err != nil {
		return nil, err
	}
	return etf.Map{
		{Key: etf.Atom("created_at"), Value: r.CreatedAt},
		{Key: etf.Atom("digest"), Value: r.Digest},
		{Key: etf.Atom("metadata"), Value: md},
		{Key: etf.Atom("mime_type"), Value: r.MIMEType},
		{Key: etf.Atom("name"), Value: r.Name},
		{Key: etf.Atom("scope"), Value: scopeTerm(r.Scope)},
		{Key: etf.Atom("size"), Value: r.Size},
		{Key: etf.Atom("version"), Value: r.Version},
	}, nil
}

func isDigest(s string) bool {
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

// DecodeRecord parses a record strictly: exactly the eight keys, each value
// of its type, within the decoder's limits. It does not check which scope,
// name or version the record should belong to; see CheckRecord.
func DecodeRecord(b []byte) (Record, error) {
	corrupt := func(cause error, format string, args ...any) (Record, error) {
		return Record{}, Errorf(CodeCorrupt, "decode record", cause, format, args...)
	}
	t, err := etf.Decode(b, recordLimits)
	if err != nil {
		return corrupt(err, "record does not decode")
	}
	m, ok := t.(etf.Map)
	if !ok {
		return corrupt(nil, "record is not a map")
	}
	if len(m) != 8 {
		return corrupt(nil, "record has %d keys, want 8", len(m))
	}
	var r Record
	seen := 0
	for _, p := range m {
		k, ok := p.Key.(etf.Atom)
		if !ok {
			return corrupt(nil, "record key %v is not an atom", p.Key)
		}
		var bad bool
		switch k {
		case "scope":
			r.Scope, bad = decodeScope(p.Value)
			seen |= 1
		case "name":
			r.Name, bad = asString(p.Value)
			seen |= 2
		case "version":
			r.Version, bad = asInt(p.Value)
			bad = bad || r.Version < 1
			seen |= 4
		case "mime_type":
			r.MIMEType, bad = asString(p.Value)
			seen |= 8
		case "digest":
			r.Digest, bad = asString(p.Value)
			bad = bad || !isDigest(r.Digest)
			seen |= 16
		case "size":
			r.Size, bad = asInt(p.Value)
			bad = bad || r.Size < 0
			seen |= 32
		case "created_at":
			r.CreatedAt, bad = asInt(p.Value)
			bad = bad || r.CreatedAt < 0
			seen |= 64
		case "metadata":
			var md any
			md, bad = fromTerm(p.Value, 1)
			if !bad {
				r.Metadata, bad = md.(map[string]any)
				bad = !bad
			}
			seen |= 128
		default:
			return corrupt(nil, "record has unknown key %q", k)
		}
		if bad {
			return corrupt(nil, "record key %q has a value of the wrong type", k)
		}
	}
	if seen != 255 {
		return corrupt(nil, "record lacks a key")
	}
	if err := r.Scope.Validate(); err != nil {
		return corrupt(err, "record scope is invalid")
	}
	if err := ValidateName(r.Name); err != nil {
		return corrupt(err, "record name is invalid")
	}
	// Types, UTF-8, depth and entries; the encoded size is a writer's limit,
	// and the whole record is already bounded by the decoder.
	if err := (&metadataWalker{}).checkMap(r.Metadata, 1, "metadata"); err != nil {
		return corrupt(err, "record metadata is invalid")
	}
	return r, nil
}

// CheckRecord verifies that r belongs to the scope, name and version asked
// for. A mismatch is CodeCorrupt.
func CheckRecord(r Record, scope Scope, name string, version int64) error {
	if r.Scope != scope || r.Name != name || r.Version != version {
		return Errorf(CodeCorrupt, "check record", nil, "record is for %s %q v%d, want %s %q v%d", r.Scope, r.Name, r.Version, scope, name, version)
	}
	return nil
}

func decodeScope(v any) (Scope, bool) {
	t, ok := v.(etf.Tuple)
	if !ok || len(t) < 2 || len(t) > 4 {
		return Scope{}, true
	}
	kind, ok := t[0].(etf.Atom)
	if !ok {
		return Scope{}, true
	}
	parts := make([]string, 0, 3)
	for _, e := range t[1:] {
		s, ok := e.(string)
		if !ok {
			return Scope{}, true
		}
		parts = append(parts, s)
	}
	s := Scope{Kind: Kind(kind)}
	switch {
	case s.Kind == KindApp && len(parts) == 1:
		s.App = parts[0]
	case s.Kind == KindUser && len(parts) == 2:
		s.App, s.User = parts[0], parts[1]
	case s.Kind == KindSession && len(parts) == 3:
		s.App, s.User, s.Session = parts[0], parts[1], parts[2]
	default:
		return Scope{}, true
	}
	return s, false
}

func asString(v any) (string, bool) {
	s, ok := v.(string)
	return s, !ok
}

func asInt(v any) (int64, bool) {
	i, ok := v.(int64)
	return i, !ok
}

// fromTerm converts a decoded metadata term back into Go values; bad is true
// for a term outside the allowed types.
func fromTerm(v any, depth int) (out any, bad bool) {
	switch x := v.(type) {
	case string, int64, *big.Int, float64:
		return x, false
	case etf.Atom:
		switch x {
		case "true":
			return true, false
		case "false":
			return false, false
		case "null":
			return nil, false
		}
		return nil, true
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			if l[i], bad = fromTerm(e, depth+1); bad {
				return nil, true
			}
		}
		return l, false
	case etf.Map:
		m := make(map[string]any, len(x))
		for _, p := range x {
			k, ok := p.Key.(string)
			if !ok {
				return nil, true
			}
			if m[k], bad = fromTerm(p.Value, depth+1); bad {
				return nil, true
			}
		}
		return m, false
	}
	return nil, true
}

// DigestHex formats a SHA-256 sum as the record's digest string.
func DigestHex(sum []byte) string { return hex.EncodeToString(sum) }
