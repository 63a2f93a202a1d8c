package adkfile

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Modes of what Put makes: those ADK's own writers get under a usual
// umask, so that the ADK process reading the store can.
const (
	dirMode  fs.FileMode = 0o755
	fileMode fs.FileMode = 0o644
)

// Put writes r as the next version of name in scope through the pending
// protocol: versions/.N.pending/ is made with an atomic mkdir (N is the
// highest number or pending number found, plus one), the payload and
// metadata.json are written there and fsynced, and the directory is
// renamed to versions/N without replacing anything. A number another
// writer takes first is retried with the next one, a bounded number of
// times (CodeConflict past it). Nothing is left behind by a Put that
// fails.
func (s *Store) Put(ctx context.Context, scope artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions) (artifacts.Record, error) {
	const op = "put"
	dir, base, err := s.nameDir(op, scope, name)
	if err != nil {
		var ae *appError
		if errors.As(err, &ae) {
			return artifacts.Record{}, artifacts.Errorf(artifacts.CodeInvalidScope, op, nil, "%s", ae.err().Msg).With(scope, name, artifacts.NoVersion)
		}
		return artifacts.Record{}, err
	}
	md, err := json.Marshal(jsonFloats(opts.Metadata))
	if err != nil {
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeInvalidMetadata, op, err, "custom metadata is not JSON").With(scope, name, artifacts.NoVersion)
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.Record{}, err
	}
	vdir := path.Join(dir, VersionsDir)
	if err := s.mkdirAll(op, vdir); err != nil {
		return artifacts.Record{}, withArtifact(err, scope, name, artifacts.NoVersion)
	}
	for range maxPutAttempts {
		n, err := s.nextNumber(op, vdir)
		if err != nil {
			return artifacts.Record{}, withArtifact(err, scope, name, artifacts.NoVersion)
		}
		pending := path.Join(vdir, "."+strconv.FormatInt(n, 10)+".pending")
		if err := s.root.Mkdir(pending, dirMode); errors.Is(err, fs.ErrExist) {
			continue // another writer holds this number
		} else if err != nil {
			return artifacts.Record{}, withArtifact(fsErr(op, s.abs(pending), err), scope, name, n)
		}
		if _, err := s.root.Lstat(path.Join(vdir, strconv.FormatInt(n, 10))); err == nil {
			// A writer published n and freed its pending name between
			// our listing and our mkdir.
			_ = s.root.Remove(pending)
			continue
		}
		size, err := s.fill(ctx, op, scope, name, pending, base, r)
		if err == nil {
			n, err = s.publish(ctx, op, scope, name, vdir, pending, base, n, opts, md)
		}
		if err != nil {
			_ = s.root.RemoveAll(pending)
			return artifacts.Record{}, err
		}
		e, err := s.find(ctx, op, scope, name, n)
		if err != nil {
			return artifacts.Record{Scope: scope, Name: name, Version: n, MIMEType: opts.MIMEType, Size: size, CreatedAt: s.opts.Now().UnixMilli(), Metadata: artifacts.CloneMetadata(opts.Metadata)}, nil
		}
		return e.rec, nil
	}
	return artifacts.Record{}, artifacts.Errorf(artifacts.CodeConflict, op, nil, "other writers took %d version numbers in a row; save again", maxPutAttempts).With(scope, name, artifacts.NoVersion)
}

// nextNumber returns the highest version or pending number in vdir plus
// one (firstVersion when there is none).
func (s *Store) nextNumber(op, vdir string) (int64, error) {
	entries, err := s.readDir(op, vdir)
	if err != nil {
		return 0, err
	}
	next := int64(firstVersion)
	for _, e := range entries {
		n, ok := versionNumber(e.Name())
		if !ok {
			n, ok = pendingNumber(e.Name())
		}
		if ok && n >= next {
			next = n + 1
		}
	}
	return next, nil
}

