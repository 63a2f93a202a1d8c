package zipsafe

import (
	"bytes"
	stdflate "compress/flate"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	kflate "github.com/klauspost/compress/flate"
)

// wordText returns n bytes of words from a fixed vocabulary, as the
// benchmark trees hold (about 2.5:1 compressible, short matches).
func wordText(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 2))
	vocab := make([]string, 2048)
	for i := range vocab {
		b := make([]byte, 2+rng.IntN(9))
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		vocab[i] = string(b)
	}
	var b bytes.Buffer
	col := 0
	for b.Len() < n {
		w := vocab[rng.IntN(len(vocab))]
		b.WriteString(w)
		if col += len(w) + 1; col > 72 {
			b.WriteByte('\n')
			col = 0
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

// deflateStd compresses data with compress/flate at level (-2: Huffman
// only).
func deflateStd(t testing.TB, data []byte, level int) []byte {
	var b bytes.Buffer
	w, err := stdflate.NewWriter(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// inflateStd is the reference: compress/flate's verdict and output.
func inflateStd(in []byte) ([]byte, error) {
	return io.ReadAll(stdflate.NewReader(bytes.NewReader(in)))
}

func inflateOurs(f *inflater, in []byte) ([]byte, error) {
	var b bytes.Buffer
	err := f.decode(in, &b)
	return b.Bytes(), err
}

// fixedBlock is a hand-made stream of one final block with fixed Huffman
// codes: "a", then a match of length 3 at distance 1 ("aaa"), then the
// end of block.
var fixedBlock = []byte{0x4b, 0x04, 0x02, 0x00}

// inflateSizes are the sizes of the inputs of TestInflateMatchesStandardLibrary
// and TestInflateTruncatedAndChanged: small ones in the default test tier,
// full ones in the integration tier (their Full variants), where the
// streams span more blocks and windows and the truncation and bit-flip
// loops try more places.
type inflateSizes struct {
	text, random, zeros, repetitive, period int // the large inputs
	cut, flips                              int // TestInflateTruncatedAndChanged
}

var (
	smallInflate = inflateSizes{text: 256 << 10, random: 100 << 10, zeros: 128 << 10, repetitive: 128 << 10, period: 10000, cut: 4 << 10, flips: 300}
	fullInflate  = inflateSizes{text: 3 << 20, random: 300 << 10, zeros: 2 << 20, repetitive: 1 << 20, period: 100000, cut: 20 << 10, flips: 2000}
)

// TestInflateMatchesStandardLibrary: the inflater decodes what
// compress/flate and klauspost's Deflate write, at every level, at the
// small sizes (TestInflateMatchesStandardLibraryFull: full sizes).
func TestInflateMatchesStandardLibrary(t *testing.T) {
	testInflateMatchesStandardLibrary(t, smallInflate)
}

func testInflateMatchesStandardLibrary(t *testing.T, sz inflateSizes) {
	random := make([]byte, sz.random)
	rand.NewChaCha8([32]byte{3, 4}).Read(random)
	inputs := map[string][]byte{
		"empty":        {},
		"one byte":     {'x'},
		"text 1 KB":    wordText(1<<10, 1),
		"text":         wordText(sz.text, 2),
		"random":       random,
		"zeros":        make([]byte, sz.zeros),
		"repetitive":   textOf(sz.repetitive),
		"short period": bytes.Repeat([]byte("abcdefg"), sz.period),
	}
	f := &inflater{}
	for name, data := range inputs {
		for _, level := range []int{-2, 0, 1, 6, 9} {
			comp := deflateStd(t, data, level)
			got, err := inflateOurs(f, comp)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s, level %d: got %d bytes, err %v; want the %d bytes compressed", name, level, len(got), err, len(data))
			}
		}
		// The stream Write makes (klauspost's Deflate).
		var b bytes.Buffer
		w, _ := kflate.NewWriter(&b, DefaultLevel)
		w.Write(data)
		w.Close()
		if got, err := inflateOurs(f, b.Bytes()); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s, klauspost: got %d bytes, err %v", name, len(got), err)
		}
	}
	if got, err := inflateOurs(f, fixedBlock); err != nil || string(got) != "aaaa" {
		t.Fatalf("fixed block: got %q, %v; want aaaa", got, err)
	}
}

// Every truncation of a valid stream, and the stream with any one byte
// changed, gets the standard library's verdict: an error, or (rarely
// for a changed byte) the same output. Small sizes; full ones in
// TestInflateTruncatedAndChangedFull.
func TestInflateTruncatedAndChanged(t *testing.T) {
	testInflateTruncatedAndChanged(t, smallInflate)
}

func testInflateTruncatedAndChanged(t *testing.T, sz inflateSizes) {
	f := &inflater{}
	for _, level := range []int{-2, 0, 1, 9} {
		data := wordText(sz.cut, uint64(level+10))
		comp := deflateStd(t, data, level)
		for n := range len(comp) {
			got, err := inflateOurs(f, comp[:n])
			var ce *errCorrupt
			if !errors.As(err, &ce) {
				t.Fatalf("level %d, first %d of %d bytes: got %d bytes, err %v; want a corrupt data error", level, n, len(comp), len(got), err)
			}
		}
		rng := rand.New(rand.NewPCG(uint64(level+5), 6))
		for range sz.flips {
			bad := bytes.Clone(comp)
			i := rng.IntN(len(bad))
			bad[i] ^= byte(1 + rng.IntN(255))
			checkSameAsStd(t, f, bad)
		}
	}
}

func checkSameAsStd(t *testing.T, f *inflater, in []byte) {
	t.Helper()
	want, werr := inflateStd(in)
	got, err := inflateOurs(f, in)
	if (err == nil) != (werr == nil) || (err == nil && !bytes.Equal(got, want)) {
		t.Fatalf("input %x: got %d bytes, err %v; compress/flate %d bytes, err %v", in, len(got), err, len(want), werr)
	}
}

// Hand-made invalid streams, each refused with a corrupt data error.
func TestInflateRefuses(t *testing.T) {
	cases := map[string][]byte{
		"reserved block type":       {0x07},
		"stored length complement":  {0x01, 0x05, 0x00, 0x00, 0x00},
		"stored data missing":       {0x01, 0x05, 0x00, 0xfa, 0xff, 'a'},
		"distance before the start": {0x03, 0x02, 0x00},                   // fixed block: match at distance 1 first
		"fixed length symbol 286":   {0x1b, 0x03},                         // fixed block: the 8-bit code 11000110
		"fixed distance code 30":    {0x4b, 0x04, 0x03, 0x0f},             // "a", then length 3 with distance code 30
		"too many length codes":     {0xfd, 0x1f},                         // dynamic block, HLIT 31 (288 codes)
		"empty":                     {},                                   // not even a block header
		"no final block":            {0x4a, 0x04, 0x00},                   // a non-final fixed block "a", then nothing
		"repeat without a previous": {0x05, 0xe0, 0x81, 0x40, 0x00, 0x00}, // dynamic, code length code 16 first
	}
	f := &inflater{}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, werr := inflateStd(in)
			if werr == nil {
				t.Fatalf("compress/flate accepts the case %x: the case is wrong", in)
			}
			got, err := inflateOurs(f, in)
			var ce *errCorrupt
			if !errors.As(err, &ce) {
				t.Fatalf("got %q, err %v; want a corrupt data error", got, err)
			}
		})
	}
}

