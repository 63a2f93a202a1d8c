package etf

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func bigPow2(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }

// TestSpecExamples checks the worked examples of the layout spec byte for
// byte, hashes included.
func TestSpecExamples(t *testing.T) {
	tests := []struct {
		name string
		term any
		hex  string
		hash string
	}{
		{"app", Tuple{Atom("app"), "demo-a"},
			"83680277036170706d0000000664656d6f2d61",
			"1d1359949b5515daf997588c856c812d7b20c2eb035c2d891edce83cf088741f"},
		{"user", Tuple{Atom("user"), "demo-a", "user-42"},
			"8368037704757365726d0000000664656d6f2d616d00000007757365722d3432",
			"9ab1c451a18d41debfd3072f701ed583e16ae153f316cd444714ae6925b80b81"},
		{"session", Tuple{Atom("session"), "demo-a", "user-42", "session-7"},
			"836804770773657373696f6e6d0000000664656d6f2d616d00000007757365722d34326d0000000973657373696f6e2d37",
			"8f364540aa791e7636c26878b48aec9ef8a6c7144847b213324427eb4420f5b7"},
		{"name", "reports/summary.txt",
			"836d000000137265706f7274732f73756d6d6172792e747874",
			"7e5c177646b9aefed838831273ffa92433dff3100eee3ec2d95c9f1176701441"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.term)
			if err != nil {
				t.Fatal(err)
			}
			if h := hex.EncodeToString(got); h != tt.hex {
				t.Fatalf("Encode = %s, want %s", h, tt.hex)
			}
			sum := sha256.Sum256(got)
			if h := hex.EncodeToString(sum[:]); h != tt.hash {
				t.Fatalf("sha256 = %s, want %s", h, tt.hash)
			}
			back, err := Decode(got, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tt.term) {
				t.Fatalf("Decode = %#v, want %#v", back, tt.term)
			}
		})
	}
}

// plainBytes returns the uncompressed encoding of a record file.
func plainBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	if len(b) < 2 || b[1] != tagCompressed {
		return b
	}
	zr, err := zlib.NewReader(bytes.NewReader(b[6:]))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if uint32(len(data)) != binary.BigEndian.Uint32(b[2:6]) {
		t.Fatalf("inflated %d bytes, header says %d", len(data), binary.BigEndian.Uint32(b[2:6]))
	}
	return append([]byte{tagVersion}, data...)
}

func readRecords(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "records", "*.meta"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no records in testdata/records: %v", err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// recordLimits are the limits a reader of metadata files would use.
var recordLimits = Limits{MaxDepth: 16, MaxEntries: 1024, MaxBytes: 65536}

// TestFixtureRecords decodes records written by Erlang and checks that
// Encode reproduces their uncompressed bytes exactly.
func TestFixtureRecords(t *testing.T) {
	var compressed, plain int
	for name, raw := range readRecords(t) {
		t.Run(name, func(t *testing.T) {
			if raw[1] == tagCompressed {
				compressed++
			} else {
				plain++
			}
			v, err := Decode(raw, recordLimits)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := plainBytes(t, raw)
			got, err := Encode(v)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Encode differs from the Erlang bytes:\n got %x\nwant %x", got, want)
			}
			checkRecordShape(t, v)

			// The compressed form round-trips too; Erlang chose compression
			// for these, and so do we.
			c, err := EncodeCompressed(v)
			if err != nil {
				t.Fatal(err)
			}
			if raw[1] == tagCompressed && c[1] != tagCompressed {
				t.Errorf("EncodeCompressed chose the plain form (%d bytes, fixture %d)", len(c), len(raw))
			}
			back, err := Decode(c, recordLimits)
			if err != nil {
				t.Fatal(err)
			}
			assertSameTerm(t, back, v)
		})
	}
	if compressed == 0 || plain == 0 {
		t.Fatalf("want compressed and plain fixtures, have %d and %d", compressed, plain)
	}
}

func checkRecordShape(t *testing.T, v any) {
	t.Helper()
	m, ok := v.(Map)
	if !ok || len(m) != 8 {
		t.Fatalf("record is %T of %d, want Map of 8", v, len(m))
	}
	wantKeys := []Atom{"created_at", "digest", "metadata", "mime_type", "name", "scope", "size", "version"}
	for i, p := range m {
		if p.Key != wantKeys[i] {
			t.Fatalf("key %d = %#v, want %q (sorted)", i, p.Key, wantKeys[i])
		}
	}
	if ca, _ := m.Get(Atom("created_at")); ca.(int64) <= math.MaxInt32 {
		t.Errorf("created_at = %v, want > 2^31", ca)
	}
	if s, _ := m.Get(Atom("scope")); len(s.(Tuple)) < 2 {
		t.Errorf("scope = %#v", s)
	}
	for _, k := range []Atom{"name", "digest", "mime_type"} {
		if s, _ := m.Get(k); reflect.TypeOf(s).Kind() != reflect.String {
			t.Errorf("%s = %#v, want string", k, s)
		}
	}
	if md, _ := m.Get(Atom("metadata")); reflect.TypeOf(md) != reflect.TypeOf(Map{}) {
		t.Errorf("metadata = %#v", md)
	}
}

