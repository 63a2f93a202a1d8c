package gcsstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"hash/crc32"
	"io"
	mrand "math/rand/v2"
	"sync"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errTaken reports that an object this call tried to create exists and is
// not this call's (its token differs).
var errTaken = errors.New("object exists and was created by another call")

// Put streams r into a new version of name in scope.
//
// It lists the name's objects, takes 1 + the highest version among them
// and creates the empty .reserve (on HTTP 412, the next number, at most
// Options.MaxReserveAttempts times), streams the payload into .data, then
// creates .meta, the publication point. A new name or scope first counts
// the names of the scope, or the scopes of the prefix, against their
// ceilings. The deadline is checked before the .data and the .meta are
// committed; a failure after the .data was committed removes it (only that
// generation). The reservation always stays.
func (s *Store) Put(ctx context.Context, scope artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions) (artifacts.Record, error) {
	const op = "put"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	var version int64
	rec, err := s.put(cctx, scope, name, r, opts, &version)
	if err != nil {
		if errors.Is(err, errTaken) {
			err = artifacts.Errorf(artifacts.CodeConflict, op, err, "")
		}
		return artifacts.Record{}, classify(cctx, op, err, "").With(scope, name, version)
	}
	return rec, nil
}

func (s *Store) put(ctx context.Context, scope artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions, version *int64) (artifacts.Record, error) {
	const op = "put"
	// artifacts.Store checked the arguments and that the record fits in
	// Capabilities.MaxRecordBytes.
	rec := artifacts.Record{Scope: scope, Name: name, MIMEType: opts.MIMEType, Metadata: opts.Metadata}
	if rec.MIMEType == "" {
		rec.MIMEType = artifacts.DefaultMIMEType
	}
	if rec.Metadata == nil {
		rec.Metadata = artifacts.Metadata{}
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.Record{}, err
	}
	scopeHash, nameHash := scope.Hash(), artifacts.NameHash(name)
	prefix := s.namePrefix(scopeHash, nameHash)
	sc, err := s.scanForPut(ctx, prefix)
	if err != nil {
		return artifacts.Record{}, err
	}
	if sc.objects == 0 {
		if err := s.checkCapacity(ctx, scopeHash); err != nil {
			return artifacts.Record{}, err
		}
	}
	tok := newToken()
	if rec.Version, err = s.reserve(ctx, prefix, sc, tok); err != nil {
		return artifacts.Record{}, err
	}
	*version = rec.Version
	dataName := prefix + VersionObject(rec.Version, SuffixData)
	dataGen, err := s.upload(ctx, dataName, &rec, r, tok)
	if err != nil {
		return artifacts.Record{}, err
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		s.remove(ctx, dataName, dataGen, tok)
		return artifacts.Record{}, err
	}
	rec.CreatedAt = s.opts.Now().UnixMilli()
	b, err := artifacts.EncodeRecord(rec)
	if err == nil && len(b) > s.opts.MaxRecordBytes {
		err = artifacts.Errorf(artifacts.CodeInvalidMetadata, op, nil, "the record is %d bytes, more than %d", len(b), s.opts.MaxRecordBytes)
	}
	if err != nil {
		s.remove(ctx, dataName, dataGen, tok)
		return artifacts.Record{}, err
	}
	metaName := prefix + VersionObject(rec.Version, SuffixMeta)
	metaAttrs, err := s.createSmall(ctx, metaName, b, "application/octet-stream", tok)
	switch {
	case err == nil:
		rec.Token = versionToken(metaAttrs.Generation, dataGen)
		return rec, nil
	case errors.Is(err, errTaken):
		s.remove(ctx, dataName, dataGen, tok)
		return artifacts.Record{}, err
	}
	// The outcome is unknown (a timeout, a dropped connection, retries
	// exhausted): the record may have been committed. Look, past the
	// deadline if need be; remove the payload only when the record is
	// surely absent, since a record without its payload is corruption and
	// a payload without a record is an invisible orphan.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	a, aerr := s.obj(metaName).Attrs(cctx)
	switch {
	case aerr == nil && a.Metadata[TokenMetadataKey] == tok:
		rec.Token = versionToken(a.Generation, dataGen)
		return rec, nil
	case aerr != nil && isNotExist(aerr):
		s.remove(ctx, dataName, dataGen, tok)
	}
	return artifacts.Record{}, err
}

