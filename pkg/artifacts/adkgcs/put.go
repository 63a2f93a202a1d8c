package adkgcs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"strconv"

	"cloud.google.com/go/storage"

	"github.com/agentstore/agentstore/internal/gcserr"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// errTaken says a concurrent writer holds the number a Put tried.
var errTaken = errors.New("version number taken")

// objectMetadata converts custom metadata into Cloud Storage's: string
// values only (ADK reads them as strings), at most MaxMetadataBytes of keys
// and values together.
func objectMetadata(op string, md artifacts.Metadata) (map[string]string, error) {
	out := make(map[string]string, len(md))
	total := 0
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := md[k].(string)
		if !ok {
			return nil, artifacts.Errorf(artifacts.CodeInvalidMetadata, op, nil, "metadata key %q holds a %T: the google-adk-gcs layout stores custom metadata as Cloud Storage object metadata, strings only", k, md[k])
		}
		if k == "" {
			return nil, artifacts.Errorf(artifacts.CodeInvalidMetadata, op, nil, "metadata key is empty")
		}
		total += len(k) + len(v)
		out[k] = v
	}
	if total > MaxMetadataBytes {
		return nil, artifacts.Errorf(artifacts.CodeInvalidMetadata, op, nil, "metadata is %d bytes of keys and values, more than Cloud Storage's %d", total, MaxMetadataBytes)
	}
	return out, nil
}

// Put writes the payload as the name's next version: one more than the
// highest listed (the bucket's first version for a new name), created
// with the DoesNotExist precondition, so a concurrent writer's object is
// never overwritten: on HTTP 412 it tries the next number, at most
// Options.MaxPutAttempts times. A user-scope name is written in the form
// its existing versions use ("user:" kept, as adk-go and ADK Python write
// it, for a new name). The Content-Type is opts.MIMEType and the object
// metadata opts.Metadata. The payload streams: a failed or too-large
// upload commits nothing.
func (s *Store) Put(ctx context.Context, scope artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions) (artifacts.Record, error) {
	const op = "put"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	if err := s.check(op, scope, name); err != nil {
		return artifacts.Record{}, refuse(err, scope, name)
	}
	md, err := objectMetadata(op, opts.Metadata)
	if err != nil {
		return artifacts.Record{}, refuse(err, scope, name)
	}
	nv, err := s.versions(cctx, scope, name)
	if err != nil {
		return artifacts.Record{}, gcserr.Classify(cctx, op, err, "listing versions").With(scope, name, artifacts.NoVersion)
	}
	next, f := s.first, formKept
	if len(nv.objects) > 0 {
		last := nv.objects[len(nv.objects)-1]
		next, f = last.p.version+1, last.p.form
	}
	// The payload is read once; a retry under the next number sends it
	// again from memory (up to one chunk) or from a temporary file.
	up := &upload{s: s, scope: scope, name: name, form: f, md: md, mime: opts.MIMEType}
	defer up.close()
	for attempt := 1; ; attempt++ {
		if attempt > s.opts.MaxPutAttempts {
			return artifacts.Record{}, artifacts.Errorf(artifacts.CodeConflict, op, nil, "%d version numbers in a row were taken by concurrent writers", s.opts.MaxPutAttempts).With(scope, name, artifacts.NoVersion)
		}
		attrs, err := up.write(cctx, next, r)
		if err == nil {
			p := parsed{scope: scope, name: name, version: next, form: f}
			return object{p: p, name: attrs.Name, attrs: attrs}.record(), nil
		}
		if !errors.Is(err, errTaken) {
			return artifacts.Record{}, err
		}
		again, err := s.versions(cctx, scope, name)
		if err != nil {
			return artifacts.Record{}, gcserr.Classify(cctx, op, err, "listing versions").With(scope, name, artifacts.NoVersion)
		}
		next++
		if n := len(again.objects); n > 0 {
			next = max(next, again.objects[n-1].p.version+1)
		}
	}
}

// upload is one Put's payload: sent by its first attempt, and sent again
// from memory (small payloads) or a temporary file (large ones) when a
// competitor took the number.
type upload struct {
	s     *Store
	scope artifacts.Scope
	name  string
	form  form
	md    map[string]string
	mime  string

	small []byte    // the whole payload when it fit in one chunk
	spool *os.File  // a copy of a larger payload, for a retry
	rest  io.Reader // what the first attempt did not read of a larger payload, teed into spool
	sent  bool      // the payload was read
	large bool      // it did not fit in one chunk
	crc   uint32
	size  int64
}

// close removes the spool.
func (u *upload) close() {
	if u.spool != nil {
		u.spool.Close()
		os.Remove(u.spool.Name())
		u.spool = nil
	}
}

func (u *upload) objectName(v int64) string {
	return u.s.root + scopePrefix(u.scope) + filename(u.scope, u.name, u.form) + "/" + strconv.FormatInt(v, 10)
}

