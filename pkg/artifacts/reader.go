package artifacts

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
)

// SmallPayloadBytes is the size up to which a verified Reader reads and
// checks the whole payload before it yields a single byte. Larger payloads
// stream, and the Reader reports CodeCorrupt in place of io.EOF.
const SmallPayloadBytes = 1 << 20

// Reader streams a version's bytes and verifies them against its record.
// It returns io.EOF only after the bytes it has seen match the record's
// size and SHA-256; otherwise its final Read returns an *Error with
// CodeCorrupt. Always Close it.
type Reader struct {
	rec    Record
	body   io.Reader // the source: the whole payload when verify, else the range
	closer io.Closer
	verify bool
	h      hash.Hash
	n      int64 // bytes read from body
	skip   int64 // prefix to hash and drop (verified ranges)
	remain int64 // range bytes still to yield; -1 for all
	err    error // sticky
	buf    *bytes.Reader
	whole  bool        // the range is the whole payload
	stable io.ReaderAt // random access to body's bytes, if the driver offers it
}

// NewReader wraps body, the stream of a payload described by rec.
//
// With verify, body must yield the whole payload; the Reader hashes all of
// it, yields only the bytes in [offset, offset+length) (length -1: to the
// end) and checks size and digest before it reports io.EOF. Payloads of at
// most SmallPayloadBytes are read and checked in full before the first byte
// is returned.
//
// Without verify, body must yield exactly the range; the Reader checks only
// that it yields the number of bytes the record says the range holds. A
// body that checks the bytes itself (a checksum the service stored, say)
// reports a mismatch as an *Error with CodeCorrupt in place of io.EOF, and
// the Reader passes it on.
func NewReader(rec Record, body io.ReadCloser, offset, length int64, verify bool) (*Reader, error) {
	if offset < 0 || length < -1 {
		body.Close()
		return nil, Errorf(CodeInvalidArgument, "read range", nil, "offset %d, length %d", offset, length).With(rec.Scope, rec.Name, rec.Version)
	}
	if offset > rec.Size {
		offset = rec.Size
	}
	if length == -1 || offset+length > rec.Size {
		length = rec.Size - offset
	}
	r := &Reader{rec: rec, body: body, closer: body, verify: verify, remain: length, whole: offset == 0 && length == rec.Size}
	if verify {
		r.h = sha256.New()
		r.skip = offset
		if rec.Size <= SmallPayloadBytes {
			if err := r.prefetch(offset, length); err != nil {
				body.Close()
				return nil, err
			}
		}
	}
	return r, nil
}

// OfferReaderAt is called by a driver whose payload bytes cannot change
// once published (a file of a layout that never rewrites a version):
// ra reads the same bytes as the body given to NewReader, at any offset,
// for as long as the Reader is open. VerifiedReaderAt hands it out only
// once the Reader has verified every byte.
func (r *Reader) OfferReaderAt(ra io.ReaderAt) { r.stable = ra }

// RandomAccess reports whether VerifiedReaderAt will give random access
// to the payload once the Reader has verified it: the Reader verifies
// the whole payload, and it is small enough to be held in memory
// (SmallPayloadBytes) or its driver offered unchangeable bytes
// (OfferReaderAt).
func (r *Reader) RandomAccess() bool {
	return r.verify && r.whole && (r.buf != nil || r.stable != nil)
}

// VerifiedReaderAt returns random access to the payload's bytes after
// they were all verified against the record: for a small payload, read
// and checked whole when the Reader was opened, at once; otherwise once
// Read has returned io.EOF (never a corruption) and only where the
// driver offered unchangeable bytes. So a caller that needs random access
// (a zip archive) reads the payload once to verify it and then in place,
// instead of copying it. ok is false otherwise; the ReaderAt is valid
// until Close.
func (r *Reader) VerifiedReaderAt() (ra io.ReaderAt, ok bool) {
	switch {
	case !r.verify || !r.whole:
		return nil, false
	case r.buf != nil:
		return r.buf, true // bytes.Reader.ReadAt ignores the read position
	case r.stable != nil && r.err == io.EOF:
		return r.stable, true
	}
	return nil, false
}

// Record returns the record of the version being read.
func (r *Reader) Record() Record { return r.rec }

func (r *Reader) corrupt(format string, args ...any) error {
	return Errorf(CodeCorrupt, "read", nil, format, args...).With(r.rec.Scope, r.rec.Name, r.rec.Version)
}