// TestFixtureNestedMetadata pins the custom metadata of reports/summary.txt.
func TestFixtureNestedMetadata(t *testing.T) {
	recs := readRecords(t)
	for _, name := range []string{"fs-summary-v1.meta", "gcs-summary-v1.meta"} {
		v, err := Decode(recs[name], recordLimits)
		if err != nil {
			t.Fatal(err)
		}
		m := v.(Map)
		scope, _ := m.Get(Atom("scope"))
		assertSameTerm(t, scope, Tuple{Atom("session"), "demo-a", "user-42", "session-7"})
		if n, _ := m.Get(Atom("name")); n != "reports/summary.txt" {
			t.Errorf("%s: name = %#v", name, n)
		}
		md, _ := m.Get(Atom("metadata"))
		tags, ok := md.(Map).Get("tags")
		if !ok {
			t.Fatalf("%s: no tags in %#v", name, md)
		}
		assertSameTerm(t, tags, []any{"q3", int64(7), 2.5, Atom("true"), Atom("null")})
		if !strings.HasPrefix(name, "fs-") {
			continue // the GCS record has no nested metadata
		}
		nested, _ := md.(Map).Get("nested")
		assertSameTerm(t, nested, Map{{"depth", Map{{"k", Atom("false")}}}})
		// Written as a negative SMALL_BIG, decoded as int64.
		n, _ := md.(Map).Get("n")
		assertSameTerm(t, n, int64(-123456789012))
	}
	// The user scope name is not ASCII.
	v, err := Decode(recs["gcs-user-donnees-v1.meta"], recordLimits)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := v.(Map).Get(Atom("name")); n != "données.bin" {
		t.Errorf("name = %q", n)
	}
}

