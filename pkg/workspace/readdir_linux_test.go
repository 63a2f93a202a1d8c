package workspace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadEntries: the getdents listing has the names and types that
// os.ReadDir reports, for every kind of entry and for directories larger
// than one getdents buffer.
func TestReadEntries(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, dir string)
	}{
		{"empty", func(*testing.T, string) {}},
		{"kinds", func(t *testing.T, dir string) {
			mustWrite(t, filepath.Join(dir, "file"))
			mustDo(t, os.Mkdir(filepath.Join(dir, "dir"), 0o700))
			mustDo(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
			mustDo(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
			l, err := net.Listen("unix", filepath.Join(dir, "sock"))
			mustDo(t, err)
			t.Cleanup(func() { l.Close() })
			mustWrite(t, filepath.Join(dir, "naïve ünïcode ☃"))
			mustWrite(t, filepath.Join(dir, strings.Repeat("n", 255)))
		}},
		{"over one buffer", func(t *testing.T, dir string) {
			for i := range 3000 { // about 200 KB of records
				mustWrite(t, filepath.Join(dir, fmt.Sprintf("%s-%05d", strings.Repeat("x", 40), i)))
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.make(t, dir)
			want, err := os.ReadDir(dir)
			mustDo(t, err)
			d, err := os.Open(dir)
			mustDo(t, err)
			defer d.Close()
			got, err := readEntries(d)
			mustDo(t, err)
			slices.SortFunc(got, func(a, b typedEntry) int { return strings.Compare(a.name, b.name) })
			if len(got) != len(want) {
				t.Fatalf("%d entries, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].name != want[i].Name() || got[i].typ != want[i].Type() {
					t.Errorf("entry %d: %q %v, want %q %v", i, got[i].name, got[i].typ, want[i].Name(), want[i].Type())
				}
			}
		})
	}
}

// dirent encodes one struct linux_dirent64 record.
func dirent(ino uint64, typ byte, name string, pad int) []byte {
	n := 19 + len(name) + 1 + pad
	b := make([]byte, n)
	binary.NativeEndian.PutUint64(b[0:8], ino)
	binary.NativeEndian.PutUint16(b[16:18], uint16(n))
	b[18] = typ
	copy(b[19:], name)
	return b
}

// TestParseDirents: records are parsed by their length, ".", ".." and
// deleted records are left out, unknown types are marked, and a record
// that does not fit its buffer is an error.
func TestParseDirents(t *testing.T) {
	cat := func(bs ...[]byte) []byte { return slices.Concat(bs...) }
	for _, c := range []struct {
		name string
		buf  []byte
		want string
		err  bool
	}{
		{"kinds", cat(dirent(1, unix.DT_DIR, ".", 4), dirent(2, unix.DT_DIR, "..", 3), dirent(3, unix.DT_REG, "a", 4),
			dirent(4, unix.DT_DIR, "b", 0), dirent(5, unix.DT_LNK, "c", 12), dirent(6, unix.DT_UNKNOWN, "d", 0),
			dirent(7, unix.DT_WHT, "e", 0), dirent(0, unix.DT_REG, "gone", 0), dirent(8, unix.DT_FIFO, "f", 0)),
			"a:---------- b:d--------- c:L--------- d:?---------:unknown e:?---------:unknown f:p---------", false},
		{"empty", nil, "", false},
		{"short record", cat(dirent(3, unix.DT_REG, "a", 0), make([]byte, 10)), "", true},
		{"length past the end", func() []byte {
			b := dirent(3, unix.DT_REG, "abc", 0)
			binary.NativeEndian.PutUint16(b[16:18], uint16(len(b)+8))
			return b
		}(), "", true},
		{"length too small", func() []byte {
			b := dirent(3, unix.DT_REG, "abc", 0)
			binary.NativeEndian.PutUint16(b[16:18], 18)
			return b
		}(), "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ds dirents
			err := ds.parse(c.buf)
			if c.err {
				if err == nil {
					t.Fatalf("parsed %v", ds.entries())
				}
				return
			}
			mustDo(t, err)
			var got []string
			for _, e := range ds.entries() {
				s := e.name + ":" + (e.typ &^ modeUnknown).String()
				if e.typ == modeUnknown {
					s = e.name + ":?---------:unknown"
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != c.want {
				t.Errorf("got  %s\nwant %s", strings.Join(got, " "), c.want)
			}
		})
	}
}

// TestTypeUnknown: entries the directory did not type are typed with an
// fstatat relative to it; one removed meanwhile is left out.
func TestTypeUnknown(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "file"))
	mustDo(t, os.Mkdir(filepath.Join(dir, "dir"), 0o700))
	mustDo(t, os.Symlink("dir", filepath.Join(dir, "link")))
	d, err := os.Open(dir)
	mustDo(t, err)
	defer d.Close()
	typeOf := func(recs []typedEntry) ([]typedEntry, error) {
		var ds dirents
		for _, r := range recs {
			ds.ents = append(ds.ents, direntRec{off: uint32(len(ds.names)), n: uint16(len(r.name)), typ: r.typ})
			ds.names = append(ds.names, r.name...)
		}
		err := ds.typeUnknown(int(d.Fd()))
		return ds.entries(), err
	}
	got, err := typeOf([]typedEntry{{"file", modeUnknown}, {"dir", modeUnknown}, {"gone", modeUnknown}, {"link", modeUnknown}, {"known", fs.ModeDir}})
	mustDo(t, err)
	want := []typedEntry{{"file", 0}, {"dir", fs.ModeDir}, {"link", fs.ModeSymlink}, {"known", fs.ModeDir}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := typeOf([]typedEntry{{"file/x", modeUnknown}}); err == nil {
		t.Error("an entry that cannot be statted: no error")
	}
}

// TestOpenDirAt: a directory named by one component is opened relative
// to the open directory without following a link; anything else is
// refused, so that the caller opens it through the root.
func TestOpenDirAt(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "file"))
	mustDo(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	mustWrite(t, filepath.Join(dir, "sub", "inner"))
	mustDo(t, os.Symlink("sub", filepath.Join(dir, "link")))
	mustDo(t, os.Symlink(t.TempDir(), filepath.Join(dir, "out")))
	top, err := os.Open(dir)
	mustDo(t, err)
	defer top.Close()
	for _, c := range []struct {
		name, want string // want: the listing, "" for a refusal
	}{
		{".", "file link out sub"},
		{"sub", "inner"},
		{"link", ""},
		{"out", ""},
		{"file", ""},
		{"none", ""},
		{"..", ""},
		{"sub/.", ""},
		{"", ""},
	} {
		ents, ok, err := readEntriesAt(top, c.name)
		mustDo(t, err)
		if c.want == "" {
			if ok {
				t.Errorf("%q: opened, listing %v", c.name, ents)
			}
			continue
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.name)
		}
		if !ok || strings.Join(names, " ") != c.want {
			t.Errorf("%q: ok %v, %v, want %s", c.name, ok, names, c.want)
		}
	}
	// The descriptor's offset is its own: listing "." twice lists it all.
	for range 2 {
		if ents, ok, err := readEntriesAt(top, "."); err != nil || !ok || len(ents) != 4 {
			t.Fatalf("listing . again: %d entries, %v, %v", len(ents), ok, err)
		}
	}
}

