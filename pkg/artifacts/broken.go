package artifacts

import (
	"context"
	"strconv"
	"strings"
)

// BrokenVersion is a published version found broken by a listing.
type BrokenVersion struct {
	// Problem says what is wrong (Version, Path, Reason, Code).
	Problem Problem
	// Record is the version's record when it decodes and belongs (the
	// payload is what is wrong), nil when it does not.
	Record *Record
	// Ref binds the version as it was found, for DeleteBroken: when the
	// record does not decode, Size and Digest are those of the record
	// file and Token (prefixed BrokenTokenPrefix) binds the files' sizes
	// and modification times.
	Ref VersionRef
}

// BrokenTokenPrefix starts the Token of a VersionRef that binds a broken
// version's files rather than its record.
const BrokenTokenPrefix = "broken:"

// IsBrokenRef reports whether ref binds a broken version's files (see
// BrokenVersion.Ref).
func IsBrokenRef(ref VersionRef) bool { return strings.HasPrefix(ref.Token, BrokenTokenPrefix) }

// BrokenLister is implemented by drivers that can list a name's broken
// versions beside the healthy ones (ListOptions.IncludeBroken) and delete
// a broken version whose record cannot be read, bound to its files.
type BrokenLister interface {
	// DeleteBroken removes the files of the broken version ref names if
	// they are still exactly as ref binds them (CodeConflict, nothing
	// removed, otherwise; CodeNotFound when they are gone): the record
	// first, then the payload.
	DeleteBroken(ctx context.Context, scope Scope, name string, ref VersionRef) error
}

// CanListBroken reports whether ListVersions honours
// ListOptions.IncludeBroken and DeleteBroken is supported.
func (s *Store) CanListBroken() bool {
	_, ok := s.drv.(BrokenLister)
	return ok
}

// BrokenVersionAt returns the broken version number v of name, as a
// listing with IncludeBroken finds it; CodeNotFound when v is not broken
// (or does not exist), CodeUnsupported when the driver cannot list broken
// versions.
func (s *Store) BrokenVersionAt(ctx context.Context, scope Scope, name string, v int64) (BrokenVersion, error) {
	const op = "list versions"
	if !s.CanListBroken() {
		return BrokenVersion{}, s.unsupported(op, "list broken versions")
	}
	if err := s.checkArtifact(op, scope, name, v); err != nil {
		return BrokenVersion{}, refuse(err, scope, name, v)
	}
	cursor := ""
	if v > 0 {
		cursor = strconv.FormatInt(v-1, 10)
	}
	page, err := s.ListVersions(ctx, scope, name, ListOptions{Limit: 1, Cursor: cursor, IncludeBroken: true})
	if err != nil {
		return BrokenVersion{}, err
	}
	for _, b := range page.Broken {
		if b.Problem.Version == v {
			return b, nil
		}
	}
	return BrokenVersion{}, Errorf(CodeNotFound, op, nil, "version %d is not broken", v).With(scope, name, v)
}

// DeleteBroken deletes the broken version ref names (see BrokenLister),
// returning CodeUnsupported when the driver cannot.
func (s *Store) DeleteBroken(ctx context.Context, scope Scope, name string, ref VersionRef) error {
	const op = "delete"
	b, ok := s.drv.(BrokenLister)
	if !ok {
		return s.unsupported(op, "delete broken versions")
	}
	if err := s.checkArtifact(op, scope, name, ref.Version); err != nil {
		return refuse(err, scope, name, ref.Version)
	}
	if !IsBrokenRef(ref) {
		return Errorf(CodeInvalidArgument, op, nil, "version %d is not bound as a broken version", ref.Version).With(scope, name, ref.Version)
	}
	return b.DeleteBroken(ctx, scope, name, ref)
}
