package etf

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/big"
	"slices"
	"sync"
	"unicode/utf8"
)

// External Term Format tags.
const (
	tagVersion        = 131
	tagCompressed     = 80
	tagNewFloat       = 70
	tagSmallInteger   = 97
	tagInteger        = 98
	tagAtom           = 100
	tagSmallTuple     = 104
	tagLargeTuple     = 105
	tagNil            = 106
	tagString         = 107
	tagList           = 108
	tagBinary         = 109
	tagSmallBig       = 110
	tagLargeBig       = 111
	tagSmallAtom      = 115
	tagMap            = 116
	tagAtomUTF8       = 118
	tagSmallAtomUTF8  = 119
	maxAtomChars      = 255
	maxDeflateRatio   = 1032 // deflate cannot expand one input byte into more
	compressedHdrSize = 6    // 131, 80, 4-byte uncompressed size
)

// Shared empty values, so that decoding "j" or "h\x00" allocates nothing.
var (
	emptyList  any = []any{}
	emptyTuple any = Tuple{}
	emptyMap   any = Map{}
)

// Decode decodes one complete term from b, which must start with the version
// byte 131 and contain nothing after the term. It accepts the compressed
// form (131, 80, 4-byte big-endian uncompressed size, zlib stream); the
// inflated data must have exactly the declared size and the zlib stream must
// end the input.
//
// Decode never panics. Its allocations stay within a small multiple of
// len(b), or of the declared uncompressed size for compressed input, which
// lim.MaxBytes caps before anything is inflated. Errors are *DecodeError
// values wrapping one of the Err* values.
func Decode(b []byte, lim Limits) (any, error) {
	if len(b) == 0 {
		return nil, &DecodeError{Offset: 0, Err: ErrTruncated, Msg: "empty input"}
	}
	if b[0] != tagVersion {
		return nil, &DecodeError{Offset: 0, Err: ErrVersion, Msg: fmt.Sprintf("expected version byte 131, got 0x%02x", b[0])}
	}
	if len(b) >= 2 && b[1] == tagCompressed {
		return decodeCompressed(b, lim)
	}
	if lim.MaxBytes > 0 && len(b) > lim.MaxBytes {
		return nil, &DecodeError{Offset: 0, Err: ErrTooLarge, Msg: fmt.Sprintf("term is %d bytes, limit is %d", len(b), lim.MaxBytes)}
	}
	d := decoder{b: b, pos: 1, lim: lim}
	return d.decodeAll()
}

func decodeCompressed(b []byte, lim Limits) (any, error) {
	if len(b) < compressedHdrSize {
		return nil, &DecodeError{Offset: len(b), Err: ErrTruncated, Msg: "truncated compressed header"}
	}
	size := uint64(binary.BigEndian.Uint32(b[2:6]))
	if lim.MaxBytes > 0 && size+1 > uint64(lim.MaxBytes) {
		return nil, &DecodeError{Offset: 2, Err: ErrTooLarge, Msg: fmt.Sprintf("declared uncompressed size %d (+1 version byte) exceeds limit %d", size, lim.MaxBytes)}
	}
	if size == 0 {
		return nil, &DecodeError{Offset: 2, Err: ErrCompressed, Msg: "declared uncompressed size is 0"}
	}
	if size > uint64(len(b)-compressedHdrSize)*maxDeflateRatio {
		return nil, &DecodeError{Offset: 2, Err: ErrCompressed, Msg: fmt.Sprintf("declared uncompressed size %d is impossible for %d compressed bytes", size, len(b)-compressedHdrSize)}
	}
	src := bytes.NewReader(b[compressedHdrSize:])
	zr, err := getZlib(src)
	if zr != nil {
		defer zlibReaders.Put(zr)
	}
	if err != nil {
		return nil, &DecodeError{Offset: compressedHdrSize, Err: ErrCompressed, Msg: "zlib: " + err.Error()}
	}
	// Grow the buffer as data arrives rather than trusting the declared
	// size; read at most one byte past it to detect a longer stream.
	out := make([]byte, 1, 1+min(size, 1<<16))
	out[0] = tagVersion
	lr := io.LimitReader(zr, int64(size)+1)
	for {
		if len(out) == cap(out) {
			out = slices.Grow(out, min(cap(out), int(size)+2-len(out)))
		}
		n, err := lr.Read(out[len(out):cap(out)])
		out = out[:len(out)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &DecodeError{Offset: len(b) - src.Len(), Err: ErrCompressed, Msg: "zlib: " + err.Error()}
		}
	}
	got := uint64(len(out) - 1)
	switch {
	case got > size:
		return nil, &DecodeError{Offset: 2, Err: ErrCompressed, Msg: fmt.Sprintf("zlib stream inflates to more than the declared %d bytes", size)}
	case got < size:
		return nil, &DecodeError{Offset: 2, Err: ErrCompressed, Msg: fmt.Sprintf("zlib stream inflates to %d bytes, header declares %d", got, size)}
	}
	if rest := src.Len(); rest > 0 {
		return nil, &DecodeError{Offset: len(b) - rest, Err: ErrTrailingBytes, Msg: fmt.Sprintf("%d trailing bytes after the zlib stream", rest)}
	}
	d := decoder{b: out, pos: 1, lim: lim, inflated: true}
	return d.decodeAll()
}

