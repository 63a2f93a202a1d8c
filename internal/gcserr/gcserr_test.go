package gcserr

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

func TestClassify(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	expired, stop := context.WithTimeout(context.Background(), -1)
	defer stop()
	stalled, stallCancel := context.WithCancelCause(context.Background())
	stallCancel(fmt.Errorf("no progress: %w", context.DeadlineExceeded))
	own := artifacts.Errorf(artifacts.CodeCorrupt, "get", nil, "bad")
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want artifacts.Code
	}{
		{"object missing", context.Background(), storage.ErrObjectNotExist, artifacts.CodeNotFound},
		{"404", context.Background(), &googleapi.Error{Code: 404}, artifacts.CodeNotFound},
		{"403", context.Background(), &googleapi.Error{Code: 403}, artifacts.CodePermission},
		{"412", context.Background(), fmt.Errorf("put: %w", &googleapi.Error{Code: 412}), artifacts.CodeConflict},
		{"503", context.Background(), &googleapi.Error{Code: 503}, artifacts.CodeUnavailable},
		{"400", context.Background(), &googleapi.Error{Code: 400}, artifacts.CodeIO},
		{"refused", context.Background(), syscall.ECONNREFUSED, artifacts.CodeUnavailable},
		{"deadline", expired, errors.New("x"), artifacts.CodeTimeout},
		{"canceled", done, errors.New("x"), artifacts.CodeCanceled},
		{"cancelled with a timeout cause", stalled, context.Canceled, artifacts.CodeTimeout},
		{"other", context.Background(), errors.New("x"), artifacts.CodeIO},
		{"already classified", context.Background(), own, artifacts.CodeCorrupt},
	} {
		if got := Classify(tc.ctx, "op", tc.err, "").Code; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if !IsPrecondition(&googleapi.Error{Code: 412}) || IsPrecondition(&googleapi.Error{Code: 404}) {
		t.Error("IsPrecondition")
	}
	if !IsNotExist(storage.ErrBucketNotExist) || IsNotExist(errors.New("x")) {
		t.Error("IsNotExist")
	}
}
