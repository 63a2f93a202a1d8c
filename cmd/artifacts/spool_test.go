package artifactscmd

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// zeros is n zero bytes, produced without holding them.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}

// verified returns a verifying Reader of n zero bytes whose record says
// size n and the given digest.
func verified(t *testing.T, n int64, digest string) *artifacts.Reader {
	t.Helper()
	rec := artifacts.Record{Scope: artifacts.AppScope("a"), Name: "big", Version: 1, MIMEType: "application/octet-stream", Size: n, Digest: digest}
	r, err := artifacts.NewReader(rec, io.NopCloser(&zeros{n}), 0, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func zeroDigest(n int64) string {
	h := sha256.New()
	io.Copy(h, &zeros{n})
	return hex.EncodeToString(h.Sum(nil))
}

// TestSpoolMemoryFlat: spooling 64 MiB allocates far less than the
// payload (the copy goes through one buffer), the spool holds it whole,
// and it is removed by cleanup.
func TestSpoolMemoryFlat(t *testing.T) {
	const n = 64 << 20
	t.Setenv("TMPDIR", t.TempDir())
	r := verified(t, n, zeroDigest(n))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f, cleanup, err := spool(r)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Errorf("spooling %d bytes allocated %d bytes", n, got)
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != n {
		t.Fatalf("spool holds %v bytes (%v), want %d", fi.Size(), err, n)
	}
	name := f.Name()
	cleanup()
	if _, err := os.Lstat(name); !os.IsNotExist(err) {
		t.Errorf("spool %s still there after cleanup: %v", name, err)
	}
}

// TestSpoolCorrupt: a payload whose digest does not match is refused with
// corrupt_artifact and leaves nothing in TMPDIR.
func TestSpoolCorrupt(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const n = 3 << 20
	f, _, err := spool(verified(t, n, zeroDigest(n-1)))
	if artifacts.CodeOf(err) != artifacts.CodeCorrupt || f != nil {
		t.Fatalf("spool of a corrupt payload = %v, %v; want corrupt_artifact", f, err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind in TMPDIR: %v", left)
	}
}