// write creates version v's object, or reports errTaken.
func (u *upload) write(ctx context.Context, v int64, r io.Reader) (*storage.ObjectAttrs, error) {
	const op = "put"
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return nil, err
	}
	name := u.objectName(v)
	limit := u.s.opts.MaxArtifactBytes
	if !u.sent {
		// First attempt: read at most one chunk to tell small from large.
		buf := make([]byte, 0, min(int64(u.s.opts.ChunkSize), limit+1))
		n, err := io.ReadFull(r, buf[:cap(buf)])
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return nil, u.readErr(ctx, err)
		}
		buf = buf[:n]
		if int64(n) > limit {
			return nil, u.tooLarge()
		}
		u.sent = true
		if n < cap(buf) || int64(n) == limit {
			// All of it (the reader ended, or the limit is reached: one more
			// byte would be too many, which the next read tells).
			if int64(n) == limit && n == cap(buf) {
				var one [1]byte
				if m, _ := io.ReadFull(r, one[:]); m > 0 {
					return nil, u.tooLarge()
				}
			}
			u.small = buf
			u.crc, u.size = crc32.Checksum(buf, castagnoli), int64(n)
			return u.create(ctx, name, u.small)
		}
		// A larger payload streams, and is copied to a temporary file on the
		// way so that a retry under the next number can send it again.
		u.large = true
		src := io.MultiReader(bytes.NewReader(buf), r)
		if f, err := os.CreateTemp("", "agentstore-put-*"); err == nil {
			u.spool = f
			src = io.TeeReader(src, f)
			u.rest = src
		}
		return u.stream(ctx, name, src)
	}
	if !u.large {
		return u.create(ctx, name, u.small)
	}
	if u.spool == nil {
		return nil, artifacts.Errorf(artifacts.CodeConflict, op, nil, "another writer took the version number while a %d-byte payload was being sent, and no temporary file could hold it for another try", u.size).With(u.scope, u.name, artifacts.NoVersion)
	}
	// The first attempt may have stopped reading early: copy the rest.
	_, err := io.Copy(io.Discard, io.LimitReader(u.rest, u.s.opts.MaxArtifactBytes+1))
	if err != nil {
		return nil, u.readErr(ctx, err)
	}
	if pos, _ := u.spool.Seek(0, io.SeekCurrent); pos > u.s.opts.MaxArtifactBytes {
		return nil, u.tooLarge()
	}
	if _, err := u.spool.Seek(0, io.SeekStart); err != nil {
		return nil, artifacts.Errorf(artifacts.CodeIO, op, err, "rereading the payload's temporary copy").With(u.scope, u.name, artifacts.NoVersion)
	}
	return u.stream(ctx, name, u.spool)
}

func (u *upload) tooLarge() error {
	return artifacts.Errorf(artifacts.CodeTooLarge, "put", nil, "payload exceeds %d bytes", u.s.opts.MaxArtifactBytes).With(u.scope, u.name, artifacts.NoVersion)
}

func (u *upload) readErr(ctx context.Context, err error) error {
	if cerr := artifacts.CheckContext(ctx, "put"); cerr != nil {
		return cerr
	}
	return artifacts.Errorf(artifacts.CodeIO, "put", err, "reading the payload").With(u.scope, u.name, artifacts.NoVersion)
}

func (u *upload) writer(ctx context.Context, name string) *storage.Writer {
	w := u.s.client.Bucket(u.s.bucket).Object(name).If(storage.Conditions{DoesNotExist: true}).NewWriter(ctx)
	w.ContentType = u.mime
	w.Metadata = u.md
	return w
}

// create writes a small payload in one request with its CRC32C declared.
func (u *upload) create(ctx context.Context, name string, data []byte) (*storage.ObjectAttrs, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := u.writer(wctx, name)
	w.ChunkSize = 0
	w.SendCRC32C = true
	w.CRC32C = u.crc
	if _, err := w.Write(data); err != nil {
		cancel()
		w.Close()
		return nil, u.writeErr(ctx, name, err)
	}
	if err := w.Close(); err != nil {
		return nil, u.writeErr(ctx, name, err)
	}
	return w.Attrs(), nil
}

// stream writes a large payload in chunks; reading past the limit, a read
// error or a done context aborts the upload before it commits.
func (u *upload) stream(ctx context.Context, name string, r io.Reader) (*storage.ObjectAttrs, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := u.writer(wctx, name)
	w.ChunkSize = u.s.opts.ChunkSize
	h := crc32.New(castagnoli)
	lim := &io.LimitedReader{R: r, N: u.s.opts.MaxArtifactBytes + 1}
	n, err := io.Copy(io.MultiWriter(w, h), lim)
	if err == nil && n > u.s.opts.MaxArtifactBytes {
		err = u.tooLarge()
	} else if err != nil && artifacts.CodeOf(err) == artifacts.CodeUnknown {
		err = u.readErr(ctx, err)
	}
	if err != nil {
		cancel()
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, u.writeErr(ctx, name, err)
	}
	a := w.Attrs()
	u.crc, u.size = h.Sum32(), n
	if a.CRC32C != u.crc || a.Size != n {
		// What the service stored is not what was sent: remove it.
		_ = u.s.obj(name).If(storage.Conditions{GenerationMatch: a.Generation}).Delete(ctx)
		return nil, artifacts.Errorf(artifacts.CodeCorrupt, "put", nil, "object %s was stored with %d bytes and another checksum than the %d bytes sent; it was removed", name, a.Size, n).With(u.scope, u.name, artifacts.NoVersion)
	}
	return a, nil
}

func (u *upload) writeErr(ctx context.Context, name string, err error) error {
	if gcserr.HTTPCode(err) == 412 {
		return errTaken
	}
	if e := artifacts.CodeOf(err); e == artifacts.CodeTooLarge || e == artifacts.CodeIO {
		return err
	}
	return gcserr.Classify(ctx, "put", err, "%s", fmt.Sprintf("writing object %s", name)).With(u.scope, u.name, artifacts.NoVersion)
}
