package adkfile

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.BrokenLister = (*Store)(nil)

// brokenOf returns the broken version e (stBroken with a corrupt_artifact
// error, or stIncomplete), bound to its files; ok is false for a version
// that is not broken that way (published, or unreadable: never called
// corrupt).
func (s *Store) brokenOf(op string, e entry) (b artifacts.BrokenVersion, ok bool, err error) {
	var reason string
	switch {
	case e.state == stIncomplete:
		reason = ReasonEmptyVersion
		if has, _ := s.hasEntries(op, e.dir); has {
			reason = ReasonNoMetadata
		}
		reason += "; fs repair removes it once it is older than its grace period"
	case e.state == stBroken && artifacts.ProblemCode(e.err) == artifacts.CodeCorrupt:
		reason = artifacts.ReasonOf(e.err)
	default:
		return b, false, nil
	}
	ref, err := s.brokenRef(op, e.dir, e.version)
	if err != nil {
		return b, false, err
	}
	return artifacts.BrokenVersion{
		Problem: artifacts.Problem{Version: e.version, Path: s.abs(e.dir), Reason: reason, Code: artifacts.CodeCorrupt},
		Ref:     ref,
	}, true, nil
}

// brokenRef binds the version directory dir as it is now: Size and
// Digest are those of its metadata.json (0 and empty when there is none,
// Digest empty too when it is past the size a metadata.json may have),
// and Token lists every entry of the directory with its kind, size and
// modification time. A directory that is gone is CodeNotFound.
func (s *Store) brokenRef(op, dir string, version int64) (artifacts.VersionRef, error) {
	ok, err := s.dirExists(op, dir)
	if err != nil {
		return artifacts.VersionRef{}, err
	}
	if !ok {
		return artifacts.VersionRef{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
	}
	entries, err := s.readDir(op, dir)
	if err != nil {
		return artifacts.VersionRef{}, err
	}
	ref := artifacts.VersionRef{Version: version}
	parts := make([]string, 0, len(entries))
	for _, e := range entries {
		rel := path.Join(dir, e.Name())
		fi, err := s.root.Lstat(rel)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return artifacts.VersionRef{}, readErr(op, s.abs(rel), err)
		}
		parts = append(parts, fmt.Sprintf("%s=%s:%d:%d", strconv.Quote(e.Name()), fi.Mode().Type(), fi.Size(), fi.ModTime().UnixNano()))
		if e.Name() != MetadataFile || !fi.Mode().IsRegular() {
			continue
		}
		ref.Size = fi.Size()
		if fi.Size() > MaxMetadataFileBytes {
			continue
		}
		f, err := s.openRegular(op, rel, fi)
		if err != nil {
			return artifacts.VersionRef{}, err
		}
		h := sha256.New()
		_, err = io.Copy(h, io.LimitReader(f, MaxMetadataFileBytes+1))
		f.Close()
		if err != nil {
			return artifacts.VersionRef{}, readErr(op, s.abs(rel), err)
		}
		ref.Digest = hex.EncodeToString(h.Sum(nil))
	}
	slices.Sort(parts)
	ref.Token = artifacts.BrokenTokenPrefix + strings.Join(parts, ";")
	return ref, nil
}

// DeleteBroken removes the version directory of a broken version (one
// whose metadata.json is missing, does not parse or names another
// version or name, or whose payload is missing) if it is still exactly as
// ref binds it (see brokenRef): it is renamed out of sight, bound again
// there, and put back (CodeConflict, nothing deleted) when it changed in
// between; then removed, and the empty directories above it with it.
func (s *Store) DeleteBroken(ctx context.Context, scope artifacts.Scope, name string, ref artifacts.VersionRef) error {
	const op = "delete"
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return err
	}
	dir, base, err := s.nameDir(op, scope, name)
	if err != nil {
		return notFoundFor(err, scope, name)
	}
	vdir := path.Join(dir, VersionsDir, strconv.FormatInt(ref.Version, 10))
	e := s.readVersion(op, scope, name, vdir, base, ref.Version)
	if e.state == stPublished {
		return artifacts.Errorf(artifacts.CodeConflict, op, nil, "version %d is no longer broken (it was restored since it was planned); nothing was deleted", ref.Version).With(scope, name, ref.Version)
	}
	cur, err := s.brokenRef(op, vdir, ref.Version)
	if err != nil {
		return withArtifact(err, scope, name, ref.Version)
	}
	if cur != ref {
		return artifacts.Errorf(artifacts.CodeConflict, op, nil, "the files of version %d changed since it was planned; nothing was deleted", ref.Version).With(scope, name, ref.Version)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	parent := path.Dir(vdir)
	gone := deletingPrefix + strconv.FormatInt(ref.Version, 10) + "-" + hex.EncodeToString(rnd[:])
	if err := s.renameNoReplace(parent, path.Base(vdir), gone); err != nil {
		return withArtifact(fsErr(op, s.abs(vdir), err), scope, name, ref.Version)
	}
	again, err := s.brokenRef(op, path.Join(parent, gone), ref.Version)
	if err != nil || again != ref {
		if rerr := s.renameNoReplace(parent, gone, path.Base(vdir)); rerr != nil {
			return artifacts.Errorf(artifacts.CodeConflict, op, rerr, "version %d changed while it was deleted, and could not be put back: it is kept at %s", ref.Version, s.abs(path.Join(parent, gone))).With(scope, name, ref.Version)
		}
		return artifacts.Errorf(artifacts.CodeConflict, op, nil, "the files of version %d changed while it was deleted; nothing was deleted", ref.Version).With(scope, name, ref.Version)
	}
	if err := osutil.SyncDir(s.abs(parent)); err != nil {
		return withArtifact(fsErr(op, s.abs(parent), err), scope, name, ref.Version)
	}
	if err := s.root.RemoveAll(path.Join(parent, gone)); err != nil {
		return withArtifact(fsErr(op, s.abs(path.Join(parent, gone)), err), scope, name, ref.Version)
	}
	s.pruneEmpty(dir, scope)
	return nil
}
