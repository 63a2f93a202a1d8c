package zipsafe

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"sync"
)

// inflater decodes a raw Deflate stream (RFC 1951) held whole in memory,
// the compressed data of an entry that lies in a worker's window on the
// archive. It reads the input 64 bits at a time and decodes with
// two-level lookup tables into a flat buffer that keeps the last 32 KiB
// as history, writing the output in chunks of up to inflateChunk bytes:
// about twice as fast as a streaming inflater that reads the input a
// byte at a time and hands out its 32 KiB history window.
//
// It accepts exactly the streams compress/flate accepts and produces the
// same bytes (FuzzInflate checks both against it); what follows the
// final block is ignored. One inflater is reused for many streams.
type inflater struct {
	in    []byte
	pos   int    // next input byte to load into bits
	bits  uint64 // input bits, the next one lowest
	nbits uint   // valid bits in bits

	out   []byte // history (before start) and output not yet written
	w     int    // end of the output in out
	start int    // start of the output not yet written
	total int64  // bytes produced by this stream

	lit, dist table
	clen      table
	lens      [maxLitCodes + maxDistCodes]uint8
}

const (
	historySize  = 32 << 10 // Deflate's largest distance
	inflateChunk = 512 << 10
	maxMatch     = 258
	// out holds the history, a chunk, one more match and the slack the
	// 8-byte match copy may write past it.
	inflateBuf   = historySize + inflateChunk + maxMatch + 8
	maxLitCodes  = 286
	maxDistCodes = 30
	litRoot      = 10 // bits of the first-level literal/length table
	distRoot     = 8
	clenRoot     = 7 // code length codes are at most 7 bits: one level
)

// A table entry (hentry): value<<16 | extra<<8 | kind<<4 | bits, where bits is
// the length of the code (at most 15), extra the number of extra bits
// that follow it (a length's or distance's) or a second-level table's
// index bits, and value a literal byte, a length or distance base, a
// code length symbol or a second-level table's offset.
type hentry uint32

const (
	kindLiteral = iota
	kindLength
	kindEnd
	kindSub
	kindInvalid // a code no symbol has, or a symbol the format reserves
	kindDist
	kindSymbol // a code length code's symbol
)

func mkEntry(kind, nbits, extra, value int) hentry {
	return hentry(value<<16 | extra<<8 | kind<<4 | nbits)
}

func (e hentry) bits() uint  { return uint(e & 15) }
func (e hentry) kind() int   { return int(e>>4) & 15 }
func (e hentry) extra() uint { return uint(e>>8) & 15 }
func (e hentry) value() int  { return int(e >> 16) }

// table is a two-level decoding table: root bits index the first level;
// a code longer than that has a kindSub hentry pointing at a second-level
// table indexed by the bits after the first root bits.
type table struct {
	root uint
	t    []hentry
}

var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	// The order in which code length code lengths are sent.
	clenOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

// Symbol kinds of the three alphabets, for table.build.
const (
	alphaLit = iota
	alphaDist
	alphaClen
)

func symbolEntry(alpha, sym, nbits int) hentry {
	switch alpha {
	case alphaLit:
		switch {
		case sym < 256:
			return mkEntry(kindLiteral, nbits, 0, sym)
		case sym == 256:
			return mkEntry(kindEnd, nbits, 0, 0)
		case sym-257 < len(lengthBase):
			return mkEntry(kindLength, nbits, int(lengthExtra[sym-257]), int(lengthBase[sym-257]))
		}
	case alphaDist:
		if sym < len(distBase) {
			return mkEntry(kindDist, nbits, int(distExtra[sym]), int(distBase[sym]))
		}
	case alphaClen:
		return mkEntry(kindSymbol, nbits, 0, sym)
	}
	return mkEntry(kindInvalid, nbits, 0, 0)
}

