//go:build linux

package osutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFileMax(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 3000)), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFileMax(p, 3000)
	if err != nil || len(b) != 3000 {
		t.Fatalf("at the limit: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFileMax(p, 2999); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("past the limit: %v", err)
	}
	if _, err := ReadFileMax(filepath.Join(dir, "missing"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	if b, err := ReadFileMax(empty, 10); err != nil || len(b) != 0 {
		t.Fatalf("empty file: %q %v", b, err)
	}
}

// TestLinksCountSubdirectories pins what the store's slot fast path
// relies on: a directory's link count is 2 plus its subdirectories, and
// files do not count.
func TestLinksCountSubdirectories(t *testing.T) {
	dir := t.TempDir()
	for i, name := range []string{"a", "b", "c"} {
		fi, _ := os.Lstat(dir)
		if n, ok := Links(fi); !ok || int(n) != 2+i {
			t.Fatalf("before %s: links %d %v, want %d", name, n, ok, 2+i)
		}
		os.Mkdir(filepath.Join(dir, name), 0o700)
		os.WriteFile(filepath.Join(dir, name+".file"), nil, 0o600)
	}
}

// TestDirectoryLocks pins what sweeps and confined calls rely on: shared
// locks coexist, an exclusive one is refused while any is held, and closing
// the file releases it.
func TestDirectoryLocks(t *testing.T) {
	dir := t.TempDir()
	open := func() *os.File {
		f, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b, c := open(), open(), open()
	defer c.Close()
	if err := LockShared(a); err != nil {
		t.Fatal(err)
	}
	if err := LockShared(b); err != nil {
		t.Fatal(err)
	}
	if held, err := TryLockExclusive(c); err != nil || held {
		t.Fatalf("exclusive lock while shared ones are held: %v %v", held, err)
	}
	a.Close()
	b.Close()
	if held, err := TryLockExclusive(c); err != nil || !held {
		t.Fatalf("exclusive lock after release: %v %v", held, err)
	}
	d := open()
	defer d.Close()
	if held, _ := TryLockExclusive(d); held {
		t.Fatal("two exclusive locks")
	}
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("SyncDir of a missing directory: %v", err)
	}
}
