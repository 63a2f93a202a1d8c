package adkfile_test

import (
	"context"
	"testing"
)

func contextCanceled(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