// build makes the table of the canonical Huffman code with the given
// code lengths (0: the symbol is not used). As compress/flate, it accepts
// a complete code, a single code of one bit, and no code at all (every
// lookup then finds kindInvalid); it refuses an over-subscribed or other
// incomplete code.
func (tb *table) build(alpha int, lens []uint8, root uint) bool {
	var count [16]int
	maxLen := 0
	for _, n := range lens {
		if n > 0 {
			count[n]++
			maxLen = max(maxLen, int(n))
		}
	}
	var next [16]int
	code := 0
	for n := 1; n <= 15; n++ {
		code = (code + count[n-1]) << 1
		next[n] = code
	}
	if maxLen > 0 {
		// code is now the first code of length 16: complete when every
		// 15-bit sequence is used, i.e. the codes of each length fill
		// their share.
		left := 1
		for n := 1; n <= 15; n++ {
			left = left<<1 - count[n]
			if left < 0 {
				return false // over-subscribed
			}
		}
		if left > 0 && !(maxLen == 1 && count[1] == 1) {
			return false // incomplete
		}
	}
	// Second-level tables: for each first-level index whose codes are
	// longer than root, one table for the longest of them.
	tb.root = root
	size := 1 << root
	var subBits [1 << litRoot]uint8 // by first-level index
	codes := next
	for _, n := range lens {
		if uint(n) > root {
			rev := reverse(codes[n], n)
			i := rev & (1<<root - 1)
			subBits[i] = max(subBits[i], n-uint8(root))
		}
		if n > 0 {
			codes[n]++
		}
	}
	var subAt [1 << litRoot]int
	for i := 0; i < 1<<root; i++ {
		if subBits[i] > 0 {
			subAt[i] = size
			size += 1 << subBits[i]
		}
	}
	if cap(tb.t) < size {
		tb.t = make([]hentry, size)
	}
	tb.t = tb.t[:size]
	bad := mkEntry(kindInvalid, 0, 0, 0)
	for i := range tb.t {
		tb.t[i] = bad
	}
	for i := 0; i < 1<<root; i++ {
		if subBits[i] > 0 {
			tb.t[i] = mkEntry(kindSub, int(root), int(subBits[i]), subAt[i])
		}
	}
	codes = next
	for sym, n := range lens {
		if n == 0 {
			continue
		}
		rev := reverse(codes[n], n)
		codes[n]++
		if uint(n) <= root {
			e := symbolEntry(alpha, sym, int(n))
			for i := rev; i < 1<<root; i += 1 << n {
				tb.t[i] = e
			}
			continue
		}
		i := rev & (1<<root - 1)
		sb := int(subBits[i])
		sn := int(n) - int(root)
		e := symbolEntry(alpha, sym, sn)
		for j := rev >> root; j < 1<<sb; j += 1 << sn {
			tb.t[subAt[i]+j] = e
		}
	}
	return true
}

// reverse returns the n low bits of code in reverse order (Deflate sends
// Huffman codes most significant bit first into a stream read from the
// least significant bit).
func reverse(code int, n uint8) int {
	return int(bits.Reverse16(uint16(code)) >> (16 - n))
}

var fixedTables = sync.OnceValue(func() [2]table {
	var lens [288]uint8
	for i := range lens {
		switch {
		case i < 144:
			lens[i] = 8
		case i < 256:
			lens[i] = 9
		case i < 280:
			lens[i] = 7
		default:
			lens[i] = 8
		}
	}
	var t [2]table
	t[0].build(alphaLit, lens[:], litRoot)
	var dl [32]uint8
	for i := range dl {
		dl[i] = 5
	}
	t[1].build(alphaDist, dl[:], distRoot)
	return t
})

// errCorrupt is the error of a stream that is not valid Deflate data.
type errCorrupt struct {
	off int
	msg string
}

func (e *errCorrupt) Error() string {
	return fmt.Sprintf("invalid Deflate data at input byte %d: %s", e.off, e.msg)
}

func (f *inflater) corrupt(msg string) error {
	return &errCorrupt{off: f.pos - int(f.nbits/8), msg: msg}
}

// refill loads input bits until at least 56 are held or the input ends.
func (f *inflater) refill() {
	if f.pos+8 <= len(f.in) {
		f.bits |= binary.LittleEndian.Uint64(f.in[f.pos:]) << f.nbits
		f.pos += int(63-f.nbits) >> 3
		f.nbits |= 56
		return
	}
	for f.nbits <= 56 && f.pos < len(f.in) {
		f.bits |= uint64(f.in[f.pos]) << f.nbits
		f.pos++
		f.nbits += 8
	}
}

// need makes sure n (at most 56) bits are held.
func (f *inflater) need(n uint) error {
	if f.nbits < n {
		f.refill()
		if f.nbits < n {
			return f.corrupt("unexpected end of data")
		}
	}
	return nil
}

func (f *inflater) take(n uint) uint64 {
	v := f.bits & (1<<n - 1)
	f.bits >>= n
	f.nbits -= n
	return v
}

