package gcsstore_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
)

// TestEmulatorHonoursDoesNotExist proves that the emulator answers HTTP 412
// to a second create of an object with the DoesNotExist precondition, in a
// single-shot upload and in a resumable upload of several chunks, and keeps
// the first object: the suite would prove nothing against an emulator that
// ignored preconditions.
func TestEmulatorHonoursDoesNotExist(t *testing.T) {
	srv := newEmulator(t)
	px := newProxy(t, srv.URL())
	var chunks atomic.Int32
	px.hook = func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		if r.URL.Query().Get("upload_id") != "" {
			chunks.Add(1)
		}
		return false
	}
	c := newClient(t, px.URL)
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef"), (600<<10)/16) // 600 KiB: three 256 KiB chunks
	for _, tc := range []struct {
		what      string
		chunkSize int
		first     []byte
		second    []byte
	}{
		{"single-shot", 0, []byte("first"), []byte("second")},
		{"single-shot, retryable buffer", 1 << 20, []byte("first"), []byte("second")},
		{"resumable", 256 << 10, big, append([]byte("second"), big...)},
	} {
		t.Run(tc.what, func(t *testing.T) {
			o := c.Bucket(testBucket).Object("precondition/" + tc.what).If(storage.Conditions{DoesNotExist: true})
			write := func(b []byte) error {
				w := o.NewWriter(ctx)
				w.ChunkSize = tc.chunkSize
				if _, err := w.Write(b); err != nil {
					w.Close()
					return err
				}
				return w.Close()
			}
			chunks.Store(0)
			if err := write(tc.first); err != nil {
				t.Fatalf("first create: %v", err)
			}
			if tc.chunkSize == 256<<10 && chunks.Load() < 3 {
				t.Fatalf("the resumable create sent %d chunk requests, want at least 3", chunks.Load())
			}
			err := write(tc.second)
			var ge *googleapi.Error
			if !errors.As(err, &ge) || ge.Code != 412 {
				t.Fatalf("second create with DoesNotExist: got %v, want HTTP 412", err)
			}
			r, err := c.Bucket(testBucket).Object("precondition/" + tc.what).NewReader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got bytes.Buffer
			if _, err := got.ReadFrom(r); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), tc.first) {
				t.Fatalf("object holds %d bytes after the refused create, want the first %d", got.Len(), len(tc.first))
			}
		})
	}
}
