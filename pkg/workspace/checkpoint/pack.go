package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"sort"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// packSlot is a pack of a snapshot being written: one of the parent's
// (Pack set) or one being filled (Pack set when it is published).
type packSlot struct {
	Pack
	published bool
}

// loc is where a blob's stored bytes are.
type loc struct {
	id     string
	pack   *packSlot
	offset int64
	length int64
	size   int64
	comp   string
}

// packWriter appends blobs to a pack held in memory (at most
// Options.PackBytes) and publishes it with one Put when it is full or
// flushed.
type packWriter struct {
	c         *Checkpoints
	buf       bytes.Buffer
	cur       *packSlot
	gen       int
	last      int64 // the version of GenName(PackName, gen) last known
	published []*packSlot
	added     int64
	budget    *budget // nil: no Options.MaxStoredBytes
}

// encoder and decoder are shared: their EncodeAll and DecodeAll are safe
// for concurrent use, and making one costs more than a small blob.
var (
	encoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err)
		}
		return e
	})
	// manifestEncoder trades some size for speed: a manifest of many
	// files is megabytes of JSON, written on every snapshot.
	manifestEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err)
		}
		return e
	})
	decoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxManifestBytes))
		if err != nil {
			panic(err)
		}
		return d
	})
)

func newPackWriter(c *Checkpoints, gen int, last int64) *packWriter {
	w := &packWriter{c: c, gen: max(gen, 1), last: last}
	if c.full(last) {
		w.gen++
	}
	return w
}

// add stores a blob of plain content, compressed when that saves at
// least an eighth.
func (w *packWriter) add(ctx context.Context, id string, plain []byte) (*loc, error) {
	stored, comp := plain, CompressionNone
	if len(plain) >= 64 {
		z := encoder().EncodeAll(plain, nil)
		if len(z) <= len(plain)-len(plain)/8 {
			stored, comp = z, CompressionZstd
		}
	}
	return w.addStored(ctx, id, stored, int64(len(plain)), comp)
}