// hint is what this Store last learnt of a name's reservations: the
// version it reserved and the number of reservations up to it.
type hint struct {
	highest      int64
	reservations int
}

// maxHints bounds the hint cache; it is emptied when full.
const maxHints = 1 << 14

func (s *Store) setHint(prefix string, h hint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.hints) >= maxHints {
		clear(s.hints)
	}
	if h.highest > s.hints[prefix].highest {
		s.hints[prefix] = h
	}
}

// scanForPut learns a name's highest version and number of reservations.
// It lists only the objects above the version this Store last reserved
// for the name, if any: reservations are never removed, and writers
// reserve numbers in order, so those below are known. (A writer filling a
// gap below would go uncounted: the version ceiling is then exceeded by
// that many.)
func (s *Store) scanForPut(ctx context.Context, prefix string) (nameScan, error) {
	s.mu.Lock()
	h, ok := s.hints[prefix]
	s.mu.Unlock()
	sc, err := s.scanTail(ctx, prefix, h.highest)
	if err != nil || !ok {
		return sc, err
	}
	sc.objects++ // the hinted reservation
	sc.reservations += h.reservations
	sc.highest = max(sc.highest, h.highest)
	return sc, nil
}

// checkCapacity is called for a name whose prefix holds no object: it
// counts the scope's names and, for a new scope, the prefix's scopes.
//
// Cloud Storage has no counter that a create could be conditioned on, so
// two puts creating the last free name (or scope) at the same moment can
// both pass: the ceilings are exact for one writer and may be exceeded by
// the number of concurrent writers otherwise.
func (s *Store) checkCapacity(ctx context.Context, scopeHash string) error {
	const op = "put"
	limit := s.opts.MaxScanEntries / 2
	names, err := s.listPrefixes(ctx, s.namesPrefix(scopeHash), limit)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		scopes, err := s.listPrefixes(ctx, s.scopesPrefix(), limit)
		if err != nil {
			return err
		}
		if len(scopes) >= limit {
			return artifacts.Errorf(artifacts.CodeScopeCapacity, op, nil, "%d of %d scopes used in gs://%s/%s", len(scopes), limit, s.bucket, s.scopesPrefix())
		}
	}
	if len(names) >= limit {
		return artifacts.Errorf(artifacts.CodeNameCapacity, op, nil, "%d of %d names used in the scope", len(names), limit)
	}
	return nil
}

// reserve creates the empty .reserve of the next free version number.
// After a number is taken by a competitor it waits a random moment (up to
// 20 ms) and tries the next; after every fourth it lists the name again to
// jump to the current highest. Numbers are tried in order, so concurrent
// puts leave no gaps.
func (s *Store) reserve(ctx context.Context, prefix string, sc nameScan, tok string) (int64, error) {
	const op = "put"
	limit := s.opts.MaxScanEntries / 3
	count, n := sc.reservations, sc.highest+1
	for attempt := 1; ; attempt++ {
		if count >= limit {
			return 0, artifacts.Errorf(artifacts.CodeVersionCapacity, op, nil, "%d of %d reservations used", count, limit)
		}
		if attempt > s.opts.MaxReserveAttempts {
			return 0, artifacts.Errorf(artifacts.CodeConflict, op, nil, "%d version numbers in a row were taken by concurrent writers", s.opts.MaxReserveAttempts)
		}
		_, err := s.createSmall(ctx, prefix+VersionObject(n, SuffixReserve), nil, "application/octet-stream", tok)
		if err == nil {
			s.setHint(prefix, hint{highest: n, reservations: count + 1})
			return n, nil
		}
		if !errors.Is(err, errTaken) {
			return 0, err
		}
		count++
		n++
		// Writers that collided tend to collide again in lockstep: wait a
		// random moment, growing with the losses, to fall out of step.
		if err := sleep(ctx, time.Duration(mrand.Int64N(int64(min(attempt, 10))*int64(2*time.Millisecond)))); err != nil {
			return 0, err
		}
		if attempt%4 == 0 {
			again, err := s.scanForPut(ctx, prefix)
			if err != nil {
				return 0, err
			}
			count, n = again.reservations, max(n, again.highest+1)
		}
	}
}