// mkdirAll makes rel and its parents inside the root, each a real
// directory.
func (s *Store) mkdirAll(op, rel string) error {
	if err := s.root.MkdirAll(rel, dirMode); err != nil {
		return fsErr(op, s.abs(rel), err)
	}
	if ok, err := s.dirExists(op, rel); err != nil || !ok {
		if err == nil {
			err = artifacts.Errorf(artifacts.CodeIO, op, nil, "%s vanished while it was made", s.abs(rel))
		}
		return err
	}
	return nil
}

// fill writes the payload into pending, fsynced, and returns its size.
func (s *Store) fill(ctx context.Context, op string, scope artifacts.Scope, name, pending, base string, r io.Reader) (int64, error) {
	prel := path.Join(pending, base)
	f, err := s.root.OpenFile(prel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return 0, withArtifact(fsErr(op, s.abs(prel), err), scope, name, artifacts.NoVersion)
	}
	size, err := io.Copy(f, &ctxReader{ctx: ctx, r: io.LimitReader(r, s.opts.MaxArtifactBytes+1)})
	if err == nil && size > s.opts.MaxArtifactBytes {
		err = artifacts.Errorf(artifacts.CodeTooLarge, op, nil, "payload is larger than %d bytes", s.opts.MaxArtifactBytes)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		if cerr := artifacts.CheckContext(ctx, op); cerr != nil {
			// The context ended while the payload was read: a reader
			// that returned the context's own error says no more.
			return 0, withArtifact(cerr, scope, name, artifacts.NoVersion)
		}
		if c := artifacts.CodeOf(err); c == artifacts.CodeTooLarge || c == artifacts.CodeTimeout || c == artifacts.CodeCanceled {
			return 0, withArtifact(err, scope, name, artifacts.NoVersion)
		}
		return 0, withArtifact(artifacts.Errorf(artifacts.CodeIO, op, err, "writing %s", s.abs(prel)), scope, name, artifacts.NoVersion)
	}
	return size, nil
}

// publish writes metadata.json for version n into pending and renames
// pending to versions/n without replacing anything. When a writer that
// reserves nothing (ADK JS writes in place) made versions/n meanwhile,
// metadata.json is written again for the next free number and the rename
// retried, a bounded number of times. It returns the number published.
func (s *Store) publish(ctx context.Context, op string, scope artifacts.Scope, name, vdir, pending, base string, n int64, opts artifacts.PutOptions, md []byte) (int64, error) {
	mrel := path.Join(pending, MetadataFile)
	for range maxPutAttempts {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return n, err
		}
		b, err := s.metadataJSON(name, n, opts.MIMEType, s.abs(path.Join(vdir, strconv.FormatInt(n, 10), base)), md, s.opts.Now())
		if err != nil {
			return n, withArtifact(err, scope, name, n)
		}
		if err := s.root.Remove(mrel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, withArtifact(fsErr(op, s.abs(mrel), err), scope, name, n)
		}
		if err := s.writeFile(mrel, b); err != nil {
			return n, withArtifact(fsErr(op, s.abs(mrel), err), scope, name, n)
		}
		if err := osutil.SyncDir(s.abs(pending)); err != nil {
			return n, withArtifact(fsErr(op, s.abs(pending), err), scope, name, n)
		}
		err = s.renameNoReplace(vdir, path.Base(pending), strconv.FormatInt(n, 10))
		if errors.Is(err, fs.ErrExist) {
			if n, err = s.nextNumber(op, vdir); err != nil {
				return n, withArtifact(err, scope, name, artifacts.NoVersion)
			}
			continue
		}
		if err != nil {
			return n, withArtifact(fsErr(op, s.abs(path.Join(vdir, strconv.FormatInt(n, 10))), err), scope, name, n)
		}
		if err := osutil.SyncDir(s.abs(vdir)); err != nil {
			return n, withArtifact(fsErr(op, s.abs(vdir), err), scope, name, n)
		}
		return n, nil
	}
	return n, artifacts.Errorf(artifacts.CodeConflict, op, nil, "other writers took %d version numbers in a row; save again", maxPutAttempts).With(scope, name, artifacts.NoVersion)
}

