package gcslock_test

import (
	"context"
	"fmt"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/option"

	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/lock/gcslock"
	"github.com/agentstore/agentstore/internal/lock/locktest"
)

const bucket = "locks"

// newClient starts an in-process fake-gcs-server on 127.0.0.1 with the
// test bucket and returns a client of it.
func newClient(t *testing.T) *storage.Client {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	t.Cleanup(srv.Stop)
	c, err := storage.NewClient(context.Background(), option.WithEndpoint(srv.URL()+"/storage/v1/"), option.WithoutAuthentication(), storage.WithJSONReads())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConformance runs the lock contract's table against the Cloud
// Storage backend on the emulator, one lock object per case.
func TestConformance(t *testing.T) {
	c := newClient(t)
	n := 0
	locktest.Run(t, func(t *testing.T) lock.Backend {
		n++
		return gcslock.New(c, bucket, fmt.Sprintf("case-%d/prefix/%s", n, lock.StoreLockName))
	})
}
