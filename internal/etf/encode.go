package etf

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sync"
	"unicode/utf8"
)

// Encode returns the uncompressed external term format of v, 131 first,
// exactly as Erlang's term_to_binary(V, [deterministic]) writes it (OTP 26
// or later):
//
//   - Atom: SMALL_ATOM_UTF8_EXT (119), or ATOM_UTF8_EXT (118) above 255 bytes;
//   - string: BINARY_EXT (109);
//   - int, int8..int64, uint, uint8..uint64, *big.Int: SMALL_INTEGER_EXT (97)
//     for 0..255, INTEGER_EXT (98) for the rest of the int32 range,
//     SMALL_BIG_EXT (110) otherwise, LARGE_BIG_EXT (111) past 255 magnitude
//     bytes;
//   - float64: NEW_FLOAT_EXT (70);
//   - Tuple: SMALL_TUPLE_EXT (104), LARGE_TUPLE_EXT (105) past 255 elements;
//   - Map: MAP_EXT (116) with the keys sorted in Erlang map-key order;
//   - []any: NIL_EXT (106) when empty, STRING_EXT (107) when every element
//     is an integer 0..255 and there are at most 65535, otherwise LIST_EXT
//     (108) with a NIL_EXT tail.
//
// Encode fails on other Go types, NaN or infinite floats, atoms that are not
// valid UTF-8 or longer than 255 characters, maps with two exactly equal
// keys, a nil *big.Int and nesting deeper than HardMaxDepth.
func Encode(v any) ([]byte, error) {
	e := encoder{buf: make([]byte, 1, 256)}
	e.buf[0] = tagVersion
	if err := e.encode(v, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// EncodeCompressed returns what term_to_binary(V, [compressed,
// deterministic]) returns: 131, 80, the 4-byte big-endian size of the
// uncompressed term without its 131 byte, and a zlib stream (default level)
// of those bytes; or, as Erlang does, the plain Encode output when the
// compressed form would be larger. The zlib stream comes from Go's
// compress/zlib, so its bytes need not equal Erlang's, but it inflates to
// the same term.
func EncodeCompressed(v any) ([]byte, error) {
	plain, err := Encode(v)
	if err != nil {
		return nil, err
	}
	if uint64(len(plain)-1) > math.MaxUint32 {
		return plain, nil
	}
	var out bytes.Buffer
	out.Grow(len(plain))
	out.Write([]byte{tagVersion, tagCompressed, 0, 0, 0, 0})
	binary.BigEndian.PutUint32(out.Bytes()[2:6], uint32(len(plain)-1))
	zw, _ := zlibWriters.Get().(*zlib.Writer)
	if zw == nil {
		zw = zlib.NewWriter(&out)
	} else {
		zw.Reset(&out)
	}
	defer zlibWriters.Put(zw)
	if _, err := zw.Write(plain[1:]); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	// Erlang keeps the compressed form when it is not larger than the plain
	// one (it gives zlib an output buffer of exactly that size).
	if out.Len() > len(plain) {
		return plain, nil
	}
	return out.Bytes(), nil
}

// zlibWriters keeps compressors for reuse: setting one up allocates and
// clears far more memory than a record takes.
var zlibWriters sync.Pool

type encoder struct {
	buf []byte
}

func encErr(kind error, format string, args ...any) error {
	return fmt.Errorf("etf: encode: %w: %s", kind, fmt.Sprintf(format, args...))
}

func (e *encoder) u32(n int) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(n))
}

func checkLen(n int, what string) error {
	if uint64(n) > math.MaxUint32 {
		return encErr(ErrTooLarge, "%s of length %d does not fit the format", what, n)
	}
	return nil
}

func (e *encoder) encode(v any, depth int) error {
	switch x := v.(type) {
	case string:
		if err := checkLen(len(x), "binary"); err != nil {
			return err
		}
		e.buf = append(e.buf, tagBinary)
		e.u32(len(x))
		e.buf = append(e.buf, x...)
		return nil
	case Atom:
		return e.atom(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return encErr(ErrInvalidFloat, "float %v is not finite", x)
		}
		e.buf = append(e.buf, tagNewFloat)
		e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(x))
		return nil
	case *big.Int:
		if x == nil {
			return encErr(ErrInvalidInteger, "nil *big.Int")
		}
		if x.IsInt64() {
			e.int64(x.Int64())
		} else {
			e.big(x.Sign() < 0, x.Bytes())
		}
		return nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		n := toNumber(x)
		if n.kind == 0 {
			e.int64(n.i)
		} else {
			e.big(false, n.b.Bytes())
		}
		return nil
	case Tuple:
		if err := enterEncode(depth); err != nil {
			return err
		}
		if err := checkLen(len(x), "tuple"); err != nil {
			return err
		}
		if len(x) <= 255 {
			e.buf = append(e.buf, tagSmallTuple, byte(len(x)))
		} else {
			e.buf = append(e.buf, tagLargeTuple)
			e.u32(len(x))
		}
		for _, el := range x {
			if err := e.encode(el, depth+1); err != nil {
				return err
			}
		}
		return nil
	case []any:
		if err := enterEncode(depth); err != nil {
			return err
		}
		return e.list(x, depth)
	case Map:
		if err := enterEncode(depth); err != nil {
			return err
		}
		return e.mapTerm(x, depth)
	case nil:
		return encErr(ErrUnsupportedType, "nil value")
	default:
		return encErr(ErrUnsupportedType, "Go type %T", v)
	}
}