// createSmall creates objName holding data (a record, an empty reservation
// or a small payload) with the DoesNotExist precondition, the data's
// CRC32C for the service to check, and tok in its custom metadata. It sends
// one request per attempt and retries transient failures itself, at most
// Options.MaxAttempts times. A 412 on a retry means the object exists; it
// is this call's (its first attempt committed, the response was lost) when
// it holds tok, and otherwise errTaken.
func (s *Store) createSmall(ctx context.Context, objName string, data []byte, contentType, tok string) (*storage.ObjectAttrs, error) {
	crc := crc32.Checksum(data, castagnoli)
	bo := gax.Backoff{Initial: s.opts.RetryInitial, Max: s.opts.RetryMax, Multiplier: 2}
	for attempt := 1; ; attempt++ {
		attrs, err := s.writeOnce(ctx, objName, data, crc, contentType, tok)
		if err == nil {
			if attrs.CRC32C != crc || attrs.Size != int64(len(data)) {
				return nil, s.corruptUpload(ctx, objName, attrs, int64(len(data)), crc)
			}
			return attrs, nil
		}
		if isPrecondition(err) {
			if attempt == 1 {
				return nil, errTaken
			}
			return s.ownedAttrs(ctx, objName, tok)
		}
		if ctx.Err() != nil || attempt >= s.opts.MaxAttempts || !shouldRetry(err) {
			return nil, err
		}
		if err := sleep(ctx, bo.Pause()); err != nil {
			return nil, err
		}
	}
}

// writeOnce sends one create request: chunking off, so the client neither
// buffers nor retries it.
func (s *Store) writeOnce(ctx context.Context, objName string, data []byte, crc uint32, contentType, tok string) (*storage.ObjectAttrs, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := s.client.Bucket(s.bucket).Object(objName).If(storage.Conditions{DoesNotExist: true}).NewWriter(wctx)
	w.ChunkSize = 0
	w.ContentType = contentType
	w.Metadata = map[string]string{TokenMetadataKey: tok}
	w.SendCRC32C = true
	w.CRC32C = crc
	if _, err := w.Write(data); err != nil {
		cancel()
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return w.Attrs(), nil
}

// ownedAttrs returns the attributes of objName when it carries tok, and
// errTaken when it is another call's.
func (s *Store) ownedAttrs(ctx context.Context, objName, tok string) (*storage.ObjectAttrs, error) {
	a, err := s.obj(objName).Attrs(ctx)
	if err != nil {
		if isNotExist(err) { // it existed a moment ago: someone removed it
			return nil, errTaken
		}
		return nil, err
	}
	if a.Metadata[TokenMetadataKey] != tok {
		return nil, errTaken
	}
	return a, nil
}

// upload streams r into the .data object dataName, hashing it (SHA-256 for
// the record, CRC32C to check what the service stored) and refusing more
// than Options.MaxArtifactBytes. It fills rec's Size and Digest and returns
// the object's generation.
//
// Payloads of at most 256 KiB are sent in one request with their CRC32C
// declared, so the service rejects a damaged upload. Larger payloads use a
// resumable upload in Options.ChunkSize chunks, whose CRC32C cannot be
// declared up front; the client sends its own checksum with the last chunk,
// and after the commit the CRC32C the service reports is compared with the
// one computed here: on a mismatch that generation is removed and the put
// fails with CodeCorrupt. An upload is aborted (its context canceled before
// the last chunk is sent, so nothing is committed) when the payload is too
// large, reading it fails, or the deadline passes.
func (s *Store) upload(ctx context.Context, dataName string, rec *artifacts.Record, r io.Reader, tok string) (int64, error) {
	const op = "put"
	limit := s.opts.MaxArtifactBytes
	bufp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bufp)
	buf := *bufp
	tooLarge := func() error {
		return artifacts.Errorf(artifacts.CodeTooLarge, op, nil, "payload exceeds %d bytes", limit)
	}
	readErr := func(err error) error {
		if cerr := artifacts.CheckContext(ctx, op); cerr != nil {
			return cerr
		}
		return artifacts.Errorf(artifacts.CodeIO, op, err, "reading the payload")
	}
	sh := sha256.New()
	// Read the first 256 KiB (and one byte more, to tell whether more follows).
	m, err := io.ReadFull(r, buf[:minChunk+1])
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return 0, readErr(err)
	}
	if int64(m) > limit {
		return 0, tooLarge()
	}
	if m <= minChunk {
		sh.Write(buf[:m])
		rec.Size, rec.Digest = int64(m), artifacts.DigestHex(sh.Sum(nil))
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return 0, err
		}
		attrs, err := s.createSmall(ctx, dataName, buf[:m], rec.MIMEType, tok)
		if err != nil {
			if !errors.Is(err, errTaken) {
				s.remove(ctx, dataName, 0, tok)
			}
			return 0, err
		}
		return attrs.Generation, nil
	}

	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	w := s.obj(dataName).If(storage.Conditions{DoesNotExist: true}).NewWriter(wctx)
	w.ChunkSize = s.opts.ChunkSize
	w.ContentType = rec.MIMEType
	w.Metadata = map[string]string{TokenMetadataKey: tok}
	abort := func(err error) (int64, error) {
		wcancel()
		w.Close()
		return 0, err
	}
	crc := crc32.New(castagnoli)
	hw := io.MultiWriter(sh, crc)
	n := int64(0)
	chunk := buf[:m]
	for {
		if len(chunk) > 0 {
			if n+int64(len(chunk)) > limit {
				return abort(tooLarge())
			}
			hw.Write(chunk)
			if _, err := w.Write(chunk); err != nil {
				return abort(err)
			}
			n += int64(len(chunk))
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return abort(readErr(err))
		}
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return abort(err)
		}
		var k int
		k, err = r.Read(buf)
		chunk = buf[:k]
	}
	rec.Size, rec.Digest = n, artifacts.DigestHex(sh.Sum(nil))
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return abort(err)
	}
	attrs := (*storage.ObjectAttrs)(nil)
	if err := w.Close(); err != nil {
		if !isPrecondition(err) {
			// The last chunk may have been committed before the failure.
			s.remove(ctx, dataName, 0, tok)
			return 0, err
		}
		// The client retried the last chunk or the session's creation:
		// the object may be this call's own.
		if attrs, err = s.ownedAttrs(ctx, dataName, tok); err != nil {
			return 0, err
		}
	} else {
		attrs = w.Attrs()
	}
	if attrs.Size != n || attrs.CRC32C != crc.Sum32() {
		return 0, s.corruptUpload(ctx, dataName, attrs, n, crc.Sum32())
	}
	return attrs.Generation, nil
}