// A writer's error stops the inflater and is returned as it is.
func TestInflateWriterError(t *testing.T) {
	comp := deflateStd(t, wordText(2<<20, 7), 1)
	want := errors.New("disk full")
	var f inflater
	n := 0
	err := f.decode(comp, writerFunc(func(p []byte) (int, error) {
		if n++; n == 2 {
			return 0, want
		}
		return len(p), nil
	}))
	if err != want {
		t.Fatalf("got %v, want the writer's error", err)
	}
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

func FuzzInflate(f *testing.F) {
	f.Add(fixedBlock)
	for _, level := range []int{-2, 0, 1, 9} {
		f.Add(deflateStd(f, wordText(3000, 1), level))
	}
	f.Add(deflateStd(f, bytes.Repeat([]byte("ab"), 5000), 6))
	inf := &inflater{}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkSameAsStd(t, inf, in)
	})
}

// BenchmarkInflate compares the in-memory inflater with klauspost's
// streaming one, as Extract used it for every entry, on 1 MiB of word
// text compressed at DefaultLevel.
func BenchmarkInflate(b *testing.B) {
	data := wordText(1<<20, 9)
	var comp bytes.Buffer
	w, _ := kflate.NewWriter(&comp, DefaultLevel)
	w.Write(data)
	w.Close()
	b.Run("impl=klauspost", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		r := kflate.NewReader(nil)
		var br bytes.Reader
		for b.Loop() {
			br.Reset(comp.Bytes())
			r.(kflate.Resetter).Reset(&br, nil)
			r.(io.WriterTo).WriteTo(io.Discard)
		}
	})
	b.Run("impl=inflater", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		var f inflater
		for b.Loop() {
			if err := f.decode(comp.Bytes(), io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
}