func enterEncode(depth int) error {
	if depth+1 > HardMaxDepth {
		return encErr(ErrTooDeep, "nesting deeper than %d", HardMaxDepth)
	}
	return nil
}

func (e *encoder) atom(a Atom) error {
	if !utf8.ValidString(string(a)) {
		return encErr(ErrInvalidAtom, "atom %q is not valid UTF-8", string(a))
	}
	if c := utf8.RuneCountInString(string(a)); c > maxAtomChars {
		return encErr(ErrInvalidAtom, "atom of %d characters exceeds %d", c, maxAtomChars)
	}
	if len(a) <= 255 {
		e.buf = append(e.buf, tagSmallAtomUTF8, byte(len(a)))
	} else {
		e.buf = append(e.buf, tagAtomUTF8)
		e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(len(a)))
	}
	e.buf = append(e.buf, a...)
	return nil
}

func (e *encoder) int64(i int64) {
	switch {
	case i >= 0 && i <= 255:
		e.buf = append(e.buf, tagSmallInteger, byte(i))
	case i >= math.MinInt32 && i <= math.MaxInt32:
		e.buf = append(e.buf, tagInteger)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(int32(i)))
	default:
		neg := i < 0
		u := uint64(i)
		if neg {
			u = -u
		}
		var be [8]byte
		binary.BigEndian.PutUint64(be[:], u)
		k := 0
		for k < 7 && be[k] == 0 {
			k++
		}
		e.big(neg, be[k:])
	}
}

// big writes a SMALL_BIG_EXT or LARGE_BIG_EXT from a big-endian magnitude
// without leading zeros.
func (e *encoder) big(neg bool, be []byte) {
	if len(be) <= 255 {
		e.buf = append(e.buf, tagSmallBig, byte(len(be)))
	} else {
		e.buf = append(e.buf, tagLargeBig)
		e.u32(len(be))
	}
	e.buf = append(e.buf, byte(boolInt(neg)))
	for i := len(be) - 1; i >= 0; i-- {
		e.buf = append(e.buf, be[i])
	}
}

// isByte reports whether v is an integer in 0..255.
func isByte(v any) (byte, bool) {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, *big.Int:
		if x, ok := v.(*big.Int); ok && x == nil {
			return 0, false
		}
		n := toNumber(v)
		if n.kind == 0 && n.i >= 0 && n.i <= 255 {
			return byte(n.i), true
		}
	}
	return 0, false
}

func (e *encoder) list(l []any, depth int) error {
	if len(l) == 0 {
		e.buf = append(e.buf, tagNil)
		return nil
	}
	if len(l) <= 0xffff {
		str := true
		for _, el := range l {
			if _, ok := isByte(el); !ok {
				str = false
				break
			}
		}
		if str {
			e.buf = append(e.buf, tagString)
			e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(len(l)))
			for _, el := range l {
				c, _ := isByte(el)
				e.buf = append(e.buf, c)
			}
			return nil
		}
	}
	if err := checkLen(len(l), "list"); err != nil {
		return err
	}
	e.buf = append(e.buf, tagList)
	e.u32(len(l))
	for _, el := range l {
		if err := e.encode(el, depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, tagNil)
	return nil
}

func (e *encoder) mapTerm(m Map, depth int) error {
	if err := checkLen(len(m), "map"); err != nil {
		return err
	}
	sorted := m
	if !slices.IsSortedFunc(m, func(x, y Pair) int { return compareTerms(x.Key, y.Key, true, depth+1) }) {
		sorted = sortedPairs(m, depth)
	}
	for i := 1; i < len(sorted); i++ {
		if rank(sorted[i].Key) == rankUnknown {
			return encErr(ErrUnsupportedType, "map key of Go type %T", sorted[i].Key)
		}
		if compareTerms(sorted[i-1].Key, sorted[i].Key, true, depth+1) == 0 {
			return encErr(ErrDuplicateKey, "map has duplicate key %s", shortTerm(sorted[i].Key))
		}
	}
	e.buf = append(e.buf, tagMap)
	e.u32(len(m))
	for _, p := range sorted {
		if err := e.encode(p.Key, depth+1); err != nil {
			return err
		}
		if err := e.encode(p.Value, depth+1); err != nil {
			return err
		}
	}
	return nil
}
