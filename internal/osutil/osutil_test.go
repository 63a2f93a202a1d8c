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

// readAt reads path with ReadFileMaxAt through its directory.
func readAt(t *testing.T, path string, max int) ([]byte, error) {
	t.Helper()
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	return ReadFileMaxAt(d, filepath.Base(path), max)
}

func TestReadFileMax(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte(strings.Repeat("x", 3000)), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	read := map[string]func(string, int) ([]byte, error){
		"ReadFileMax":   ReadFileMax,
		"ReadFileMaxAt": func(p string, max int) ([]byte, error) { return readAt(t, p, max) },
	}
	for name, read := range read {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				path  string
				limit int
				n     int
				err   error
			}{
				{p, 3000, 3000, nil},
				{p, 1 << 20, 3000, nil},
				{p, 2999, 0, ErrTooLarge},
				{p, 0, 0, ErrTooLarge},
				{empty, 10, 0, nil},
				{empty, 0, 0, nil},
				{filepath.Join(dir, "missing"), 10, 0, fs.ErrNotExist},
			} {
				b, err := read(tc.path, tc.limit)
				if tc.err != nil {
					if !errors.Is(err, tc.err) {
						t.Errorf("%s, limit %d: %v, want %v", filepath.Base(tc.path), tc.limit, err, tc.err)
					}
					continue
				}
				if err != nil || len(b) != tc.n || strings.Trim(string(b), "x") != "" {
					t.Errorf("%s, limit %d: %d bytes, %v; want %d", filepath.Base(tc.path), tc.limit, len(b), err, tc.n)
				}
			}
		})
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
				"ReadFileMax":   func(p string) error { _, err := ReadFileMax(p, 100); return err },
				"ReadFileMaxAt": func(p string) error { _, err := readAt(t, p, 100); return err },
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