// addStored appends a blob's stored bytes as they are.
func (w *packWriter) addStored(ctx context.Context, id string, stored []byte, size int64, comp string) (*loc, error) {
	n := int64(len(stored))
	if w.buf.Len() > 0 && int64(w.buf.Len())+n > w.c.opts.PackBytes {
		if err := w.flush(ctx); err != nil {
			return nil, err
		}
	}
	if mx := w.c.caps.MaxArtifactBytes; mx > 0 && n > mx {
		return nil, artifacts.Errorf(artifacts.CodeTooLarge, "checkpoint pack", nil, "a blob of %d bytes does not fit the store's %d-byte payloads", n, mx).With(w.c.opts.Scope, GenName(PackName, w.gen), artifacts.NoVersion)
	}
	if w.cur == nil {
		w.cur = &packSlot{}
	}
	l := &loc{id: id, pack: w.cur, offset: int64(w.buf.Len()), length: n, size: size, comp: comp}
	w.buf.Write(stored)
	if int64(w.buf.Len()) >= w.c.opts.PackBytes {
		if err := w.flush(ctx); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// full reports whether version v of a name used the name's last version
// number, on a layout with lifetime ceilings.
func (c *Checkpoints) full(v int64) bool {
	if c.caps.NoCeilings || v < 0 {
		return false
	}
	return v-c.caps.FirstVersion+1 >= int64(c.caps.VersionCapacity())
}

// maxRollovers bounds the generations one Put moves on after
// CodeVersionCapacity (a name another writer filled meanwhile).
const maxRollovers = 8

// putGen puts payload as a new version of base's generation *gen,
// moving to the next generation when the name is out of version numbers,
// and checks the published record against the payload.
func (c *Checkpoints) putGen(ctx context.Context, base string, gen *int, payload []byte, opts artifacts.PutOptions) (artifacts.Record, string, error) {
	sum := sha256.Sum256(payload)
	digest := hex.EncodeToString(sum[:])
	for range maxRollovers {
		name := GenName(base, *gen)
		rec, err := c.opts.Store.Put(ctx, c.opts.Scope, name, bytes.NewReader(payload), opts)
		if artifacts.CodeOf(err) == artifacts.CodeVersionCapacity {
			*gen++
			continue
		}
		if err != nil {
			return rec, digest, err
		}
		if rec.Size != int64(len(payload)) || (rec.Digest != "" && rec.Digest != digest) || rec.Name != name {
			return rec, digest, artifacts.Errorf(artifacts.CodeCorrupt, "checkpoint put", nil, "the store recorded %d bytes with digest %q; %d bytes with digest %s were sent", rec.Size, rec.Digest, len(payload), digest).With(c.opts.Scope, name, rec.Version)
		}
		return rec, digest, nil
	}
	return artifacts.Record{}, digest, artifacts.Errorf(artifacts.CodeVersionCapacity, "checkpoint put", nil, "%d generations of %s in a row are out of version numbers", maxRollovers, base).With(c.opts.Scope, GenName(base, *gen), artifacts.NoVersion)
}

// flush publishes the pack being filled, if any.
func (w *packWriter) flush(ctx context.Context) error {
	if w.buf.Len() == 0 {
		return nil
	}
	if err := w.budget.admit(ctx, w, int64(w.buf.Len()), false); err != nil {
		return err
	}
	rec, digest, err := w.c.putGen(ctx, PackName, &w.gen, w.buf.Bytes(), artifacts.PutOptions{
		MIMEType: PackMIMEType,
		Metadata: artifacts.Metadata{MetaKind: kindPack},
	})
	if err != nil {
		return err
	}
	w.cur.Pack = Pack{Ref: Ref{rec.Name, rec.Version}, Size: rec.Size, SHA256: digest}
	w.cur.published = true
	w.published = append(w.published, w.cur)
	w.added += rec.Size
	w.cur = nil
	w.buf.Reset()
	if w.c.full(rec.Version) {
		w.gen++
	}
	return nil
}

// maxGap is the largest run of unneeded bytes between two needed blobs
// of a pack that one ranged read still covers.
const maxGap = 1 << 20

// readBlobs reads the given blobs of one pack (any order; each located
// in pack) with as few ranged reads as the gaps between them allow, and
// calls fn with each blob's plain content once it matches the blob's id.
// A blob that does not is CodeCorrupt, before fn sees a byte of it.
// Memory holds one blob at a time.
func (c *Checkpoints) readBlobs(ctx context.Context, pack Pack, blobs []Blob, fn func(b Blob, stored, plain []byte) error) (reads int, err error) {
	const op = "checkpoint read"
	sort.Slice(blobs, func(i, j int) bool { return blobs[i].Offset < blobs[j].Offset })
	dec := decoder()
	bad := func(format string, args ...any) error {
		return artifacts.Errorf(artifacts.CodeCorrupt, op, nil, format, args...).With(c.opts.Scope, pack.Name, pack.Version)
	}
	var buf, plainBuf []byte
	for i := 0; i < len(blobs); {
		// One run: blobs whose gaps are at most maxGap.
		j, end := i+1, blobs[i].Offset+blobs[i].Length
		for j < len(blobs) && blobs[j].Offset-end <= maxGap {
			end = max(end, blobs[j].Offset+blobs[j].Length)
			j++
		}
		start := blobs[i].Offset
		rd, err := c.opts.Store.GetRange(ctx, c.opts.Scope, pack.Name, pack.Version, start, end-start)
		if err != nil {
			return reads, err
		}
		reads++
		if rec := rd.Record(); rec.Size != pack.Size || (rec.Digest != "" && rec.Digest != pack.SHA256) {
			rd.Close()
			return reads, bad("the stored pack (%d bytes, digest %q) is not the one the manifest names (%d bytes, digest %s)", rec.Size, rec.Digest, pack.Size, pack.SHA256)
		}
		pos := start
		for k := i; k < j; k++ {
			b := blobs[k]
			if b.Offset < pos {
				// Two blobs share bytes: the next run starts here.
				j = k
				break
			}
			if _, err := io.CopyN(io.Discard, rd, b.Offset-pos); err != nil {
				rd.Close()
				return reads, readErr(err, bad)
			}
			if int64(cap(buf)) < b.Length {
				buf = make([]byte, b.Length)
			}
			stored := buf[:b.Length]
			if _, err := io.ReadFull(rd, stored); err != nil {
				rd.Close()
				return reads, readErr(err, bad)
			}
			pos = b.Offset + b.Length
			plain := stored
			if b.Compression == CompressionZstd {
				plain, err = dec.DecodeAll(stored, plainBuf[:0])
				if err != nil || int64(len(plain)) != b.Size {
					rd.Close()
					return reads, bad("blob %s does not decompress to its %d bytes", b.ID, b.Size)
				}
				plainBuf = plain
			}
			sum := sha256.Sum256(plain)
			if hex.EncodeToString(sum[:]) != b.ID || int64(len(plain)) != b.Size {
				rd.Close()
				return reads, bad("blob %s at offset %d does not match its digest", b.ID, b.Offset)
			}
			if err := fn(b, stored, plain); err != nil {
				rd.Close()
				return reads, err
			}
		}
		rd.Close()
		i = j
	}
	return reads, nil
}

func readErr(err error, bad func(string, ...any) error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return bad("the pack ends before its blobs do")
	}
	return err
}
