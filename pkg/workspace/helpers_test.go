package workspace

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// newStore returns a filesystem store in a temporary directory.
func newStore(t testing.TB, opts fsstore.Options) *fsstore.Store {
	t.Helper()
	st, err := fsstore.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newManager returns a manager over a new scratch root and st.
func newManager(t testing.TB, st *artifacts.Store, opts Options) *Manager {
	t.Helper()
	if opts.Scratch == "" {
		opts.Scratch = t.TempDir()
	}
	opts.Store = st
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func mustOpen(t testing.TB, m *Manager, scope artifacts.Scope) *Workspace {
	t.Helper()
	w, err := m.Open(context.Background(), scope)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// treeEntry is what a tree comparison looks at.
type treeEntry struct {
	Data string
	Exec bool
	Dir  bool
}

// readTree reads the tree under dir (without the index) from disk.
func readTree(t testing.TB, dir string) map[string]treeEntry {
	t.Helper()
	out := map[string]treeEntry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." || rel == IndexName {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			out[rel+"/"] = treeEntry{Dir: true}
			return nil
		}
		if !d.Type().IsRegular() {
			t.Fatalf("%s: unexpected %v", rel, d.Type())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		out[rel] = treeEntry{Data: string(b), Exec: fi.Mode().Perm()&0o100 != 0}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func keys(m map[string]treeEntry) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	slices.Sort(k)
	return k
}

func wantCode(t testing.TB, err error, code artifacts.Code) {
	t.Helper()
	if got := artifacts.CodeOf(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

func mustWriteFile(t testing.TB, p, data string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

func sessionScope(s string) artifacts.Scope {
	return artifacts.SessionScope("demo-a", "user-42", s)
}
