package artifacts

import (
	"context"
	"fmt"
)

// Latest is the version argument of Get, GetRange and Stat that means the
// latest published version. Every other negative version is invalid; 0 is
// a version number in layouts whose Capabilities.FirstVersion is 0.
const Latest int64 = -1

// VersionRef names one published version as it was when it was read: its
// number and what binds its bytes (size, digest and the driver's Token).
// Plans hold VersionRefs so that executing them deletes exactly the
// versions that were planned, never a later version that took the same
// number or bytes that were overwritten since.
type VersionRef struct {
	Version int64
	Size    int64
	Digest  string
	Token   string
}

// Ref returns the VersionRef of the record.
func (r Record) Ref() VersionRef {
	return VersionRef{Version: r.Version, Size: r.Size, Digest: r.Digest, Token: r.Token}
}

// Matches reports whether rec is the version ref was taken from: same
// number, size, digest and token.
func (ref VersionRef) Matches(rec Record) bool {
	return ref == rec.Ref()
}

// ExactDeleter is implemented by drivers that can delete a version only if
// it is still the one a VersionRef names, in one step where the layout
// allows it (a GCS delete conditioned on the object's generation, say).
// It fails with CodeConflict, deleting nothing, when the version changed,
// and with CodeNotFound when it is gone.
type ExactDeleter interface {
	DeleteExact(ctx context.Context, scope Scope, name string, ref VersionRef) (Record, error)
}

// DeleteExact deletes exactly the versions refs name, and only if each is
// still what its ref says. It first reads every targeted record and
// compares it with its ref: a version that is gone is CodeNotFound and one
// that changed (another size, digest or token) is CodeConflict, and in
// both cases nothing is deleted. It then deletes them in order, each
// through the driver's ExactDeleter when it has one (which checks again,
// atomically where the layout can) or else through Delete of that one
// version, and returns the records deleted so far with the first error.
func (s *Store) DeleteExact(ctx context.Context, scope Scope, name string, refs []VersionRef) ([]Record, error) {
	const op = "delete"
	if err := s.checkArtifact(op, scope, name, Latest); err != nil {
		return nil, refuse(err, scope, name, NoVersion)
	}
	for _, ref := range refs {
		if err := s.checkVersion(op, ref.Version); err != nil {
			return nil, refuse(err, scope, name, ref.Version)
		}
	}
	for _, ref := range refs {
		rec, err := s.drv.Stat(ctx, scope, name, ref.Version)
		if err != nil {
			return nil, err
		}
		if !ref.Matches(rec) {
			return nil, changedError(op, scope, name, ref, rec)
		}
	}
	ed, exact := s.drv.(ExactDeleter)
	var done []Record
	for _, ref := range refs {
		if exact {
			rec, err := ed.DeleteExact(ctx, scope, name, ref)
			if err != nil {
				return done, err
			}
			done = append(done, rec)
			continue
		}
		recs, err := s.drv.Delete(ctx, scope, name, Selector{Kind: SelectVersion, Version: ref.Version})
		done = append(done, recs...)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// changedError is the CodeConflict of a version that no longer is what a
// ref says.
func changedError(op string, scope Scope, name string, ref VersionRef, rec Record) error {
	what := "its token"
	switch {
	case ref.Size != rec.Size:
		what = fmt.Sprintf("its size (%d bytes, planned %d)", rec.Size, ref.Size)
	case ref.Digest != rec.Digest:
		what = "its digest"
	}
	return Errorf(CodeConflict, op, nil, "version %d changed since it was read (%s); nothing was deleted", ref.Version, what).With(scope, name, ref.Version)
}