func mustWrite(t *testing.T, p string) {
	t.Helper()
	mustDo(t, os.WriteFile(p, []byte("x"), 0o600))
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCreateAtRenameAt: the temporary file of a write at the top is
// created only where nothing is (a link included) and renamed over a file
// but not over a directory, failing as an os.Root's calls fail.
func TestCreateAtRenameAt(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "old"))
	mustDo(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	mustDo(t, os.Symlink(filepath.Join(t.TempDir(), "target"), filepath.Join(dir, "link")))
	top, err := os.Open(dir)
	mustDo(t, err)
	defer top.Close()
	root, err := os.OpenRoot(dir)
	mustDo(t, err)
	defer root.Close()
	for _, name := range []string{"old", "link", "sub", "..", "a/b", ""} {
		if f, err := createAt(top, name, 0o600); err == nil {
			f.Close()
			t.Errorf("createAt %q: created", name)
		}
	}
	f, err := createAt(top, "new", 0o640)
	mustDo(t, err)
	if _, err := f.WriteString("data"); err != nil {
		t.Fatal(err)
	}
	mustDo(t, f.Close())
	if fi, err := os.Lstat(filepath.Join(dir, "new")); err != nil || fi.Mode().Perm() != 0o640&^umask(t) {
		t.Errorf("created: %v, %v", fi, err)
	}
	// Over a directory: the error os.Root's Rename returns.
	want := root.Rename("new", "sub")
	got := renameAt(top, "new", "sub")
	if got == nil || want == nil || got.Error() != want.Error() {
		t.Errorf("rename over a directory: %v, want %v", got, want)
	}
	if err := renameAt(top, "missing", "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("rename of a missing file: %v", err)
	}
	for _, name := range []string{"..", "a/b", ""} {
		if err := renameAt(top, "new", name); err == nil {
			t.Errorf("renameAt to %q: renamed", name)
		}
	}
	mustDo(t, renameAt(top, "new", "old"))
	if b, err := os.ReadFile(filepath.Join(dir, "old")); err != nil || string(b) != "data" {
		t.Errorf("renamed over a file: %q, %v", b, err)
	}
}

func umask(t *testing.T) os.FileMode {
	t.Helper()
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

// TestSortNames: entries come out in the order of their names' bytes,
// whatever prefix the names share, for names that are prefixes of one
// another, and for bytes past ASCII.
func TestSortNames(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randomNames := func(prefix string, n int) []string {
		alphabet := []byte("ab.-_0z\x7f\x80\xc3\xa9\xff")
		var out []string
		for range n {
			b := []byte(prefix)
			for range rng.IntN(20) {
				b = append(b, alphabet[rng.IntN(len(alphabet))])
			}
			if len(b) == 0 {
				b = append(b, 'x')
			}
			out = append(out, string(b))
		}
		return slices.Compact(slices.Sorted(slices.Values(out)))
	}
	for _, c := range []struct {
		name  string
		names []string
	}{
		{"one", []string{"only"}},
		{"prefixes of one another", []string{"a", "ab", "abc", "abcdefghij", "abcdefghijk", "abcdefghi", "b"}},
		{"a long shared prefix", []string{"report-2024-01-01.csv", "report-2024-01-02.csv", "report-2024-01-01.csv.bak", "report-2024-01-0", "report-2024-12-31.csv"}},
		{"shared prefix is a whole name", []string{"same", "same.1", "same.10", "same.2"}},
		{"random", randomNames("", 2000)},
		{"random, shared prefix", randomNames("common-prefix-", 2000)},
		{"the listing's shape", func() []string {
			var out []string
			for i := range 1000 {
				out = append(out, fmt.Sprintf("f%04d.txt", i))
			}
			return out
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ds dirents
			shuffled := slices.Clone(c.names)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			for _, n := range shuffled {
				ds.ents = append(ds.ents, direntRec{off: uint32(len(ds.names)), n: uint16(len(n))})
				ds.names = append(ds.names, n...)
			}
			ds.sort()
			var got []string
			for _, e := range ds.ents {
				got = append(got, string(ds.name(e)))
			}
			want := slices.Clone(c.names)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("got  %q\nwant %q", got, want)
			}
		})
	}
}
