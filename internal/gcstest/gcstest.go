// Package gcstest starts an in-process Cloud Storage emulator
// (fake-gcs-server) for tests, and a client of it.
package gcstest

import (
	"context"
	"net/http"
	"sync/atomic"
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

// Hanging is an HTTP transport that passes requests on until Hang is set,
// then holds each one until its context ends: a service that stopped
// answering.
type Hanging struct {
	hang atomic.Bool
	next http.RoundTripper
}

// Hang makes every later request wait for its context to end.
func (h *Hanging) Hang() { h.hang.Store(true) }

// RoundTrip passes r on, or holds it once Hang was called.
func (h *Hanging) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.hang.Load() {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return h.next.RoundTrip(r)
}

// HangingClient returns a client of the emulator at base (its URL) whose
// requests go through a Hanging transport, closed when the test ends.
func HangingClient(t testing.TB, base string) (*storage.Client, *Hanging) {
	t.Helper()
	h := &Hanging{next: http.DefaultTransport}
	c, err := storage.NewClient(context.Background(), option.WithEndpoint(base+"/storage/v1/"),
		option.WithoutAuthentication(), storage.WithJSONReads(), option.WithHTTPClient(&http.Client{Transport: h}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, h
}