type decoder struct {
	b        []byte
	pos      int
	lim      Limits
	entries  int
	inflated bool
}

func (d *decoder) decodeAll() (any, error) {
	v, err := d.term(0)
	if err != nil {
		return nil, err
	}
	if d.pos != len(d.b) {
		return nil, d.errf(d.pos, ErrTrailingBytes, "%d trailing bytes after the term", len(d.b)-d.pos)
	}
	return v, nil
}

func (d *decoder) errf(off int, kind error, format string, args ...any) *DecodeError {
	return &DecodeError{Offset: off, Inflated: d.inflated, Err: kind, Msg: fmt.Sprintf(format, args...)}
}

// need reports an error unless n more bytes are available.
func (d *decoder) need(n uint64, what string) error {
	if rem := uint64(len(d.b) - d.pos); n > rem {
		return d.errf(d.pos, ErrTruncated, "%s needs %d bytes, %d left", what, n, rem)
	}
	return nil
}

func (d *decoder) u8(what string) (int, error) {
	if err := d.need(1, what); err != nil {
		return 0, err
	}
	v := d.b[d.pos]
	d.pos++
	return int(v), nil
}

func (d *decoder) u16(what string) (int, error) {
	if err := d.need(2, what); err != nil {
		return 0, err
	}
	v := binary.BigEndian.Uint16(d.b[d.pos:])
	d.pos += 2
	return int(v), nil
}

func (d *decoder) u32(what string) (uint64, error) {
	if err := d.need(4, what); err != nil {
		return 0, err
	}
	v := binary.BigEndian.Uint32(d.b[d.pos:])
	d.pos += 4
	return uint64(v), nil
}

// enter checks the limits for a container of n elements at depth+1 whose
// tag is at off, and for the n elements of at least minSize bytes each.
func (d *decoder) enter(off, depth int, n, minSize uint64, what string) error {
	if depth+1 > HardMaxDepth || (d.lim.MaxDepth > 0 && depth+1 > d.lim.MaxDepth) {
		limit := HardMaxDepth
		if d.lim.MaxDepth > 0 {
			limit = min(limit, d.lim.MaxDepth)
		}
		return d.errf(off, ErrTooDeep, "%s at depth %d exceeds max depth %d", what, depth+1, limit)
	}
	return d.addEntries(off, n, minSize, what)
}

func (d *decoder) addEntries(off int, n, minSize uint64, what string) error {
	if rem := uint64(len(d.b) - d.pos); n*minSize > rem {
		return d.errf(off, ErrTruncated, "%s of %d elements needs at least %d bytes, %d left", what, n, n*minSize, rem)
	}
	if d.lim.MaxEntries > 0 && uint64(d.entries)+n > uint64(d.lim.MaxEntries) {
		return d.errf(off, ErrTooManyEntries, "%s of %d elements brings the total past max entries %d", what, n, d.lim.MaxEntries)
	}
	d.entries += int(n)
	return nil
}

