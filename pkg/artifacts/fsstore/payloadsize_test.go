package fsstore_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// A payload is read as it was when it was opened: bytes appended after
// the open are not read (and not taken for the payload's), and a payload
// cut shorter after the open ends early and is reported corrupt, whether
// small (read whole when opened) or large (streamed).
func TestOpenPayloadReadsTheOpenedSize(t *testing.T) {
	ctx := context.Background()
	for _, size := range []int{4096, 3 << 20} {
		for _, change := range []string{"none", "append", "truncate"} {
			t.Run(change+"/"+sizeName(size), func(t *testing.T) {
				root := t.TempDir()
				s, err := fsstore.Open(root, fsstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				scope := artifacts.SessionScope("app", "u", "s")
				data := bytes.Repeat([]byte("payload "), size/8)
				rec, err := s.Put(ctx, scope, "a.bin", bytes.NewReader(data), artifacts.PutOptions{})
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(root, fsstore.LayoutDir, fsstore.ScopesDir, scope.Hash(), fsstore.NamesDir, artifacts.NameHash("a.bin"), fsstore.VersionFile(rec.Version, "data"))
				r, err := s.OpenPayload(ctx, rec)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				switch change {
				case "append":
					f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
					if err != nil {
						t.Fatal(err)
					}
					f.WriteString("appended")
					f.Close()
				case "truncate":
					if err := os.Truncate(path, int64(size/2)); err != nil {
						t.Fatal(err)
					}
				}
				got, err := io.ReadAll(r)
				// A small payload was read whole when it was opened.
				if change == "truncate" && size > artifacts.SmallPayloadBytes {
					if artifacts.CodeOf(err) != artifacts.CodeCorrupt {
						t.Fatalf("payload cut short while streamed: %d bytes, %v; want corrupt_artifact", len(got), err)
					}
					return
				}
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("read %d bytes, %v; want the %d bytes put", len(got), err, len(data))
				}
			})
		}
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return "large"
	}
	return "small"
}
