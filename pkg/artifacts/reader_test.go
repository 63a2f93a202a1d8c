package artifacts

import (
	"bytes"
	"crypto/sha256"
	"io"
	"testing"
)

// TestVerifiedReaderAt: random access to a payload is given only for the
// whole payload and only once every byte was verified: at once for a
// small payload (read whole when opened), after io.EOF for a large one
// whose driver offered unchangeable bytes, never for a range, an
// unverified reader, a large payload without the offer, or a corrupt one.
func TestVerifiedReaderAt(t *testing.T) {
	small := bytes.Repeat([]byte("s"), 1000)
	large := bytes.Repeat([]byte("L"), SmallPayloadBytes+1000)
	recOf := func(b []byte) Record {
		sum := sha256.Sum256(b)
		return Record{Scope: SessionScope("a", "u", "s"), Name: "n", Version: 1, Size: int64(len(b)), Digest: DigestHex(sum[:])}
	}
	cases := []struct {
		name        string
		payload     []byte // what the record describes
		body        []byte // what the driver reads; nil: payload
		offset, len int64
		verify      bool
		offer       bool
		random      bool // RandomAccess
		before      bool // VerifiedReaderAt before reading
		after       bool // VerifiedReaderAt after reading to the end
		corrupt     bool // reading ends in CodeCorrupt
	}{
		{name: "small, verified when opened", payload: small, len: -1, verify: true, random: true, before: true, after: true},
		{name: "small, offered", payload: small, len: -1, verify: true, offer: true, random: true, before: true, after: true},
		{name: "large, offered", payload: large, len: -1, verify: true, offer: true, random: true, after: true},
		{name: "large, not offered", payload: large, len: -1, verify: true},
		{name: "large, offered, corrupt", payload: large, body: append(bytes.Repeat([]byte("L"), SmallPayloadBytes+999), 'x'), len: -1, verify: true, offer: true, random: true, corrupt: true},
		{name: "large, offered, range", payload: large, offset: 10, len: 100, verify: true, offer: true},
		{name: "small, range", payload: small, offset: 10, len: -1, verify: true},
		{name: "large, offered, unverified", payload: large, len: -1, offer: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.body
			if body == nil {
				body = c.payload
			}
			src := bytes.NewReader(body)
			var want []byte
			if c.verify {
				want = body
			} else {
				want = body[c.offset:]
			}
			r, err := NewReader(recOf(c.payload), io.NopCloser(bytes.NewReader(want)), c.offset, c.len, c.verify)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if c.offer {
				r.OfferReaderAt(src)
			}
			if got := r.RandomAccess(); got != c.random {
				t.Errorf("RandomAccess() = %v, want %v", got, c.random)
			}
			if _, ok := r.VerifiedReaderAt(); ok != c.before {
				t.Errorf("before reading: VerifiedReaderAt ok = %v, want %v", ok, c.before)
			}
			_, err = io.Copy(io.Discard, r)
			if c.corrupt != (CodeOf(err) == CodeCorrupt) {
				t.Fatalf("reading: %v, corrupt wanted: %v", err, c.corrupt)
			}
			if !c.corrupt && err != nil {
				t.Fatal(err)
			}
			ra, ok := r.VerifiedReaderAt()
			if ok != c.after {
				t.Fatalf("after reading: VerifiedReaderAt ok = %v, want %v", ok, c.after)
			}
			if !ok {
				return
			}
			// Random access reads the verified bytes, wherever the Reader is.
			for _, off := range []int64{int64(len(c.payload)) - 7, 0, 3} {
				got := make([]byte, 7)
				if n, err := ra.ReadAt(got, off); n != 7 || (err != nil && err != io.EOF) {
					t.Fatalf("ReadAt %d: %d, %v", off, n, err)
				}
				if !bytes.Equal(got, c.payload[off:off+7]) {
					t.Fatalf("ReadAt %d = %q, want %q", off, got, c.payload[off:off+7])
				}
			}
		})
	}
}