func (d *decoder) term(depth int) (any, error) {
	off := d.pos
	tag, err := d.u8("tag")
	if err != nil {
		return nil, err
	}
	switch tag {
	case tagSmallInteger:
		v, err := d.u8("SMALL_INTEGER_EXT")
		return int64(v), err
	case tagInteger:
		v, err := d.u32("INTEGER_EXT")
		return int64(int32(uint32(v))), err
	case tagNewFloat:
		if err := d.need(8, "NEW_FLOAT_EXT"); err != nil {
			return nil, err
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(d.b[d.pos:]))
		d.pos += 8
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, d.errf(off, ErrInvalidFloat, "float %v is not finite", f)
		}
		return f, nil
	case tagSmallBig:
		n, err := d.u8("SMALL_BIG_EXT length")
		if err != nil {
			return nil, err
		}
		return d.bigInt(off, uint64(n))
	case tagLargeBig:
		n, err := d.u32("LARGE_BIG_EXT length")
		if err != nil {
			return nil, err
		}
		return d.bigInt(off, n)
	case tagSmallAtom, tagSmallAtomUTF8:
		n, err := d.u8("atom length")
		if err != nil {
			return nil, err
		}
		return d.atom(off, uint64(n), tag == tagSmallAtomUTF8)
	case tagAtom, tagAtomUTF8:
		n, err := d.u16("atom length")
		if err != nil {
			return nil, err
		}
		return d.atom(off, uint64(n), tag == tagAtomUTF8)
	case tagBinary:
		n, err := d.u32("BINARY_EXT length")
		if err != nil {
			return nil, err
		}
		if err := d.need(n, "BINARY_EXT"); err != nil {
			return nil, err
		}
		s := string(d.b[d.pos : d.pos+int(n)])
		d.pos += int(n)
		return s, nil
	case tagSmallTuple:
		n, err := d.u8("SMALL_TUPLE_EXT arity")
		if err != nil {
			return nil, err
		}
		return d.tuple(off, depth, uint64(n))
	case tagLargeTuple:
		n, err := d.u32("LARGE_TUPLE_EXT arity")
		if err != nil {
			return nil, err
		}
		return d.tuple(off, depth, n)
	case tagNil:
		if err := d.enter(off, depth, 0, 0, "list"); err != nil {
			return nil, err
		}
		return emptyList, nil
	case tagString:
		n, err := d.u16("STRING_EXT length")
		if err != nil {
			return nil, err
		}
		if err := d.enter(off, depth, uint64(n), 1, "STRING_EXT"); err != nil {
			return nil, err
		}
		if n == 0 {
			return emptyList, nil
		}
		l := make([]any, n)
		d.appendString(l[:0], n)
		return l, nil
	case tagList:
		return d.list(off, depth)
	case tagMap:
		n, err := d.u32("MAP_EXT arity")
		if err != nil {
			return nil, err
		}
		return d.mapTerm(off, depth, n)
	default:
		return nil, d.errf(off, ErrUnknownTag, "unknown tag 0x%02x", tag)
	}
}

// appendString appends the n bytes at d.pos as int64 elements; the caller
// has checked that they are present.
func (d *decoder) appendString(l []any, n int) []any {
	for _, c := range d.b[d.pos : d.pos+n] {
		l = append(l, int64(c))
	}
	d.pos += n
	return l
}

func (d *decoder) bigInt(off int, n uint64) (any, error) {
	sign, err := d.u8("big integer sign")
	if err != nil {
		return nil, err
	}
	if sign > 1 {
		return nil, d.errf(off, ErrInvalidInteger, "big integer sign byte %d is not 0 or 1", sign)
	}
	if err := d.need(n, "big integer magnitude"); err != nil {
		return nil, err
	}
	mag := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	// Ignore high zero bytes (non-canonical but accepted by Erlang).
	for len(mag) > 0 && mag[len(mag)-1] == 0 {
		mag = mag[:len(mag)-1]
	}
	if len(mag) <= 8 {
		var u uint64
		for i := len(mag) - 1; i >= 0; i-- {
			u = u<<8 | uint64(mag[i])
		}
		switch {
		case sign == 0 && u <= math.MaxInt64:
			return int64(u), nil
		case sign == 1 && u <= 1<<63:
			return -int64(u), nil // -int64(1<<63) wraps to MinInt64, as wanted
		}
	}
	be := make([]byte, len(mag))
	for i, c := range mag {
		be[len(mag)-1-i] = c
	}
	z := new(big.Int).SetBytes(be)
	if sign == 1 {
		z.Neg(z)
	}
	return z, nil
}

func (d *decoder) atom(off int, n uint64, utf bool) (any, error) {
	if err := d.need(n, "atom text"); err != nil {
		return nil, err
	}
	raw := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	if !utf {
		if n > maxAtomChars {
			return nil, d.errf(off, ErrInvalidAtom, "latin-1 atom of %d characters exceeds %d", n, maxAtomChars)
		}
		return Atom(latin1ToUTF8(raw)), nil
	}
	if !utf8.Valid(raw) {
		return nil, d.errf(off, ErrInvalidAtom, "atom text is not valid UTF-8")
	}
	if c := utf8.RuneCount(raw); c > maxAtomChars {
		return nil, d.errf(off, ErrInvalidAtom, "atom of %d characters exceeds %d", c, maxAtomChars)
	}
	return Atom(raw), nil
}

