// Package gcserr classifies the errors of the Cloud Storage client into
// the closed set of artifacts codes, once for every driver that talks to
// Cloud Storage (the Erlang GCS layout and Google ADK's).
package gcserr

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// HTTPCode returns the HTTP status of a Cloud Storage error, 0 if none.
func HTTPCode(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// IsPrecondition reports whether err is a failed precondition (HTTP 412).
func IsPrecondition(err error) bool { return HTTPCode(err) == 412 }

// IsNotExist reports whether err says an object or bucket does not exist.
func IsNotExist(err error) bool {
	return errors.Is(err, storage.ErrObjectNotExist) || errors.Is(err, storage.ErrBucketNotExist) || HTTPCode(err) == 404
}

// Classify turns an error of the storage client into an *artifacts.Error:
// a done context is a timeout (or cancellation), 404 not found, 401 and 403
// permission denied, 412 a conflict, 408, 429, 5xx and connection failures
// unavailable. *artifacts.Error values pass through.
func Classify(ctx context.Context, op string, err error, format string, args ...any) *artifacts.Error {
	var e *artifacts.Error
	if errors.As(err, &e) {
		return e
	}
	if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(cause, context.DeadlineExceeded) {
		// Cancelled with a timeout as its cause (a watch of progress,
		// internal/stall): the cause says what passed, the client's error
		// only that the context ended.
		err = cause
	}
	code := artifacts.CodeIO
	switch c := HTTPCode(err); {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		code = artifacts.CodeTimeout
	case ctx.Err() != nil, errors.Is(err, context.Canceled):
		code = artifacts.CodeCanceled
	case IsNotExist(err):
		code = artifacts.CodeNotFound
	case c == 401 || c == 403:
		code = artifacts.CodePermission
	case c == 412:
		code = artifacts.CodeConflict
	case c == 408 || c == 429 || c >= 500:
		code = artifacts.CodeUnavailable
	case c != 0:
		code = artifacts.CodeIO
	case isConnErr(err):
		code = artifacts.CodeUnavailable
	}
	return artifacts.Errorf(code, op, err, format, args...)
}

// isConnErr reports whether err is a transport failure: the service could
// not be reached or dropped the connection.
func isConnErr(err error) bool {
	var ne net.Error
	var ue *url.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &oe), errors.As(err, &ue), errors.As(err, &ne):
		return true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "connection reset")
}