// decode inflates the stream in into dst, in chunks of at most
// inflateChunk bytes. It returns dst's errors as they are and reports a
// stream that is not valid Deflate data as an *errCorrupt.
func (f *inflater) decode(in []byte, dst io.Writer) error {
	if f.out == nil {
		f.out = make([]byte, inflateBuf)
	}
	f.in, f.pos, f.bits, f.nbits = in, 0, 0, 0
	f.w, f.start, f.total = 0, 0, 0
	defer func() { f.in = nil }()
	for {
		if err := f.need(3); err != nil {
			return err
		}
		final := f.take(1) == 1
		var err error
		switch f.take(2) {
		case 0:
			err = f.stored(dst)
		case 1:
			fixed := fixedTables()
			err = f.huffman(&fixed[0], &fixed[1], dst)
		case 2:
			if err = f.readTables(); err == nil {
				err = f.huffman(&f.lit, &f.dist, dst)
			}
		default:
			err = f.corrupt("reserved block type")
		}
		if err != nil {
			return err
		}
		if final {
			return f.flush(dst)
		}
	}
}

// flush writes the output not yet written and keeps the last historySize
// bytes at the start of out.
func (f *inflater) flush(dst io.Writer) error {
	if f.w > f.start {
		if _, err := dst.Write(f.out[f.start:f.w]); err != nil {
			return err
		}
	}
	if f.w > historySize {
		copy(f.out, f.out[f.w-historySize:f.w])
		f.w = historySize
	}
	f.start = f.w
	return nil
}

func (f *inflater) stored(dst io.Writer) error {
	f.take(f.nbits & 7)
	// Give back the whole bytes held: the block's header and data are
	// read from the input directly.
	f.pos -= int(f.nbits / 8)
	f.bits, f.nbits = 0, 0
	if f.pos+4 > len(f.in) {
		return f.corrupt("unexpected end of data")
	}
	n := int(binary.LittleEndian.Uint16(f.in[f.pos:]))
	if nn := binary.LittleEndian.Uint16(f.in[f.pos+2:]); uint16(n) != ^nn {
		return f.corrupt("stored block length does not match its complement")
	}
	f.pos += 4
	if n > len(f.in)-f.pos {
		return f.corrupt("unexpected end of data")
	}
	for n > 0 {
		if f.w >= historySize+inflateChunk {
			if err := f.flush(dst); err != nil {
				return err
			}
		}
		m := copy(f.out[f.w:historySize+inflateChunk], f.in[f.pos:f.pos+n])
		f.w += m
		f.pos += m
		f.total += int64(m)
		n -= m
	}
	return nil
}

// readTables reads a dynamic block's code lengths and builds f.lit and
// f.dist.
func (f *inflater) readTables() error {
	if err := f.need(14); err != nil {
		return err
	}
	nlit := int(f.take(5)) + 257
	ndist := int(f.take(5)) + 1
	nclen := int(f.take(4)) + 4
	if nlit > maxLitCodes || ndist > maxDistCodes {
		return f.corrupt("too many length or distance codes")
	}
	var cl [19]uint8
	for i := range nclen {
		if err := f.need(3); err != nil {
			return err
		}
		cl[clenOrder[i]] = uint8(f.take(3))
	}
	if !f.clen.build(alphaClen, cl[:], clenRoot) {
		return f.corrupt("invalid code length code")
	}
	lens := f.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		if f.nbits < 7 {
			f.refill() // at the end of the input, fewer may be held
		}
		e := f.clen.t[f.bits&(1<<clenRoot-1)]
		if e.kind() != kindSymbol || e.bits() > f.nbits {
			if e.kind() != kindSymbol {
				return f.corrupt("invalid code length code")
			}
			return f.corrupt("unexpected end of data")
		}
		f.take(e.bits())
		sym := e.value()
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var val uint8
		var err error
		switch sym {
		case 16:
			if i == 0 {
				return f.corrupt("repeated code length without a previous one")
			}
			val = lens[i-1]
			if err = f.need(2); err == nil {
				rep = 3 + int(f.take(2))
			}
		case 17:
			if err = f.need(3); err == nil {
				rep = 3 + int(f.take(3))
			}
		default:
			if err = f.need(7); err == nil {
				rep = 11 + int(f.take(7))
			}
		}
		if err != nil {
			return err
		}
		if i+rep > len(lens) {
			return f.corrupt("code lengths repeat past the last code")
		}
		for range rep {
			lens[i] = val
			i++
		}
	}
	if !f.lit.build(alphaLit, lens[:nlit], litRoot) || !f.dist.build(alphaDist, lens[nlit:], distRoot) {
		return f.corrupt("invalid literal/length or distance code")
	}
	return nil
}

