package gcsstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"cloud.google.com/go/storage"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.BrokenLister = (*Store)(nil)

// brokenVersion describes version n of the name prefix, whose record
// could not be used (cause), bound to its objects as the listing sc found
// them.
func (s *Store) brokenVersion(ctx context.Context, op, prefix string, sc nameScan, n int64, cause error) (artifacts.BrokenVersion, error) {
	ref, err := s.brokenRef(ctx, op, prefix, sc, n)
	if err != nil {
		return artifacts.BrokenVersion{}, err
	}
	return artifacts.BrokenVersion{
		Problem: artifacts.Problem{Version: n, Path: s.uri(prefix + VersionObject(n, SuffixMeta)), Reason: artifacts.ReasonOf(cause), Code: artifacts.CodeCorrupt},
		Ref:     ref,
	}, nil
}

// uri is the gs:// address of an object of the store's bucket.
func (s *Store) uri(objName string) string { return "gs://" + s.bucket + "/" + objName }

// brokenRef binds version n's objects as the listing sc found them: Size
// and Digest are the record object's (Digest empty when it is past the
// layout's size limit, and not read), and Token holds the generations
// (and sizes) of the record and payload objects ("missing" when there is
// no payload). A record object that is gone is CodeNotFound.
func (s *Store) brokenRef(ctx context.Context, op, prefix string, sc nameScan, n int64) (artifacts.VersionRef, error) {
	m, ok := sc.meta[n]
	if !ok {
		return artifacts.VersionRef{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
	}
	digest := ""
	if m.size <= artifacts.MaxRecordFileBytes {
		objName := prefix + VersionObject(n, SuffixMeta)
		r, err := s.obj(objName).Generation(m.gen).NewReader(ctx)
		if isNotExist(err) {
			return artifacts.VersionRef{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
		}
		if err != nil {
			return artifacts.VersionRef{}, classify(ctx, op, err, "reading record %s", objName)
		}
		h := sha256.New()
		_, err = io.Copy(h, io.LimitReader(r, artifacts.MaxRecordFileBytes+1))
		r.Close()
		if err != nil {
			return artifacts.VersionRef{}, classify(ctx, op, err, "reading record %s", objName)
		}
		digest = hex.EncodeToString(h.Sum(nil))
	}
	data := "missing"
	if d, ok := sc.data[n]; ok {
		data = fmt.Sprintf("%d:%d", d.gen, d.size)
	}
	tok := fmt.Sprintf("%smeta=%d:%d;data=%s", artifacts.BrokenTokenPrefix, m.gen, m.size, data)
	return artifacts.VersionRef{Version: n, Size: m.size, Digest: digest, Token: tok}, nil
}

// payloadProblem checks, from the listing sc alone, that rec's payload
// object exists and has the size the record says; bad is true, with the
// problem, when not.
func (s *Store) payloadProblem(prefix string, sc nameScan, rec artifacts.Record) (b artifacts.BrokenVersion, bad bool) {
	objName := prefix + VersionObject(rec.Version, SuffixData)
	p := artifacts.Problem{Version: rec.Version, Path: s.uri(objName), Code: artifacts.CodeCorrupt}
	d, ok := sc.data[rec.Version]
	switch {
	case !ok:
		p.Reason = fmt.Sprintf("payload %s is missing", objName)
	case d.size != rec.Size:
		p.Reason = fmt.Sprintf("payload has %d bytes, record says %d", d.size, rec.Size)
	default:
		return b, false
	}
	r := rec
	return artifacts.BrokenVersion{Problem: p, Record: &r, Ref: rec.Ref()}, true
}

// DeleteBroken removes the record object and then the payload object of
// a version whose record cannot be used, each conditioned on the
// generation ref binds: when either changed since it was planned nothing
// is deleted (CodeConflict); when the record is gone, CodeNotFound.
// The reservation stays.
func (s *Store) DeleteBroken(ctx context.Context, scope artifacts.Scope, name string, ref artifacts.VersionRef) error {
	const op = "delete"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	if err := s.deleteBroken(cctx, op, scope, name, ref); err != nil {
		return classify(cctx, op, err, "").With(scope, name, ref.Version)
	}
	return nil
}

func (s *Store) deleteBroken(ctx context.Context, op string, scope artifacts.Scope, name string, ref artifacts.VersionRef) error {
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return err
	}
	prefix := s.namePrefix(scope.Hash(), artifacts.NameHash(name))
	sc, err := s.scanTail(ctx, prefix, ref.Version-1)
	if err != nil {
		return err
	}
	cur, err := s.brokenRef(ctx, op, prefix, sc, ref.Version)
	if err != nil {
		return err
	}
	changed := func() error {
		return artifacts.Errorf(artifacts.CodeConflict, op, nil, "the objects of version %d changed since it was planned; nothing was deleted", ref.Version)
	}
	if cur != ref {
		return changed()
	}
	err = s.obj(prefix + VersionObject(ref.Version, SuffixMeta)).If(storage.Conditions{GenerationMatch: sc.meta[ref.Version].gen}).Delete(ctx)
	switch {
	case isNotExist(err):
		return artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
	case isPrecondition(err):
		return changed()
	case err != nil:
		return err
	}
	if d, ok := sc.data[ref.Version]; ok {
		err := s.obj(prefix + VersionObject(ref.Version, SuffixData)).If(storage.Conditions{GenerationMatch: d.gen}).Delete(ctx)
		if err != nil && !isNotExist(err) && !isPrecondition(err) {
			return err
		}
	}
	return nil
}
