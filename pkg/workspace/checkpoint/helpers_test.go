package checkpoint_test

import (
	"bytes"
	"context"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/gcstest"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
	"github.com/agentstore/agentstore/pkg/artifacts/adkgcs"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/artifacts/shardedfs"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

var scope = artifacts.SessionScope("app", "user-1", "session-1")

// past is the modification time test files get, well before any
// snapshot, so that unchanged files are taken from the parent unread.
var past = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func memStore(t *testing.T, opts memstore.Options) *artifacts.Store {
	t.Helper()
	d, err := memstore.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return artifacts.NewStore(d)
}

// drivers makes a new empty store of every driver cheap to make in a
// test; the Cloud Storage ones on the in-process emulator.
var drivers = []struct {
	name string
	new  func(t *testing.T) *artifacts.Store
}{
	{"memory", func(t *testing.T) *artifacts.Store { return memStore(t, memstore.Options{}) }},
	{"erlang-fs", func(t *testing.T) *artifacts.Store {
		s, err := fsstore.Open(t.TempDir(), fsstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return artifacts.NewStore(s)
	}},
	{"erlang-fs-sharded", func(t *testing.T) *artifacts.Store {
		s, err := shardedfs.Open(t.TempDir(), shardedfs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return artifacts.NewStore(s)
	}},
	{"google-adk-file", func(t *testing.T) *artifacts.Store {
		s, err := adkfile.Open(t.TempDir(), adkfile.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return artifacts.NewStore(s)
	}},
	{"erlang-gcs", func(t *testing.T) *artifacts.Store {
		c := gcstest.Client(t, "bkt")
		s, err := gcsstore.Open(context.Background(), c, "bkt", "", gcsstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return artifacts.NewStore(s)
	}},
	{"google-adk-gcs", func(t *testing.T) *artifacts.Store {
		c := gcstest.Client(t, "bkt")
		s, err := adkgcs.Open(context.Background(), c, "bkt", "", adkgcs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return artifacts.NewStore(s)
	}},
}

func newCP(t *testing.T, st *artifacts.Store, opts checkpoint.Options) *checkpoint.Checkpoints {
	t.Helper()
	opts.Store, opts.Scope = st, scope
	c, err := checkpoint.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// random returns n bytes of incompressible content from seed.
func random(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// write writes files (path: content) under dir with the past time, or
// at the given time.
func write(t *testing.T, dir string, files map[string][]byte, at ...time.Time) {
	t.Helper()
	when := past
	if len(at) > 0 {
		when = at[0]
	}
	for p, b := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, when, when); err != nil {
			t.Fatal(err)
		}
	}
}

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func snap(t *testing.T, c *checkpoint.Checkpoints, dir string) checkpoint.Result {
	t.Helper()
	res, err := c.Snapshot(ctx(t), openRoot(t, dir), checkpoint.SnapshotOptions{})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return res
}

// restore restores m into a new directory and returns it.
func restore(t *testing.T, c *checkpoint.Checkpoints, m *checkpoint.Manifest, paths ...string) (string, checkpoint.RestoreStats) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "r")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := c.Restore(ctx(t), m, openRoot(t, dir), checkpoint.RestoreOptions{Paths: paths})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	return dir, st
}

// tree returns the regular files (content) and directories ("/" suffix,
// nil content) under dir, with the executable bit as a "*" suffix.
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			out[rel+"/"] = nil
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, _ := d.Info()
			if fi.Mode()&0o111 != 0 {
				rel += "*"
			}
			out[rel] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, want, got string) {
	t.Helper()
	a, b := tree(t, want), tree(t, got)
	for p, wb := range a {
		gb, ok := b[p]
		if !ok {
			t.Errorf("%s: missing", p)
		} else if !bytes.Equal(wb, gb) {
			t.Errorf("%s: %d bytes differ from the %d expected", p, len(gb), len(wb))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			t.Errorf("%s: not expected", p)
		}
	}
}

func wantCode(t *testing.T, err error, code artifacts.Code) {
	t.Helper()
	if got := artifacts.CodeOf(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

func zipLimits(entries int, bytes int64) zipsafe.Limits {
	return zipsafe.Limits{MaxEntries: entries, MaxBytes: bytes}
}