// corruptUpload removes the generation of an object whose stored size or
// CRC32C differs from what was sent, and returns the error to report.
func (s *Store) corruptUpload(ctx context.Context, objName string, attrs *storage.ObjectAttrs, size int64, crc uint32) error {
	s.remove(ctx, objName, attrs.Generation, "")
	return artifacts.Errorf(artifacts.CodeCorrupt, "put", nil, "the service stored %d bytes with CRC32C %08x for %s, sent %d bytes with CRC32C %08x", attrs.Size, attrs.CRC32C, objName, size, crc)
}

// remove deletes generation gen of objName, best effort, within a bound of
// its own (the call's deadline may have passed). With gen 0 it first reads
// the object's attributes and removes it only when it carries tok.
func (s *Store) remove(ctx context.Context, objName string, gen int64, tok string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if gen == 0 {
		a, err := s.obj(objName).Attrs(cctx)
		if err != nil || tok == "" || a.Metadata[TokenMetadataKey] != tok {
			return
		}
		gen = a.Generation
	}
	s.obj(objName).If(storage.Conditions{GenerationMatch: gen}).Delete(cctx)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, minChunk+1); return &b }}

var _ artifacts.NameSlotCounter = (*Store)(nil)

// NameSlots counts the scope's name prefixes, as a put does before it
// creates a name (checkCapacity): a deleted name's prefix keeps its
// reservations, so it stays counted.
func (s *Store) NameSlots(ctx context.Context, scope artifacts.Scope) (int, error) {
	const op = "count name slots"
	names, err := s.listPrefixes(ctx, s.namesPrefix(scope.Hash()), s.opts.MaxScanEntries/2)
	if err != nil {
		return 0, classify(ctx, op, err, "listing the names of %s", scope)
	}
	return len(names), nil
}
