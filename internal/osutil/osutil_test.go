//go:build linux

package osutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestReadRegularOnly pins what every layout read relies on: a FIFO, a
// symbolic link (even to a readable regular file), a device and a
// directory are refused without being read from, so nothing blocks, and the
// refusal names the path and what it is.
func TestReadRegularOnly(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, kind string
	}{
		{fifo, "a named pipe (FIFO)"},
		{link, "a symbolic link"},
		{"/dev/zero", "a device"},
		{dir, "a directory"},
	} {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			for name, read := range map[string]func(string) error{
				"ReadFileMax": func(p string) error { _, err := ReadFileMax(p, 100); return err },
				"OpenRegular": func(p string) error {
					f, err := OpenRegular(p)
					if err == nil {
						f.Close()
					}
					return err
				},
			} {
				err := read(tc.path)
				var nr *NotRegularError
				if !errors.As(err, &nr) || !errors.Is(err, ErrNotRegular) {
					t.Fatalf("%s: %v, want a *NotRegularError", name, err)
				}
				if want := tc.path + " is " + tc.kind + ", not a regular file"; err.Error() != want {
					t.Errorf("%s: %q, want %q", name, err, want)
				}
			}
		})
	}
	f, err := OpenRegular(target)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := OpenRegular(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestOpenDirOnly: a directory opens; a FIFO, a symbolic link to a
// directory and a regular file in its place are refused without blocking.
func TestOpenDirOnly(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(sub, link)
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	f, err := OpenDir(sub)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for path, kind := range map[string]string{fifo: "a named pipe (FIFO)", link: "a symbolic link", file: "a regular file"} {
		_, err := OpenDir(path)
		var nd *NotDirError
		if !errors.As(err, &nd) || err.Error() != path+" is "+kind+", not a directory" {
			t.Errorf("OpenDir(%s): %v", path, err)
		}
	}
	if _, err := OpenDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

// TestReadSettingsFile: links are followed to a regular file; a FIFO, a
// device and a file past the cap are refused without blocking or reading
// on.
func TestReadSettingsFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte("output: json\n"), 0o600)
	link := filepath.Join(dir, "link.yaml")
	os.Symlink(p, link)
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadSettingsFile(link, 100); err != nil || string(b) != "output: json\n" {
		t.Fatalf("through a link: %q %v", b, err)
	}
	for _, bad := range []string{fifo, "/dev/zero", dir} {
		if _, err := ReadSettingsFile(bad, 100); !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := ReadSettingsFile(p, 5); !errors.Is(err, ErrTooLarge) {
		t.Errorf("past the cap: %v", err)
	}
}