// prefetch reads and verifies a small payload whole.
func (r *Reader) prefetch(offset, length int64) error {
	data := make([]byte, r.rec.Size+1)
	n, err := io.ReadFull(r.body, data)
	switch {
	case err == nil:
		return r.corrupt("payload is longer than the record's %d bytes", r.rec.Size)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
	default:
		return Errorf(CodeIO, "read", err, "").With(r.rec.Scope, r.rec.Name, r.rec.Version)
	}
	data = data[:n]
	r.n = int64(n)
	r.h.Write(data)
	if err := r.check(); err != nil {
		return err
	}
	r.buf = bytes.NewReader(data[offset : offset+length])
	return nil
}

func (r *Reader) check() error {
	if r.n != r.rec.Size {
		return r.corrupt("payload has %d bytes, record says %d", r.n, r.rec.Size)
	}
	if r.verify {
		if got := DigestHex(r.h.Sum(nil)); got != r.rec.Digest {
			return r.corrupt("payload SHA-256 %s does not match the record's %s", got, r.rec.Digest)
		}
	}
	return nil
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if r.buf != nil {
		return r.buf.Read(p)
	}
	if r.err != nil {
		return 0, r.err
	}
	if !r.verify {
		return r.readRange(p)
	}
	for r.skip > 0 {
		if err := r.drain(&r.skip); err != nil {
			return 0, err
		}
	}
	if r.remain == 0 {
		// Hash the tail, then verify.
		var rest int64 = -1
		if err := r.drain(&rest); err != nil {
			return 0, err
		}
		return 0, r.err
	}
	if int64(len(p)) > r.remain {
		p = p[:r.remain]
	}
	n, err := r.body.Read(p)
	r.n += int64(n)
	r.remain -= int64(n)
	r.h.Write(p[:n])
	if r.n > r.rec.Size {
		r.err = r.corrupt("payload is longer than the record's %d bytes", r.rec.Size)
		return 0, r.err
	}
	if err == io.EOF {
		r.err = r.check()
		if r.err == nil {
			r.err = io.EOF
		}
		if n > 0 && r.err == io.EOF {
			return n, nil
		}
		return 0, r.err
	}
	if err != nil {
		r.err = Errorf(CodeIO, "read", err, "").With(r.rec.Scope, r.rec.Name, r.rec.Version)
		return n, r.err
	}
	return n, nil
}

// drain hashes and drops *todo bytes (-1: to the end of body); at the end of
// body it verifies and sets r.err to io.EOF or the corruption.
func (r *Reader) drain(todo *int64) error {
	var scratch [32 << 10]byte
	for *todo != 0 {
		p := scratch[:]
		if *todo > 0 && int64(len(p)) > *todo {
			p = p[:*todo]
		}
		n, err := r.body.Read(p)
		r.n += int64(n)
		if *todo > 0 {
			*todo -= int64(n)
		}
		r.h.Write(p[:n])
		if r.n > r.rec.Size {
			r.err = r.corrupt("payload is longer than the record's %d bytes", r.rec.Size)
			return r.err
		}
		if err == io.EOF {
			if r.err = r.check(); r.err == nil {
				r.err = io.EOF
			}
			if *todo > 0 { // the range lies past the real end
				r.err = r.corrupt("payload has %d bytes, record says %d", r.n, r.rec.Size)
			}
			*todo = 0
			return r.errIfNotEOF()
		}
		if err != nil {
			r.err = Errorf(CodeIO, "read", err, "").With(r.rec.Scope, r.rec.Name, r.rec.Version)
			return r.err
		}
	}
	return nil
}

func (r *Reader) errIfNotEOF() error {
	if r.err == io.EOF {
		return nil
	}
	return r.err
}

func (r *Reader) readRange(p []byte) (int, error) {
	if r.remain == 0 {
		// The range is complete; the source must be at its end too.
		var one [1]byte
		n, err := r.body.Read(one[:])
		if n > 0 {
			r.err = r.corrupt("range source is longer than expected")
			return 0, r.err
		}
		if CodeOf(err) == CodeCorrupt { // the source's own check failed at its end
			r.err = err
			return 0, r.err
		}
		r.err = io.EOF
		return 0, io.EOF
	}
	if int64(len(p)) > r.remain {
		p = p[:r.remain]
	}
	n, err := r.body.Read(p)
	r.remain -= int64(n)
	if err == io.EOF && r.remain > 0 {
		r.err = r.corrupt("payload ends %d bytes early", r.remain)
		if n > 0 {
			return n, nil
		}
		return 0, r.err
	}
	if err != nil && err != io.EOF {
		r.err = err
		if CodeOf(err) != CodeCorrupt {
			r.err = Errorf(CodeIO, "read", err, "").With(r.rec.Scope, r.rec.Name, r.rec.Version)
		}
		return n, r.err
	}
	return n, nil
}

// Close releases the underlying stream.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	err := r.closer.Close()
	r.closer = nil
	return err
}
