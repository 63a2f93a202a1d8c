// Package gcstest starts an in-process Cloud Storage emulator
// (fake-gcs-server) for tests, and a client of it.
package gcstest

import (
	"context"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/option"
)

// Client starts an emulator on 127.0.0.1 holding the given buckets and
// returns a client of it that reads through the JSON API. Both are
// stopped when the test ends.
func Client(t testing.TB, buckets ...string) *storage.Client {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	for _, b := range buckets {
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	c, err := storage.NewClient(context.Background(), option.WithEndpoint(srv.URL()+"/storage/v1/"), option.WithoutAuthentication(), storage.WithJSONReads())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
