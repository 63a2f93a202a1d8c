package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.ExactDeleter = (*Store)(nil)

// genTokenPrefix starts the Token of a published version's record.
const genTokenPrefix = "gen:"

// versionToken binds a version to the generations of its record object
// (meta) and payload object (data, 0 when there is none): a payload put
// back with the very same bytes is a new generation, so a plan made
// before no longer matches.
func versionToken(meta, data int64) string {
	return fmt.Sprintf("%smeta=%d;data=%d", genTokenPrefix, meta, data)
}

// parseVersionToken returns the generations a versionToken names.
func parseVersionToken(tok string) (meta, data int64, ok bool) {
	m, d, found := strings.Cut(strings.TrimPrefix(tok, genTokenPrefix), ";")
	if !found || !strings.HasPrefix(tok, genTokenPrefix) || !strings.HasPrefix(m, "meta=") || !strings.HasPrefix(d, "data=") {
		return 0, 0, false
	}
	meta, err1 := strconv.ParseInt(strings.TrimPrefix(m, "meta="), 10, 64)
	data, err2 := strconv.ParseInt(strings.TrimPrefix(d, "data="), 10, 64)
	if err1 != nil || err2 != nil || meta <= 0 || data < 0 {
		return 0, 0, false
	}
	return meta, data, true
}

// DeleteExact deletes a version only while its record and payload objects
// are the generations ref's Token names: the record object is deleted on
// its generation (ifGenerationMatch), then the payload on its own. When
// the record changed or went, nothing is deleted (CodeConflict,
// CodeNotFound). When the payload was rewritten (or put back where it was
// missing) after the record went, the record is put back, so the version
// stays as it was, and the error (CodeConflict) says so; when that fails
// too, the error names the record object to restore. The reservation
// stays.
func (s *Store) DeleteExact(ctx context.Context, scope artifacts.Scope, name string, ref artifacts.VersionRef) (artifacts.Record, error) {
	const op = "delete"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	rec, err := s.deleteExact(cctx, op, scope, name, ref)
	if err != nil {
		return artifacts.Record{}, classify(cctx, op, err, "").With(scope, name, ref.Version)
	}
	return rec, nil
}

func (s *Store) deleteExact(ctx context.Context, op string, scope artifacts.Scope, name string, ref artifacts.VersionRef) (artifacts.Record, error) {
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return artifacts.Record{}, err
	}
	metaGen, dataGen, ok := parseVersionToken(ref.Token)
	if !ok {
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "token %q names no object generations", ref.Token)
	}
	prefix := s.namePrefix(scope.Hash(), artifacts.NameHash(name))
	metaName := prefix + VersionObject(ref.Version, SuffixMeta)
	dataName := prefix + VersionObject(ref.Version, SuffixData)
	changed := func(what string) error {
		return artifacts.Errorf(artifacts.CodeConflict, op, nil, "the %s of version %d changed since it was planned; nothing was deleted", what, ref.Version)
	}
	// The record's bytes, kept to put it back if the payload turns out
	// rewritten after the record went.
	raw, err := s.readRaw(ctx, op, metaName, metaGen)
	if artifacts.IsNotFound(err) {
		if _, aerr := s.obj(metaName).Attrs(ctx); aerr == nil {
			return artifacts.Record{}, changed("record object")
		}
		return artifacts.Record{}, err
	}
	if err != nil {
		return artifacts.Record{}, err
	}
	rec, err := artifacts.DecodeRecord(raw)
	if err == nil {
		err = artifacts.CheckRecord(rec, scope, name, ref.Version)
	}
	if err != nil {
		return artifacts.Record{}, err
	}
	rec.Token = ref.Token
	if !ref.Matches(rec) {
		return artifacts.Record{}, changed("record")
	}
	switch err := s.deleteGen(ctx, metaName, metaGen); {
	case isNotExist(err):
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "no such version")
	case rewritten(err):
		return artifacts.Record{}, changed("record object")
	case err != nil:
		return artifacts.Record{}, err
	}
	err = nil
	if dataGen > 0 {
		err = s.deleteGen(ctx, dataName, dataGen)
	} else if _, aerr := s.obj(dataName).Attrs(ctx); isNotExist(aerr) {
		return rec, nil // still no payload: the broken version is gone
	}
	if !rewritten(err) {
		// Deleted; after another failure the version is unpublished all
		// the same, and its payload an orphan that fs repair removes.
		return rec, nil
	}
	// The payload was rewritten (or put back) since the plan: put the
	// record back so the version stays as it is.
	if _, perr := s.createSmall(ctx, metaName, raw, "application/octet-stream", newToken()); perr != nil {
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeConflict, op, nil,
			"the payload of version %d was rewritten since it was planned, after its record %s was deleted; putting the record back failed (%v): restore it from the version's plan or a snapshot", ref.Version, s.uri(metaName), perr)
	}
	return artifacts.Record{}, artifacts.Errorf(artifacts.CodeConflict, op, nil,
		"the payload of version %d was rewritten since it was planned; its record, already deleted, was put back, so the version is kept as it is; nothing was deleted", ref.Version)
}

// deleteGen deletes generation gen of objName, only while it is the
// object's live generation: an error rewritten reports when the object
// now holds another generation, a not-found when it is gone.
// It names the generation and conditions on it both, since a service (the
// emulator) may honour only one of the two.
func (s *Store) deleteGen(ctx context.Context, objName string, gen int64) error {
	err := s.obj(objName).Generation(gen).If(storage.Conditions{GenerationMatch: gen}).Delete(ctx)
	if isNotExist(err) {
		if _, aerr := s.obj(objName).Attrs(ctx); aerr == nil {
			return errGenerationChanged
		}
	}
	return err
}

// errGenerationChanged is deleteGen's error for an object rewritten since
// the generation it was asked to delete.
var errGenerationChanged = errors.New("object rewritten since the generation named")

// rewritten reports whether deleteGen failed because the object holds
// another generation.
func rewritten(err error) bool { return isPrecondition(err) || errors.Is(err, errGenerationChanged) }