func latin1ToUTF8(b []byte) string {
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b)
	}
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = utf8.AppendRune(out, rune(c))
	}
	return string(out)
}

func (d *decoder) tuple(off, depth int, n uint64) (any, error) {
	if err := d.enter(off, depth, n, 1, "tuple"); err != nil {
		return nil, err
	}
	if n == 0 {
		return emptyTuple, nil
	}
	t := make(Tuple, n)
	for i := range t {
		v, err := d.term(depth + 1)
		if err != nil {
			return nil, err
		}
		t[i] = v
	}
	return t, nil
}

// list decodes LIST_EXT. A tail that is itself a list (NIL, STRING_EXT or
// another LIST_EXT) continues the list, as in Erlang; any other tail makes
// the list improper.
func (d *decoder) list(off, depth int) (any, error) {
	var l []any
	first := true
	for {
		n, err := d.u32("LIST_EXT length")
		if err != nil {
			return nil, err
		}
		// n elements and a tail of at least one byte.
		if err := d.need(n+1, "LIST_EXT"); err != nil {
			return nil, err
		}
		if first {
			err = d.enter(off, depth, n, 1, "list")
			first = false
		} else {
			err = d.addEntries(off, n, 1, "list")
		}
		if err != nil {
			return nil, err
		}
		l = slices.Grow(l, int(n))
		for range n {
			v, err := d.term(depth + 1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		tailOff := d.pos
		tag, err := d.u8("list tail")
		if err != nil {
			return nil, err
		}
		switch tag {
		case tagNil:
		case tagList:
			continue
		case tagString:
			m, err := d.u16("STRING_EXT length")
			if err != nil {
				return nil, err
			}
			if err := d.addEntries(tailOff, uint64(m), 1, "STRING_EXT"); err != nil {
				return nil, err
			}
			l = d.appendString(slices.Grow(l, m), m)
		default:
			return nil, d.errf(tailOff, ErrImproperList, "improper list: tail has tag 0x%02x, not a list", tag)
		}
		if len(l) == 0 {
			return emptyList, nil
		}
		return l, nil
	}
}

func (d *decoder) mapTerm(off, depth int, n uint64) (any, error) {
	if err := d.enter(off, depth, n, 2, "map"); err != nil {
		return nil, err
	}
	if n == 0 {
		return emptyMap, nil
	}
	m := make(Map, n)
	for i := range m {
		k, err := d.term(depth + 1)
		if err != nil {
			return nil, err
		}
		v, err := d.term(depth + 1)
		if err != nil {
			return nil, err
		}
		m[i] = Pair{k, v}
	}
	if n > 1 {
		if i, j, ok := duplicateKey(m); ok {
			return nil, d.errf(off, ErrDuplicateKey, "map has duplicate key %s (pairs %d and %d)", shortTerm(m[i].Key), i, j)
		}
	}
	return m, nil
}

// duplicateKey reports two pairs of m with exactly equal keys.
func duplicateKey(m Map) (int, int, bool) {
	if len(m) <= 8 {
		for i := range m {
			for j := i + 1; j < len(m); j++ {
				if compareTerms(m[i].Key, m[j].Key, true, 0) == 0 {
					return i, j, true
				}
			}
		}
		return 0, 0, false
	}
	idx := make([]int, len(m))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return compareTerms(m[a].Key, m[b].Key, true, 0) })
	for i := 1; i < len(idx); i++ {
		if compareTerms(m[idx[i-1]].Key, m[idx[i]].Key, true, 0) == 0 {
			a, b := idx[i-1], idx[i]
			return min(a, b), max(a, b), true
		}
	}
	return 0, 0, false
}

// shortTerm renders a term for an error message, truncated.
func shortTerm(v any) string {
	s := fmt.Sprintf("%#v", v)
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	return s
}

// zlibReaders keeps inflaters for reuse: setting one up costs far more than
// inflating a record, and listings inflate thousands of records.
var zlibReaders sync.Pool

// getZlib returns an inflater reading src, reusing a pooled one when there
// is one. The returned reader is non-nil even with an error, for the pool.
func getZlib(src io.Reader) (io.ReadCloser, error) {
	if zr, ok := zlibReaders.Get().(io.ReadCloser); ok {
		return zr, zr.(zlib.Resetter).Reset(src, nil)
	}
	zr, err := zlib.NewReader(src)
	if err != nil {
		return nil, err
	}
	return zr, nil
}