// huffman decodes one block's symbols with the given tables. The state
// is kept in local variables (registers) and written back around calls.
func (f *inflater) huffman(lit, dist *table, dst io.Writer) error {
	out, in := f.out, f.in
	bitBuf, nbits, pos, w := f.bits, f.nbits, f.pos, f.w
	total := f.total - int64(w) // total output is total + w
	litT, distT := lit.t, dist.t
	litMask, distMask := uint64(1)<<lit.root-1, uint64(1)<<dist.root-1
	litRoot, distRoot := lit.root, dist.root
	save := func() {
		f.bits, f.nbits, f.pos, f.w, f.total = bitBuf, nbits, pos, w, total+int64(w)
	}
	fail := func(msg string) error {
		save()
		return f.corrupt(msg)
	}
	const end = historySize + inflateChunk
	for {
		if w >= end {
			save()
			if err := f.flush(dst); err != nil {
				return err
			}
			total = f.total - int64(f.w)
			w = f.w
		}
		// 48 bits: a literal/length code (15), its extra bits (5), a
		// distance code (15) and its extra bits (13).
		if nbits < 48 {
			if pos+8 <= len(in) {
				bitBuf |= binary.LittleEndian.Uint64(in[pos:]) << nbits
				pos += int(63-nbits) >> 3
				nbits |= 56
			} else {
				for nbits <= 56 && pos < len(in) {
					bitBuf |= uint64(in[pos]) << nbits
					pos++
					nbits += 8
				}
			}
		}
		e := litT[bitBuf&litMask]
		if e.kind() == kindSub {
			e = litT[e.value()+int((bitBuf>>litRoot)&(1<<e.extra()-1))]
			if e.kind() == kindInvalid {
				return fail("invalid Huffman code")
			}
			if e.bits()+litRoot > nbits {
				return fail("unexpected end of data")
			}
			bitBuf >>= litRoot
			nbits -= litRoot
		}
		n := e.bits()
		if n > nbits {
			if e.kind() == kindInvalid {
				return fail("invalid Huffman code")
			}
			return fail("unexpected end of data")
		}
		bitBuf >>= n
		nbits -= n
		switch e.kind() {
		case kindLiteral:
			out[w] = byte(e.value())
			w++
			continue
		case kindEnd:
			save()
			return nil
		case kindLength:
		case kindInvalid:
			return fail("invalid Huffman code")
		default:
			return fail("invalid literal/length symbol")
		}
		x := e.extra()
		if x > nbits {
			return fail("unexpected end of data")
		}
		length := e.value() + int(bitBuf&(1<<x-1))
		bitBuf >>= x
		nbits -= x
		d := distT[bitBuf&distMask]
		if d.kind() == kindSub {
			d = distT[d.value()+int((bitBuf>>distRoot)&(1<<d.extra()-1))]
			if d.kind() == kindInvalid {
				return fail("invalid Huffman code")
			}
			if d.bits()+distRoot > nbits {
				return fail("unexpected end of data")
			}
			bitBuf >>= distRoot
			nbits -= distRoot
		}
		n = d.bits()
		if d.kind() != kindDist {
			if d.kind() == kindInvalid {
				return fail("invalid Huffman code")
			}
			return fail("invalid distance symbol")
		}
		if n > nbits {
			return fail("unexpected end of data")
		}
		bitBuf >>= n
		nbits -= n
		x = d.extra()
		if x > nbits {
			return fail("unexpected end of data")
		}
		distance := d.value() + int(bitBuf&(1<<x-1))
		bitBuf >>= x
		nbits -= x
		if int64(distance) > total+int64(w) {
			return fail("distance past the start of the data")
		}
		src := w - distance
		if distance >= 8 {
			// 8 bytes at a time, overlapping forward copies included:
			// each load is of bytes already written. Up to 7 bytes past
			// the match are written, into out's slack.
			for i := 0; i < length; i += 8 {
				binary.LittleEndian.PutUint64(out[w+i:], binary.LittleEndian.Uint64(out[src+i:]))
			}
		} else {
			for i := range length {
				out[w+i] = out[src+i]
			}
		}
		w += length
	}
}
