package artifacts

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Code classifies an error into a small, closed set of stable words. Callers
// switch on the code (see CodeOf); the command line prints it in its JSON
// error object and derives the exit status from it.
type Code string

// The stable error codes. Their text never changes.
const (
	// CodeUnknown is an error this package did not classify.
	CodeUnknown Code = "unknown"
	// CodeNotFound means the scope, name or version has no published version.
	CodeNotFound Code = "not_found"
	// CodeInvalidScope means a scope part broke a validation rule.
	CodeInvalidScope Code = "invalid_scope"
	// CodeInvalidName means an artifact name broke a validation rule.
	CodeInvalidName Code = "invalid_name"
	// CodeInvalidMIMEType means a MIME type broke a validation rule.
	CodeInvalidMIMEType Code = "invalid_mime_type"
	// CodeInvalidMetadata means custom metadata broke a validation rule.
	CodeInvalidMetadata Code = "invalid_metadata"
	// CodeInvalidArgument means another argument (page limit, cursor,
	// version, range, deadline) was out of range.
	CodeInvalidArgument Code = "invalid_argument"
	// CodeTooLarge means a payload exceeded the store's max artifact bytes.
	CodeTooLarge Code = "artifact_too_large"
	// CodeCorrupt means a record or payload failed verification.
	CodeCorrupt Code = "corrupt_artifact"
	// CodeTimeout means the call's deadline passed.
	CodeTimeout Code = "timeout"
	// CodeCanceled means the call's context was canceled.
	CodeCanceled Code = "canceled"
	// CodeScopeCapacity means the store has no free scope slot left.
	CodeScopeCapacity Code = "scope_capacity"
	// CodeNameCapacity means the scope has no free name slot left.
	CodeNameCapacity Code = "name_capacity"
	// CodeVersionCapacity means the name has used all its reservations.
	CodeVersionCapacity Code = "version_capacity"
	// CodeQuotaExceeded means a byte or count quota would be exceeded.
	CodeQuotaExceeded Code = "quota_exceeded"
	// CodeNotPersisted means a change was applied where it was asked (a
	// workspace file was written) but the snapshot that stores it durably
	// failed: the change is kept locally and a later snapshot retries. It
	// is neither a refusal (nothing was changed) nor a success (nothing is
	// durable yet).
	CodeNotPersisted Code = "not_persisted"
	// CodeConflict means concurrent writers kept taking the version this
	// call tried to reserve, past the retry bound.
	CodeConflict Code = "conflict"
	// CodeUnsafeStore means the store's root or a directory below it is not
	// a real directory (a symbolic link, say).
	CodeUnsafeStore Code = "unsafe_store"
	// CodePermission means the operating system or service refused access.
	CodePermission Code = "permission_denied"
	// CodeUnavailable means the backing service could not be reached or
	// answered with a server error.
	CodeUnavailable Code = "unavailable"
	// CodeIO means another input/output failure.
	CodeIO Code = "io_error"
	// CodeUnsupported means this store cannot do what was asked: its
	// layout has no such scope kind, or its driver lacks the ability
	// (walking the store, listing scopes, repair). Asking again will not
	// help; another store might.
	CodeUnsupported Code = "unsupported"
	// CodeUnknownLayout means a location holds something, but no store of a
	// layout this build knows (or not of the layout asked for).
	CodeUnknownLayout Code = "unknown_layout"
	// CodeForeign classifies a Problem, never an error a call returns: an
	// object or file inside the store's namespace that does not parse as
	// part of its layout (a non-numeric version segment, too few segments,
	// an ambiguous id). It is reported by name and never guessed at.
	CodeForeign Code = "foreign"
)

// Error is the error type every Store returns. It carries a stable Code and
// the operation and artifact it concerns; Err is the underlying cause.
type Error struct {
	Code    Code
	Op      string // e.g. "put", "get", "list names"
	Scope   *Scope // nil when not known
	Name    string // empty when not known
	Version int64  // NoVersion when the error concerns no one version
	Msg     string // human detail
	Err     error  // underlying cause, may be nil
	// Remaining is the allowance left, for CodeQuotaExceeded; -1 when it does
	// not apply.
	Remaining int64
}

// Error formats the error as "artifacts: OP SCOPE NAME vN: MSG: CAUSE".
func (e *Error) Error() string {
	s := "artifacts: " + e.Op
	if e.Scope != nil {
		s += " " + e.Scope.String()
	}
	if e.Name != "" {
		s += fmt.Sprintf(" name %q", e.Name)
	}
	if e.Version >= 0 {
		s += fmt.Sprintf(" v%d", e.Version)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, &Error{Code: CodeNotFound}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Op == "" && t.Err == nil
}

// Errorf builds an *Error. It is exported for adapters living in other
// packages (the GCS adapter, test doubles) so that every adapter reports
// errors the same way.
func Errorf(code Code, op string, cause error, format string, args ...any) *Error {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &Error{Code: code, Op: op, Version: NoVersion, Msg: msg, Err: cause, Remaining: -1}
}

// NoVersion is the Version of an Error that concerns no one version, and
// the version to give With then. 0 is a version number in layouts that
// number from 0 (Capabilities.FirstVersion), so it cannot mean "none".
const NoVersion int64 = -1

// With returns a copy of e that names the artifact it concerns: its
// scope, its name unless name is empty, and its version unless version is
// negative (NoVersion, or Latest for a read of the latest version).
func (e *Error) With(scope Scope, name string, version int64) *Error {
	c := *e
	c.Scope = &scope
	if name != "" {
		c.Name = name
	}
	if version >= 0 {
		c.Version = version
	}
	return &c
}

// CodeOf returns the Code of the first *Error in err's chain. Context errors
// map to CodeTimeout and CodeCanceled, and common operating-system errors to
// CodeNotFound, CodePermission and CodeIO. A nil error has the empty code.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var c interface{ ErrorCode() string }
	if errors.As(err, &c) {
		return Code(c.ErrorCode())
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	case errors.Is(err, os.ErrNotExist):
		return CodeNotFound
	case errors.Is(err, os.ErrPermission):
		return CodePermission
	}
	return CodeUnknown
}

// IsNotFound reports whether err has CodeNotFound.
func IsNotFound(err error) bool { return CodeOf(err) == CodeNotFound }

// ctxErr converts a done context into an *Error with CodeTimeout or
// CodeCanceled; it returns nil while ctx is live.
func ctxErr(ctx context.Context, op string) *Error {
	switch err := ctx.Err(); {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		return Errorf(CodeTimeout, op, err, "deadline passed")
	case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		// Cancelled with a timeout as its cause (a watch of progress,
		// internal/stall): say what passed.
		return Errorf(CodeTimeout, op, context.Cause(ctx), "timed out")
	default:
		return Errorf(CodeCanceled, op, err, "canceled")
	}
}

// CheckContext returns an *Error with CodeTimeout or CodeCanceled when ctx
// is done, and nil otherwise. Adapters call it before each publication step.
func CheckContext(ctx context.Context, op string) error {
	if e := ctxErr(ctx, op); e != nil {
		return e
	}
	return nil
}
