package zipsafe

import (
	"bytes"
	stdflate "compress/flate"
	"io"
	"testing"

	kflate "github.com/klauspost/compress/flate"
)

// BenchmarkFlate compares the standard library's Deflate with the one
// Write and Extract use (github.com/klauspost/compress/flate), at the level
// Write uses by default, on 8 MiB of text and on the same compressed stream.
func BenchmarkFlate(b *testing.B) {
	data := textOf(8 << 20)
	var comp bytes.Buffer
	w, _ := stdflate.NewWriter(&comp, DefaultLevel)
	w.Write(data)
	w.Close()
	type resetWriter interface {
		io.WriteCloser
		Reset(io.Writer)
	}
	stdW, _ := stdflate.NewWriter(io.Discard, DefaultLevel)
	kW, _ := kflate.NewWriter(io.Discard, DefaultLevel)
	deflaters := map[string]resetWriter{"std": stdW, "klauspost": kW}
	inflaters := map[string]io.ReadCloser{"std": stdflate.NewReader(nil), "klauspost": kflate.NewReader(nil)}
	buf := make([]byte, 256<<10)
	for _, impl := range []string{"std", "klauspost"} {
		b.Run("deflate="+impl, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			w := deflaters[impl]
			for b.Loop() {
				w.Reset(io.Discard)
				w.Write(data)
				w.Close()
			}
		})
		b.Run("inflate="+impl, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			r := inflaters[impl]
			for b.Loop() {
				r.(interface {
					Reset(io.Reader, []byte) error
				}).Reset(bytes.NewReader(comp.Bytes()), nil)
				io.CopyBuffer(io.Discard, onlyReader{r}, buf)
			}
		})
	}
}
