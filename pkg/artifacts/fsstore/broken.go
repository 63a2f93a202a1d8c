package fsstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.BrokenLister = (*Store)(nil)

// brokenVersion describes version n of the name directory dir, whose
// record could not be used (cause), bound to its files.
func brokenVersion(dir string, n int64, cause error) (artifacts.BrokenVersion, error) {
	ref, err := brokenRef(dir, n)
	if err != nil {
		return artifacts.BrokenVersion{}, err
	}
	return artifacts.BrokenVersion{
		Problem: artifacts.Problem{Version: n, Path: filepath.Join(dir, VersionFile(n, "meta")), Reason: artifacts.ReasonOf(cause), Code: artifacts.CodeCorrupt},
		Ref:     ref,
	}, nil
}

// brokenRef binds version n's files as they are now: Size and Digest are
// the record file's (Digest empty when it is past the layout's size
// limit, and not read), and Token holds the sizes and modification times
// of the record and the payload ("missing" when there is none).
func brokenRef(dir string, n int64) (artifacts.VersionRef, error) {
	meta := filepath.Join(dir, VersionFile(n, "meta"))
	fi, err := os.Lstat(meta)
	if errors.Is(err, fs.ErrNotExist) {
		return artifacts.VersionRef{}, artifacts.Errorf(artifacts.CodeNotFound, "list versions", nil, "no such version")
	}
	if err != nil {
		return artifacts.VersionRef{}, err
	}
	digest := ""
	b, err := readSmall(meta)
	switch {
	case err == nil:
		sum := sha256.Sum256(b)
		digest = hex.EncodeToString(sum[:])
	case !errors.Is(err, errTooBig):
		return artifacts.VersionRef{}, err
	}
	data := "missing"
	if di, err := os.Lstat(filepath.Join(dir, VersionFile(n, "data"))); err == nil {
		data = fmt.Sprintf("%d:%d", di.Size(), di.ModTime().UnixNano())
	} else if !errors.Is(err, fs.ErrNotExist) {
		return artifacts.VersionRef{}, err
	}
	tok := fmt.Sprintf("%smeta=%d:%d;data=%s", artifacts.BrokenTokenPrefix, fi.Size(), fi.ModTime().UnixNano(), data)
	return artifacts.VersionRef{Version: n, Size: fi.Size(), Digest: digest, Token: tok}, nil
}

// checkPayloadSize checks, by a stat only, that rec's payload exists and
// has the size the record says; bad is true, with the problem, when not.
func checkPayloadSize(dir string, rec artifacts.Record) (b artifacts.BrokenVersion, bad bool, err error) {
	path := filepath.Join(dir, VersionFile(rec.Version, "data"))
	fi, err := os.Lstat(path)
	p := artifacts.Problem{Version: rec.Version, Path: path, Code: artifacts.CodeCorrupt}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.Reason = "payload is missing"
	case err != nil:
		return b, false, err
	case !fi.Mode().IsRegular():
		p.Reason, p.Code = "payload is not a regular file (it was not read)", artifacts.CodeUnsafeStore
	case fi.Size() != rec.Size:
		p.Reason = fmt.Sprintf("payload has %d bytes, record says %d", fi.Size(), rec.Size)
	default:
		return b, false, nil
	}
	r := rec
	return artifacts.BrokenVersion{Problem: p, Record: &r, Ref: rec.Ref()}, true, nil
}

// DeleteBroken removes the record and then the payload of a version
// whose record cannot be read, if both files are still exactly as ref
// binds them (see brokenRef); the reservation stays.
func (s *Store) DeleteBroken(ctx context.Context, scope artifacts.Scope, name string, ref artifacts.VersionRef) error {
	const op = "delete"
	wrap := func(err error) error { return ioErr(op, err).With(scope, name, ref.Version) }
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return wrap(err)
	}
	dir, err := s.nameDir(op, scope, name)
	if err != nil {
		return wrap(err)
	}
	cur, err := brokenRef(dir, ref.Version)
	if err != nil {
		return wrap(err)
	}
	if cur != ref {
		return artifacts.Errorf(artifacts.CodeConflict, op, nil, "the files of version %d changed since it was planned; nothing was deleted", ref.Version).With(scope, name, ref.Version)
	}
	if err := os.Remove(filepath.Join(dir, VersionFile(ref.Version, "meta"))); err != nil {
		return wrap(err)
	}
	if err := osutil.SyncDir(dir); err != nil {
		return wrap(err)
	}
	if err := os.Remove(filepath.Join(dir, VersionFile(ref.Version, "data"))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return wrap(err)
	}
	if err := osutil.SyncDir(dir); err != nil {
		return wrap(err)
	}
	return nil
}