// equalTerm reports whether a and b are the same Go representation of the
// same term (types, float bits and big integer values included).
func equalTerm(a, b any) bool {
	switch x := a.(type) {
	case *big.Int:
		y, ok := b.(*big.Int)
		return ok && x.Cmp(y) == 0
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case Tuple:
		y, ok := b.(Tuple)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalTerm(x[i], y[i]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !equalTerm(x[i], y[i]) {
				return false
			}
		}
		return true
	case Map:
		y, ok := b.(Map)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		// Pair order is not significant: Decode keeps the file order and
		// Encode sorts.
		x, y = sortedPairs(x, 0), sortedPairs(y, 0)
		for i := range x {
			if !equalTerm(x[i].Key, y[i].Key) || !equalTerm(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

func assertSameTerm(t testing.TB, got, want any) {
	t.Helper()
	if !equalTerm(got, want) || Compare(got, want) != 0 {
		t.Fatalf("got %#v, want %#v", got, want)
	}
}

func TestIntegers(t *testing.T) {
	tests := []struct {
		name string
		in   any    // value given to Encode
		hex  string // expected encoding without the 131 byte
		out  any    // value Decode returns
	}{
		{"0", 0, "6100", int64(0)},
		{"255", 255, "61ff", int64(255)},
		{"256", 256, "6200000100", int64(256)},
		{"-1", int64(-1), "62ffffffff", int64(-1)},
		{"2^31-1", int64(math.MaxInt32), "627fffffff", int64(math.MaxInt32)},
		{"2^31", int64(1 << 31), "6e040000000080", int64(1 << 31)},
		{"-2^31", int64(math.MinInt32), "6280000000", int64(math.MinInt32)},
		{"-2^31-1", int64(math.MinInt32 - 1), "6e040101000080", int64(math.MinInt32 - 1)},
		{"created_at", int64(1795988221725), "6e06001d6f3d29a201", int64(1795988221725)},
		{"2^63-1", int64(math.MaxInt64), "6e0800ffffffffffffff7f", int64(math.MaxInt64)},
		{"-2^63", int64(math.MinInt64), "6e08010000000000000080", int64(math.MinInt64)},
		{"2^63", bigPow2(63), "6e08000000000000000080", bigPow2(63)},
		{"uint64 2^63", uint64(1 << 63), "6e08000000000000000080", bigPow2(63)},
		{"-2^63-1", new(big.Int).Sub(big.NewInt(math.MinInt64), big.NewInt(1)), "6e08010100000000000080", new(big.Int).Sub(big.NewInt(math.MinInt64), big.NewInt(1))},
		{"2^64", bigPow2(64), "6e0900000000000000000001", bigPow2(64)},
		{"big.Int small", big.NewInt(7), "6107", int64(7)},
		{"2^2040 (255 bytes)", bigPow2(2040 - 1), "6eff00" + strings.Repeat("00", 254) + "80", bigPow2(2040 - 1)},
		{"2^2040 (256 bytes)", bigPow2(2040), "6f0000010000" + strings.Repeat("00", 255) + "01", bigPow2(2040)},
		{"-2^2400 (301 bytes)", new(big.Int).Neg(bigPow2(2400)), "6f0000012d01" + strings.Repeat("00", 300) + "01", new(big.Int).Neg(bigPow2(2400))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Encode(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if h := hex.EncodeToString(got[1:]); h != tt.hex {
				t.Fatalf("Encode = %s, want %s", h, tt.hex)
			}
			back, err := Decode(got, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			assertSameTerm(t, back, tt.out)
		})
	}
}

// TestDecodeNonCanonical: Erlang accepts these encodings, and so do we; the
// re-encoding is canonical.
func TestDecodeNonCanonical(t *testing.T) {
	tests := []struct {
		name  string
		hex   string
		want  any
		canon string
	}{
		{"INTEGER_EXT for 5", "83 62 00000005", int64(5), "836105"},
		{"SMALL_BIG for 5", "83 6e 01 00 05", int64(5), "836105"},
		{"SMALL_BIG zero bytes", "83 6e 00 00", int64(0), "836100"},
		{"SMALL_BIG negative zero", "83 6e 00 01", int64(0), "836100"},
		{"SMALL_BIG high zero bytes", "83 6e 03 01 07 00 00", int64(-7), "8362fffffff9"},
		{"negative SMALL_BIG", "83 6e 05 01 0102030405", int64(-0x0504030201), "836e05010102030405"},
		{"LARGE_BIG for 1", "83 6f 00000001 00 01", int64(1), "836101"},
		{"LARGE_BIG zero bytes", "83 6f 00000000 00", int64(0), "836100"},
		{"LARGE_BIG 300 bytes", "83 6f 0000012c 00" + strings.Repeat("00", 299) + "01", bigPow2(299 * 8), "836f0000012c00" + strings.Repeat("00", 299) + "01"},
		{"ATOM_EXT latin1", "83 64 0002 e96c", Atom("él"), "837703c3a96c"},
		{"SMALL_ATOM_EXT", "83 73 04 74727565", Atom("true"), "83770474727565"},
		{"ATOM_UTF8_EXT", "83 76 0002 c3a9", Atom("é"), "837702c3a9"},
		{"empty atom", "83 77 00", Atom(""), "837700"},
		{"LARGE_TUPLE_EXT", "83 69 00000001 6101", Tuple{int64(1)}, "8368016101"},
		{"LIST_EXT empty", "83 6c 00000000 6a", []any{}, "836a"},
		{"LIST_EXT of bytes", "83 6c 00000002 6101 6102 6a", []any{int64(1), int64(2)}, "836b00020102"},
		{"LIST_EXT with STRING tail", "83 6c 00000001 6101 6b 0002 0203", []any{int64(1), int64(2), int64(3)}, "836b0003010203"},
		{"LIST_EXT with LIST tail", "83 6c 00000001 7700 6c 00000001 6a 6a", []any{Atom(""), []any{}}, "836c0000000277006a6a"},
		{"STRING_EXT empty", "83 6b 0000", []any{}, "836a"},
		{"map unsorted", "83 74 00000002 7701 62 6101 7701 61 6102", Map{{Atom("b"), int64(1)}, {Atom("a"), int64(2)}}, "83740000000277016161027701626101"},
		{"float -0.0", "83 46 8000000000000000", math.Copysign(0, -1), "83468000000000000000"},
		{"map 1 and 1.0 keys", "83 74 00000002 46 3ff0000000000000 6100 6101 6100", Map{{1.0, int64(0)}, {int64(1), int64(0)}}, "83740000000261016100463ff00000000000006100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Decode(mustHex(t, tt.hex), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			assertSameTerm(t, v, tt.want)
			got, err := Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			if h := hex.EncodeToString(got); h != tt.canon {
				t.Fatalf("re-encoded %s, want %s", h, tt.canon)
			}
		})
	}
}

func compress(t testing.TB, size uint32, data []byte, trailing ...byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.Write([]byte{131, 80, 0, 0, 0, 0})
	binary.BigEndian.PutUint32(buf.Bytes()[2:], size)
	zw := zlib.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	buf.Write(trailing)
	return buf.Bytes()
}

var zlibBombBytes []byte

// zlibBomb returns 16 MiB of zeros compressed, declaring 100 bytes.
func zlibBomb(t testing.TB) []byte {
	if zlibBombBytes == nil {
		zlibBombBytes = compress(t, 100, make([]byte, 16<<20))
	}
	return zlibBombBytes
}

// nest returns n levels of single-element lists around x.
func nest(n int) []byte {
	b := []byte{131}
	for range n - 1 {
		b = append(b, 108, 0, 0, 0, 1)
	}
	b = append(b, 106)
	for range n - 1 {
		b = append(b, 106)
	}
	return b
}

// entries returns a LARGE_TUPLE_EXT of n empty atoms.
func entries(n int) []byte {
	b := []byte{131, 105, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[2:], uint32(n))
	for range n {
		b = append(b, 119, 0)
	}
	return b
}

func TestDecodeRejects(t *testing.T) {
	bomb := zlibBomb(t)
	inner := mustHex(t, "740000000177016161017701626102")[:] // map with trailing bytes inside
	tests := []struct {
		name string
		in   []byte
		lim  Limits
		want error
		msg  string // substring of the message, if set
	}{
		{"empty", nil, Limits{}, ErrTruncated, "offset 0"},
		{"no version", mustHex(t, "6101"), Limits{}, ErrVersion, "offset 0: expected version byte 131, got 0x61"},
		{"version only", mustHex(t, "83"), Limits{}, ErrTruncated, "offset 1"},
		{"unknown tag 0x71", mustHex(t, "83 71"), Limits{}, ErrUnknownTag, "etf: offset 1: unknown tag 0x71"},
		{"unknown tag inside", mustHex(t, "83 68 02 6101 71"), Limits{}, ErrUnknownTag, "offset 5: unknown tag 0x71"},
		{"FLOAT_EXT 99", mustHex(t, "83 63"+strings.Repeat("30", 31)), Limits{}, ErrUnknownTag, "0x63"},
		{"pid", mustHex(t, "83 58"), Limits{}, ErrUnknownTag, ""},
		{"BIT_BINARY", mustHex(t, "83 4d 00000001 07 ff"), Limits{}, ErrUnknownTag, ""},
		{"nested compressed", mustHex(t, "83 68 01 50 00000001"), Limits{}, ErrUnknownTag, ""},
		{"trailing byte", mustHex(t, "83 6101 00"), Limits{}, ErrTrailingBytes, "offset 3: 1 trailing bytes"},
		{"trailing term", append([]byte{131}, inner...), Limits{}, ErrTrailingBytes, ""},
		{"improper list", mustHex(t, "83 6c 00000001 6101 6102"), Limits{}, ErrImproperList, "offset 8: improper list"},
		{"improper list binary tail", mustHex(t, "83 6c 00000001 6101 6d00000000"), Limits{}, ErrImproperList, ""},
		{"list length past input", mustHex(t, "83 6c ffffffff 6a"), Limits{}, ErrTruncated, ""},
		{"tuple arity past input", mustHex(t, "83 69 ffffffff 6a"), Limits{}, ErrTruncated, ""},
		{"map arity past input", mustHex(t, "83 74 7fffffff 6a6a"), Limits{}, ErrTruncated, ""},
		{"binary length past input", mustHex(t, "83 6d ffffffff 00"), Limits{}, ErrTruncated, ""},
		{"string length past input", mustHex(t, "83 6b ffff 00"), Limits{}, ErrTruncated, ""},
		{"big length past input", mustHex(t, "83 6f ffffffff 00 01"), Limits{}, ErrTruncated, ""},
		{"atom length past input", mustHex(t, "83 76 ffff 61"), Limits{}, ErrTruncated, ""},
		{"NaN", mustHex(t, "83 46 7ff8000000000000"), Limits{}, ErrInvalidFloat, "offset 1: float NaN"},
		{"+Inf", mustHex(t, "83 46 7ff0000000000000"), Limits{}, ErrInvalidFloat, ""},
		{"-Inf", mustHex(t, "83 46 fff0000000000000"), Limits{}, ErrInvalidFloat, ""},
		{"invalid UTF-8 atom", mustHex(t, "83 77 02 c328"), Limits{}, ErrInvalidAtom, "not valid UTF-8"},
		{"invalid UTF-8 ATOM_UTF8_EXT", mustHex(t, "83 76 0001 ff"), Limits{}, ErrInvalidAtom, ""},
		{"latin1 atom too long", append(mustHex(t, "83 64 0100"), bytes.Repeat([]byte("a"), 256)...), Limits{}, ErrInvalidAtom, ""},
		{"UTF-8 atom too long", append(mustHex(t, "83 76 0100"), bytes.Repeat([]byte("a"), 256)...), Limits{}, ErrInvalidAtom, ""},
		{"big sign byte 2", mustHex(t, "83 6e 01 02 01"), Limits{}, ErrInvalidInteger, ""},
		{"duplicate map key", mustHex(t, "83 74 00000002 7701 61 6101 7701 61 6102"), Limits{}, ErrDuplicateKey, "offset 1: map has duplicate key"},
		{"duplicate binary key", mustHex(t, "83 74 00000002 6d00000001 78 6101 6d00000001 78 6a"), Limits{}, ErrDuplicateKey, ""},
		{"duplicate key latin1 vs utf8 atom", mustHex(t, "83 74 00000002 7301 61 6101 7701 61 6102"), Limits{}, ErrDuplicateKey, ""},
		{"duplicate key non-canonical int", mustHex(t, "83 74 00000002 6101 6a 6200000001 6a"), Limits{}, ErrDuplicateKey, ""},
		{"depth 9 > 8", nest(9), Limits{MaxDepth: 8}, ErrTooDeep, "depth 9 exceeds max depth 8"},
		{"depth past hard limit", nest(HardMaxDepth + 1), Limits{}, ErrTooDeep, ""},
		{"entries 129 > 128", entries(129), Limits{MaxEntries: 128}, ErrTooManyEntries, "max entries 128"},
		{"entries over nested", mustHex(t, "83 68 02 6b0002 0102 6b0002 0304"), Limits{MaxEntries: 5}, ErrTooManyEntries, ""},
		{"entries via list tail", mustHex(t, "83 6c 00000001 6101 6b 0002 0203"), Limits{MaxEntries: 2}, ErrTooManyEntries, ""},
		{"bytes", mustHex(t, "83 6d 00000003 616263"), Limits{MaxBytes: 8}, ErrTooLarge, "term is 9 bytes, limit is 8"},
		{"compressed truncated header", mustHex(t, "83 50 0000"), Limits{}, ErrTruncated, ""},
		{"compressed size says more", compress(t, 10, mustHex(t, "6d00000003616263")), Limits{}, ErrCompressed, "inflates to 8 bytes, header declares 10"},
		{"compressed size says less", compress(t, 7, mustHex(t, "6d00000003616263")), Limits{}, ErrCompressed, "more than the declared 7"},
		{"compressed size zero", compress(t, 0, nil), Limits{}, ErrCompressed, ""},
		{"compressed declared size past MaxBytes", compress(t, 1<<20, bytes.Repeat([]byte{0}, 10)), Limits{MaxBytes: 65536}, ErrTooLarge, "declared uncompressed size 1048576"},
		{"compressed declared size 4GiB impossible", compress(t, math.MaxUint32, []byte{106}), Limits{}, ErrCompressed, "impossible"},
		{"zlib bomb declared small", bomb, Limits{MaxBytes: 65536}, ErrCompressed, "more than the declared 100"},
		{"zlib bomb declared small, no limit", bomb, Limits{}, ErrCompressed, ""},
		{"compressed trailing bytes", compress(t, 1, []byte{106}, 0), Limits{}, ErrTrailingBytes, "trailing bytes after the zlib stream"},
		{"compressed bad zlib header", mustHex(t, "83 50 00000001 0000"), Limits{}, ErrCompressed, "zlib:"},
		{"compressed bad checksum", func() []byte { b := compress(t, 1, []byte{106}); b[len(b)-1] ^= 1; return b }(), Limits{}, ErrCompressed, "checksum"},
		{"compressed truncated stream", func() []byte { b := compress(t, 1, []byte{106}); return b[:len(b)-2] }(), Limits{}, ErrCompressed, ""},
		{"compressed inner trailing", compress(t, 3, []byte{97, 1, 0}), Limits{}, ErrTrailingBytes, "inflated offset 3"},
		{"compressed inner bad", compress(t, 1, []byte{0x71}), Limits{}, ErrUnknownTag, "etf: inflated offset 1: unknown tag 0x71"},
		{"compressed inner depth", compress(t, uint32(len(nest(9))-1), nest(9)[1:]), Limits{MaxDepth: 8}, ErrTooDeep, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Decode(tt.in, tt.lim)
			if err == nil {
				t.Fatalf("Decode = %#v, want error %v", v, tt.want)
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %q is not %q", err, tt.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if !strings.HasPrefix(err.Error(), "etf: ") || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
}

// TestDecodeLimitsBoundary: exactly at each limit decodes.
func TestDecodeLimitsBoundary(t *testing.T) {
	if _, err := Decode(nest(8), Limits{MaxDepth: 8}); err != nil {
		t.Errorf("depth 8: %v", err)
	}
	if _, err := Decode(entries(128), Limits{MaxEntries: 128}); err != nil {
		t.Errorf("entries 128: %v", err)
	}
	b := mustHex(t, "836d00000003616263")
	if _, err := Decode(b, Limits{MaxBytes: len(b)}); err != nil {
		t.Errorf("bytes: %v", err)
	}
	c := compress(t, uint32(len(b)-1), b[1:])
	if _, err := Decode(c, Limits{MaxBytes: len(b)}); err != nil {
		t.Errorf("compressed bytes: %v", err)
	}
	if _, err := Decode(c, Limits{MaxBytes: len(b) - 1}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("compressed bytes past limit: %v", err)
	}
	// A top-level map is depth 1; a map inside it is depth 2.
	m := mustHex(t, "83 74 00000001 6d00000001 6b 74 00000000")
	if _, err := Decode(m, Limits{MaxDepth: 2}); err != nil {
		t.Errorf("map depth 2: %v", err)
	}
	if _, err := Decode(m, Limits{MaxDepth: 1}); !errors.Is(err, ErrTooDeep) {
		t.Errorf("map depth 2 with limit 1: %v", err)
	}
}

// samples holds one valid encoding per tag, used for truncation tests.
var samples = map[string]string{
	"SMALL_INTEGER":  "83 61 07",
	"INTEGER":        "83 62 fffffff9",
	"NEW_FLOAT":      "83 46 4004000000000000",
	"SMALL_BIG":      "83 6e 06 00 1d4ed8dda101",
	"LARGE_BIG":      "83 6f 00000002 01 0001",
	"ATOM":           "83 64 0003 616263",
	"SMALL_ATOM":     "83 73 03 616263",
	"ATOM_UTF8":      "83 76 0002 c3a9",
	"SMALL_ATOM_UTF": "83 77 02 c3a9",
	"SMALL_TUPLE":    "83 68 02 6101 6a",
	"LARGE_TUPLE":    "83 69 00000002 6101 6a",
	"NIL":            "83 6a",
	"STRING":         "83 6b 0003 010203",
	"LIST":           "83 6c 00000002 6d00000000 6101 6a",
	"BINARY":         "83 6d 00000003 616263",
	"MAP":            "83 74 00000002 7701 61 6101 7701 62 6a",
}

func TestDecodeTruncated(t *testing.T) {
	for name, h := range samples {
		b := mustHex(t, h)
		if _, err := Decode(b, Limits{}); err != nil {
			t.Fatalf("%s: full sample: %v", name, err)
		}
		for i := range len(b) {
			_, err := Decode(b[:i], Limits{})
			if !errors.Is(err, ErrTruncated) {
				t.Errorf("%s truncated to %d bytes: got %v, want ErrTruncated", name, i, err)
			}
		}
	}
	// Every proper prefix of a compressed record fails too.
	for name, raw := range readRecords(t) {
		if raw[1] != tagCompressed {
			continue
		}
		for i := range len(raw) {
			if _, err := Decode(raw[:i], Limits{}); err == nil {
				t.Errorf("%s truncated to %d bytes decoded", name, i)
			}
		}
	}
}

// allocatedBytes returns the average heap bytes allocated by one call of f.
func allocatedBytes(f func()) uint64 {
	const runs = 5
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / runs
}

func TestZlibBombAllocation(t *testing.T) {
	bomb := zlibBomb(t)
	per := allocatedBytes(func() { Decode(bomb, Limits{MaxBytes: 65536}) })
	if per > 256<<10 {
		t.Fatalf("decoding a bomb allocated %d bytes per call", per)
	}
}

// TestDecodeAllocation: hostile but valid input allocates a small multiple
// of its size.
func TestDecodeAllocation(t *testing.T) {
	const n = 1 << 16
	manyNils := append(mustHex(t, "83 6c 00010000"), bytes.Repeat([]byte{106}, n+1)...)
	manyTuples := append(mustHex(t, "83 6c 00010000"), append(bytes.Repeat([]byte{104, 0}, n), 106)...)
	manyAtoms := entries(n)
	manyPairs := mustHex(t, "83 74 00008000")
	for i := range n / 2 {
		manyPairs = append(manyPairs, 98, 0, 0, byte(i>>8), byte(i), 106)
	}
	manyInts := append(mustHex(t, "83 6c 00010000"), bytes.Repeat([]byte{98, 1, 2, 3, 4}, n)...)
	manyInts = append(manyInts, 106)
	for name, b := range map[string][]byte{"nils": manyNils, "tuples": manyTuples, "atoms": manyAtoms, "pairs": manyPairs, "ints": manyInts} {
		if _, err := Decode(b, Limits{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		per := allocatedBytes(func() { Decode(b, Limits{}) })
		if ratio := float64(per) / float64(len(b)); ratio > 40 {
			t.Errorf("%s: allocated %.1f bytes per input byte", name, ratio)
		} else {
			t.Logf("%s: %.1f bytes allocated per input byte", name, ratio)
		}
	}
}

func TestEncodeLists(t *testing.T) {
	long := make([]any, 65535)
	for i := range long {
		long[i] = int64(i % 256)
	}
	longer := append(append([]any{}, long...), 1)
	tests := []struct {
		name   string
		in     []any
		prefix string
	}{
		{"nil slice", nil, "836a"},
		{"empty", []any{}, "836a"},
		{"bytes", []any{1, int64(2), big.NewInt(255), uint8(0)}, "836b00040102ff00"},
		{"256 is not a byte", []any{1, 256}, "836c00000002610162000001006a"},
		{"-1 is not a byte", []any{-1}, "836c0000000162ffffffff6a"},
		{"float is not a byte", []any{1.0}, "836c00000001463ff00000000000006a"},
		{"65535 bytes", long, "836bffff0001"},
		{"65536 bytes", longer, "836c0001000061006101"},
		{"mixed", []any{"a", Atom("b")}, "836c000000026d0000000161770162"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if h := hex.EncodeToString(b); !strings.HasPrefix(h, tt.prefix) {
				if len(h) > 80 {
					h = h[:80] + "..."
				}
				t.Fatalf("Encode = %s, want prefix %s", h, tt.prefix)
			}
			v, err := Decode(b, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if Compare(v, tt.in) != 0 {
				t.Fatalf("round trip changed the list")
			}
		})
	}
}

func TestEncodeMapOrder(t *testing.T) {
	m := Map{
		{"b", 1}, {Atom("z"), 2}, {"a", 3}, {2.0, 4}, {int64(3), 5}, {Tuple{}, 6},
		{[]any{}, 7}, {Map{}, 8}, {Atom("a"), 9}, {1.5, 10}, {100, 11},
	}
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Decode(b, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []any
	for _, p := range v.(Map) {
		keys = append(keys, p.Key)
	}
	// Map-key order: integers, then floats, then atoms, tuples, maps, lists, binaries.
	want := []any{int64(3), int64(100), 1.5, 2.0, Atom("a"), Atom("z"), Tuple{}, Map{}, []any{}, "a", "b"}
	for i := range want {
		if Compare(keys[i], want[i]) != 0 {
			t.Fatalf("keys = %#v, want %#v", keys, want)
		}
	}
	// The input is left alone.
	if m[0].Key != "b" {
		t.Fatal("Encode reordered its input")
	}
	for _, dup := range []Map{
		{{"a", 1}, {"a", 2}},
		{{1, 1}, {int64(1), 2}},
		{{big.NewInt(5), 1}, {5, 2}},
		{{Tuple{1}, 1}, {Tuple{int64(1)}, 2}},
	} {
		if _, err := Encode(dup); !errors.Is(err, ErrDuplicateKey) {
			t.Errorf("Encode(%#v) = %v, want ErrDuplicateKey", dup, err)
		}
	}
	// 1 and 1.0 are different keys.
	if _, err := Encode(Map{{1, 1}, {1.0, 2}}); err != nil {
		t.Errorf("1 and 1.0 keys: %v", err)
	}
}

func TestEncodeRejects(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want error
	}{
		{"NaN", math.NaN(), ErrInvalidFloat},
		{"+Inf", math.Inf(1), ErrInvalidFloat},
		{"NaN in list", []any{1, math.NaN()}, ErrInvalidFloat},
		{"invalid UTF-8 atom", Atom("\xff"), ErrInvalidAtom},
		{"atom of 256 characters", Atom(strings.Repeat("a", 256)), ErrInvalidAtom},
		{"nil", nil, ErrUnsupportedType},
		{"bool", true, ErrUnsupportedType},
		{"float32", float32(1), ErrUnsupportedType},
		{"[]byte", []byte("x"), ErrUnsupportedType},
		{"map[string]any", map[string]any{}, ErrUnsupportedType},
		{"nil *big.Int", (*big.Int)(nil), ErrInvalidInteger},
		{"unsupported map key", Map{{true, 1}}, ErrUnsupportedType},
		{"unsupported map keys", Map{{true, 1}, {false, 1}}, ErrUnsupportedType},
		{"duplicate key", Map{{"a", 1}, {"a", 1}}, ErrDuplicateKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Encode = %x, %v; want %v", b, err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "etf: encode: ") {
				t.Fatalf("error %q lacks the etf prefix", err)
			}
		})
	}
	deep := any(int64(0))
	for range HardMaxDepth + 1 {
		deep = []any{deep}
	}
	if _, err := Encode(deep); !errors.Is(err, ErrTooDeep) {
		t.Errorf("deep: %v", err)
	}
}

func TestEncodeAtoms(t *testing.T) {
	long := Atom(strings.Repeat("é", 200)) // 400 bytes, 200 characters
	b, err := Encode(long)
	if err != nil {
		t.Fatal(err)
	}
	if b[1] != tagAtomUTF8 || binary.BigEndian.Uint16(b[2:]) != 400 {
		t.Fatalf("long atom header %x", b[:4])
	}
	v, err := Decode(b, Limits{})
	if err != nil || v != long {
		t.Fatalf("Decode = %v, %v", v, err)
	}
	b, _ = Encode(Atom(strings.Repeat("a", 255)))
	if b[1] != tagSmallAtomUTF8 || b[2] != 255 {
		t.Fatalf("255-byte atom header %x", b[:3])
	}
}

func TestEncodeCompressed(t *testing.T) {
	small := Tuple{Atom("app"), "demo-a"}
	b, err := EncodeCompressed(small)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := Encode(small)
	if !bytes.Equal(b, plain) {
		t.Fatalf("small term compressed: %x", b)
	}
	big := Map{{"text", strings.Repeat("all work and no play ", 100)}}
	b, err = EncodeCompressed(big)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ = Encode(big)
	if b[0] != 131 || b[1] != 80 || int(binary.BigEndian.Uint32(b[2:])) != len(plain)-1 || len(b) >= len(plain) {
		t.Fatalf("compressed header %x, len %d (plain %d)", b[:6], len(b), len(plain))
	}
	if !bytes.Equal(plainBytes(t, b), plain) {
		t.Fatal("inflated bytes differ from Encode")
	}
	v, err := Decode(b, Limits{MaxBytes: len(plain)})
	if err != nil {
		t.Fatal(err)
	}
	assertSameTerm(t, v, Map{{"text", strings.Repeat("all work and no play ", 100)}})
	if _, err := EncodeCompressed(math.NaN()); !errors.Is(err, ErrInvalidFloat) {
		t.Fatalf("EncodeCompressed(NaN) = %v", err)
	}
}

func TestCompare(t *testing.T) {
	// Each term is strictly less than the next.
	ordered := []any{
		math.Inf(-1),
		new(big.Int).Neg(bigPow2(100)),
		int64(math.MinInt64),
		-1.5,
		-1,
		0,
		0.5,
		1,
		uint64(1 << 63),
		1e300,
		bigPow2(1100),
		Atom(""),
		Atom("a"),
		Atom("b"),
		Atom("é"),
		Tuple{},
		Tuple{Atom("z")},
		Tuple{1, 2},
		Tuple{1, 3},
		Map{},
		Map{{int64(5), 1}},
		Map{{1.0, 1}},
		Map{{Atom("a"), 1}},
		Map{{Atom("a"), 2}},
		Map{{Atom("a"), 1}, {Atom("b"), 1}},
		Map{{Atom("b"), 1}, {Atom("a"), 2}},
		[]any{},
		[]any{1},
		[]any{1, 2},
		[]any{2},
		[]any{Atom("a")},
		"",
		"\x00",
		"a",
		"ab",
		"b",
	}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(ordered[i], ordered[j]); got != want {
				t.Errorf("Compare(%#v, %#v) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
	equal := [][2]any{
		{1, 1.0},
		{int64(1), big.NewInt(1)},
		{uint8(7), int64(7)},
		{0.0, math.Copysign(0, -1)},
		{bigPow2(60), float64(1 << 60)},
		{Tuple{1, "a"}, Tuple{1.0, "a"}},
		{[]any{1}, []any{1.0}},
		{Map{{Atom("a"), 1}}, Map{{Atom("a"), 1.0}}},
		{Map{{Atom("b"), 1}, {Atom("a"), 2}}, Map{{Atom("a"), 2}, {Atom("b"), 1}}},
	}
	for _, p := range equal {
		if c := Compare(p[0], p[1]); c != 0 {
			t.Errorf("Compare(%#v, %#v) = %d, want 0", p[0], p[1], c)
		}
	}
	// Exactness past float precision.
	if Compare(new(big.Int).Add(bigPow2(60), big.NewInt(1)), float64(1<<60)) != 1 {
		t.Error("2^60+1 should be greater than 2^60 as a float")
	}
	if Compare(int64(1<<53+1), float64(1<<53)) != 1 {
		t.Error("2^53+1 should be greater than 2^53 as a float")
	}
	if Compare(Map{{1, 0}}, Map{{1.0, 0}}) == 0 {
		t.Error("maps with keys 1 and 1.0 must differ")
	}
}

func TestMapGet(t *testing.T) {
	m := Map{{Atom("a"), 1}, {int64(2), "two"}}
	if v, ok := m.Get(Atom("a")); !ok || v != 1 {
		t.Errorf("Get(a) = %v, %v", v, ok)
	}
	if v, ok := m.Get(2); !ok || v != "two" {
		t.Errorf("Get(2) = %v, %v", v, ok)
	}
	if _, ok := m.Get(2.0); ok {
		t.Error("Get(2.0) found the key 2")
	}
	if _, ok := m.Get("a"); ok {
		t.Error("Get(\"a\") found the atom a")
	}
}

func BenchmarkEncodeRecord(b *testing.B) {
	v, err := Decode(readRecords(b)["gcs-summary-v1.meta"], recordLimits)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeRecord(b *testing.B) {
	recs := readRecords(b)
	for _, name := range []string{"gcs-summary-v1.meta", "fs-summary-v1.meta"} {
		raw := recs[name]
		b.Run(strings.TrimSuffix(name, ".meta"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := Decode(raw, recordLimits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