// writeFile creates rel with b, fsynced.
func (s *Store) writeFile(rel string, b []byte) error {
	f, err := s.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// metadataJSON is metadata.json as ADK JS writes it (two-space indent, no
// final newline, its key order), with createTime (seconds) in an apps/
// store as ADK Python adds it.
func (s *Store) metadataJSON(name string, n int64, mime, payloadAbs string, md []byte, now time.Time) ([]byte, error) {
	type jsMeta struct {
		FileName       string          `json:"fileName"`
		MIMEType       string          `json:"mimeType"`
		Version        int64           `json:"version"`
		CanonicalURI   string          `json:"canonicalUri"`
		CustomMetadata json.RawMessage `json:"customMetadata,omitempty"`
		CreateTime     *float64        `json:"createTime,omitempty"`
	}
	m := jsMeta{FileName: name, MIMEType: mime, Version: n, CanonicalURI: (&url.URL{Scheme: "file", Path: filepath.ToSlash(payloadAbs)}).String()}
	if !bytes.Equal(md, []byte("{}")) && !bytes.Equal(md, []byte("null")) {
		m.CustomMetadata = md
	}
	if s.variant == VariantApps {
		t := float64(now.UnixMicro()) / 1e6
		m.CreateTime = &t
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, artifacts.Errorf(artifacts.CodeInvalidMetadata, "put", err, "metadata.json does not encode")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonFloats returns a copy of v in which every float is a json.Number
// that keeps its decimal point ("2.0", as ADK Python's json.dumps writes a
// float), so that reading metadata.json back gives a float again, not the
// integer encoding/json would write for a whole float.
func jsonFloats(v any) any {
	switch x := v.(type) {
	case float64:
		return floatNumber(x)
	case float32:
		return floatNumber(float64(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonFloats(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonFloats(e)
		}
		return out
	}
	return v
}

// floatNumber formats f as the shortest JSON number that reads back as
// f, with a decimal point or an exponent.
func floatNumber(f float64) json.Number {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return json.Number(s)
}

// ctxReader stops a copy when its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := artifacts.CheckContext(c.ctx, "put"); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Delete removes the selected published versions. Each version directory
// is first renamed out of sight (versions/.deleting-…), so that a reader
// sees it whole or not at all, then removed; a name left with no version
// directory loses its directory, and so do the empty directories above it,
// up to artifacts/, as ADK's own delete leaves none.
func (s *Store) Delete(ctx context.Context, scope artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	const op = "delete"
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return nil, err
	}
	es, err := s.versions(op, scope, name)
	if err != nil {
		return nil, notFoundFor(err, scope, name)
	}
	var published []int64
	byVersion := map[int64]entry{}
	for _, e := range es {
		if e.state == stPublished {
			published = append(published, e.version)
			byVersion[e.version] = e
		}
	}
	targets, err := resolve(op, sel, published)
	if err != nil {
		return nil, withArtifact(err, scope, name, sel.ErrorVersion())
	}
	var out []artifacts.Record
	for _, v := range targets {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return out, err
		}
		e := byVersion[v]
		if err := s.removeVersion(op, e, ""); err != nil {
			return out, withArtifact(err, scope, name, v)
		}
		out = append(out, e.rec)
	}
	dir, _, _ := s.nameDir(op, scope, name)
	s.pruneEmpty(dir, scope)
	return out, nil
}

// resolve returns the versions sel picks among published (ascending).
func resolve(op string, sel artifacts.Selector, published []int64) ([]int64, error) {
	switch sel.Kind {
	case artifacts.SelectVersion:
		if !slices.Contains(published, sel.Version) {
			return nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
		}
		return []int64{sel.Version}, nil
	case artifacts.SelectLatest:
		if len(published) > 0 {
			return published[len(published)-1:], nil
		}
	case artifacts.SelectAll:
		if len(published) > 0 {
			return published, nil
		}
	default:
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "unknown selector %q", sel.Kind)
	}
	return nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no published version")
}

// removeVersion renames the version directory of e out of sight and
// removes it. With a non-empty wantToken the renamed version is read again
// and must still have that token; when it does not it is renamed back
// and the delete is CodeConflict.
func (s *Store) removeVersion(op string, e entry, wantToken string) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	vdir := path.Dir(e.dir)
	gone := path.Join(vdir, deletingPrefix+strconv.FormatInt(e.version, 10)+"-"+hex.EncodeToString(rnd[:]))
	if err := s.renameNoReplace(vdir, path.Base(e.dir), path.Base(gone)); err != nil {
		return fsErr(op, s.abs(e.dir), err)
	}
	if wantToken != "" {
		again := s.readVersion(op, e.rec.Scope, e.rec.Name, gone, e.base, e.version)
		if again.state != stPublished || again.rec.Token != wantToken {
			if err := s.renameNoReplace(vdir, path.Base(gone), path.Base(e.dir)); err != nil {
				return artifacts.Errorf(artifacts.CodeConflict, op, err, "version %d changed while it was deleted, and could not be put back: it is kept at %s", e.version, s.abs(gone))
			}
			return artifacts.Errorf(artifacts.CodeConflict, op, nil, "version %d changed since it was planned (size or modification time of its files); nothing was deleted", e.version)
		}
	}
	if err := osutil.SyncDir(s.abs(vdir)); err != nil {
		return fsErr(op, s.abs(vdir), err)
	}
	if err := s.root.RemoveAll(gone); err != nil {
		return fsErr(op, s.abs(gone), err)
	}
	return nil
}

// pruneEmpty removes the name directory dir when its versions/ holds
// nothing, then each empty parent up to the scope's artifacts/.
func (s *Store) pruneEmpty(dir string, scope artifacts.Scope) {
	sd, err := s.scopeDir("delete", scope)
	if err != nil {
		return
	}
	s.pruneUp(dir, sd)
}

// pruneUp removes the name directory dir (below the scope's artifacts/
// directory sd) when its versions/ is empty, then each empty parent up
// to sd, which stays.
func (s *Store) pruneUp(dir, sd string) {
	vdir := path.Join(dir, VersionsDir)
	if ok, err := s.hasEntries("delete", vdir); ok || err != nil {
		return
	}
	if s.root.Remove(vdir) != nil {
		return
	}
	for d := dir; d != sd && strings.HasPrefix(d, sd+"/"); d = path.Dir(d) {
		if s.root.Remove(d) != nil { // fails on a non-empty directory
			break
		}
	}
	_ = osutil.SyncDir(s.abs(sd))
}

// DeleteExact deletes version ref.Version only if it is still the one ref
// names: it compares the version's record and Token (size and
// modification time of its payload and metadata.json) with ref, renames
// the version directory out of sight, reads it again there, and puts it
// back (CodeConflict, nothing deleted) when it changed in between.
func (s *Store) DeleteExact(ctx context.Context, scope artifacts.Scope, name string, ref artifacts.VersionRef) (artifacts.Record, error) {
	const op = "delete"
	e, err := s.find(ctx, op, scope, name, ref.Version)
	if err != nil {
		return artifacts.Record{}, err
	}
	if !ref.Matches(e.rec) {
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeConflict, op, nil, "version %d changed since it was read (size or modification time of its files); nothing was deleted", ref.Version).With(scope, name, ref.Version)
	}
	if err := s.removeVersion(op, e, ref.Token); err != nil {
		return artifacts.Record{}, withArtifact(err, scope, name, ref.Version)
	}
	dir, _, _ := s.nameDir(op, scope, name)
	s.pruneEmpty(dir, scope)
	return e.rec, nil
}
