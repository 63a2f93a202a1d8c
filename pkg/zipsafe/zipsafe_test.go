package zipsafe

import (
	"archive/zip"
	"bytes"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func openRoot(t testing.TB, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func writeTree(t testing.TB, dir string, opts WriteOptions) ([]byte, WriteStats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Write(&buf, openRoot(t, dir), opts)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes(), st
}

// makeRoundTripTree builds nested dirs, empty files and dirs, non-ASCII
// names, an executable and a reserved top-level index file.
func makeRoundTripTree(t testing.TB) string {
	src := t.TempDir()
	mustWrite(t, filepath.Join(src, "README.md"), "# hi\n", 0o644)
	mustWrite(t, filepath.Join(src, "empty.txt"), "", 0o644)
	mustWrite(t, filepath.Join(src, "bin", "run.sh"), "#!/bin/sh\necho run\n", 0o755)
	mustWrite(t, filepath.Join(src, "a", "b", "c", "deep.txt"), strings.Repeat("deep ", 10000), 0o644)
	mustWrite(t, filepath.Join(src, "héllo", "wörld.txt"), "unicode\n", 0o644)
	mustWrite(t, filepath.Join(src, "日本語.md"), "にほんご\n", 0o600)
	mustWrite(t, filepath.Join(src, "a", "b", "empty-file"), "", 0o644)
	mustWrite(t, filepath.Join(src, "sub", ".index"), "not reserved below the top\n", 0o644)
	mustWrite(t, filepath.Join(src, "bin.dat"), string(textOf(300_000)), 0o644)
	for _, d := range []string{"empty-dir", "a/empty-too"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

func TestRoundTrip(t *testing.T) {
	src := makeRoundTripTree(t)
	mustWrite(t, filepath.Join(src, ".index"), "reserved\n", 0o600)
	data, wst := writeTree(t, src, WriteOptions{Exclude: func(rel string, _ fs.DirEntry) bool { return rel == ".index" }})
	os.Remove(filepath.Join(src, ".index"))
	if wst.Files != 9 || wst.Dirs != 8 {
		t.Errorf("WriteStats = %+v, want 9 files and 8 dirs", wst)
	}

	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.CreatorVersion>>8 != 3 {
			t.Errorf("%s: creator %d, want Unix", f.Name, f.CreatorVersion>>8)
		}
		ascii := strings.IndexFunc(f.Name, func(r rune) bool { return r >= 0x80 }) < 0
		if utf8Flag := f.Flags&0x800 != 0; utf8Flag == ascii {
			t.Errorf("%s: UTF-8 flag %v", f.Name, utf8Flag)
		}
	}
	want := []string{"README.md", "a/", "a/b/", "a/b/c/", "a/b/c/deep.txt", "a/b/empty-file", "a/empty-too/",
		"bin/", "bin/run.sh", "bin.dat", "empty-dir/", "empty.txt", "héllo/", "héllo/wörld.txt", "sub/", "sub/.index", "日本語.md"}
	if !slices.Equal(names, want) {
		t.Errorf("entry order:\n got %q\nwant %q", names, want)
	}

	target := filepath.Join(t.TempDir(), "ws")
	est, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if est.Files != wst.Files || est.Dirs != wst.Dirs || est.Bytes != wst.Bytes {
		t.Errorf("ExtractStats %+v != WriteStats %+v", est, wst)
	}
	if got, want := treeListing(t, target), treeListing(t, src); got != want {
		t.Fatalf("round trip differs:\n got:\n%s\nwant:\n%s", got, want)
	}
	fi, _ := os.Stat(filepath.Join(target, "bin", "run.sh"))
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("run.sh mode %v, want 0700", fi.Mode())
	}
	fi, _ = os.Stat(filepath.Join(target, "README.md"))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("README.md mode %v, want 0600", fi.Mode())
	}
	fi, _ = os.Stat(filepath.Join(target, "a"))
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", fi.Mode())
	}

	// Info-ZIP must accept what we write.
	if unzip, err := exec.LookPath("unzip"); err == nil {
		zp := filepath.Join(t.TempDir(), "rt.zip")
		os.WriteFile(zp, data, 0o644)
		if out, err := exec.Command(unzip, "-tq", zp).CombinedOutput(); err != nil {
			t.Errorf("unzip -t: %v\n%s", err, out)
		}
	}
}

func TestRoundTripLevels(t *testing.T) {
	src := makeRoundTripTree(t)
	want := treeListing(t, src)
	for _, level := range []int{LevelStore, 1, 6, 9, -1, -2} {
		data, _ := writeTree(t, src, WriteOptions{Level: level})
		target := filepath.Join(t.TempDir(), "ws")
		if _, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{}); err != nil {
			t.Fatalf("level %d: %v", level, err)
		}
		if got := treeListing(t, target); got != want {
			t.Fatalf("level %d: tree differs", level)
		}
	}
	if _, err := Write(&bytes.Buffer{}, openRoot(t, src), WriteOptions{Level: 42}); err == nil {
		t.Fatal("level 42 accepted")
	}
}

func TestWriteRefusesSpecialFiles(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"symlink": func(t *testing.T, path string) {
			if err := os.Symlink("/etc/passwd", path); err != nil {
				t.Fatal(err)
			}
		},
		"dangling-symlink": func(t *testing.T, path string) {
			if err := os.Symlink("nowhere", path); err != nil {
				t.Fatal(err)
			}
		},
		"fifo": func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"socket": func(t *testing.T, path string) {
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			mustWrite(t, filepath.Join(src, "a.txt"), "a\n", 0o644)
			os.Mkdir(filepath.Join(src, "d"), 0o755)
			mk(t, filepath.Join(src, "d", "special"))
			_, err := Write(&bytes.Buffer{}, openRoot(t, src), WriteOptions{})
			if CodeOf(err) != CodeUnsupportedFileType {
				t.Fatalf("err = %v, want %s", err, CodeUnsupportedFileType)
			}
			if !strings.Contains(err.Error(), `"d/special"`) {
				t.Fatalf("error %q does not name the path", err)
			}
			// Excluding it makes the tree acceptable.
			_, err = Write(&bytes.Buffer{}, openRoot(t, src), WriteOptions{Exclude: func(rel string, _ fs.DirEntry) bool { return rel == "d/special" }})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestWriteLimits(t *testing.T) {
	src := t.TempDir()
	for _, n := range []string{"a", "b", "c", "d"} {
		mustWrite(t, filepath.Join(src, n), strings.Repeat(n, 1000), 0o644)
	}
	_, err := Write(&bytes.Buffer{}, openRoot(t, src), WriteOptions{Limits: Limits{MaxEntries: 3}})
	if CodeOf(err) != CodeTooManyEntries || !strings.Contains(err.Error(), `"d"`) {
		t.Fatalf("MaxEntries: %v", err)
	}
	_, err = Write(&bytes.Buffer{}, openRoot(t, src), WriteOptions{Limits: Limits{MaxBytes: 2500}})
	if CodeOf(err) != CodeTooLarge || !strings.Contains(err.Error(), `"c"`) {
		t.Fatalf("MaxBytes: %v", err)
	}
	if _, err = Write(&bytes.Buffer{}, openRoot(t, src), WriteOptions{Limits: Limits{MaxBytes: 4000, MaxEntries: 4}}); err != nil {
		t.Fatalf("exact limits: %v", err)
	}
	if _, err = Write(&bytes.Buffer{}, openRoot(t, src), WriteOptions{Limits: Limits{MaxBytes: -1, MaxEntries: -1}}); err != nil {
		t.Fatalf("no limits: %v", err)
	}
	var calls []int
	st, err := Write(&bytes.Buffer{}, openRoot(t, src), WriteOptions{Progress: func(files int, bytes int64) { calls = append(calls, files) }})
	if err != nil || st.Files != 4 || st.Bytes != 4000 || !slices.Equal(calls, []int{1, 2, 3, 4}) {
		t.Fatalf("progress: %v %+v %v", err, st, calls)
	}
}

func TestWriteRefusesUnsafeNames(t *testing.T) {
	for _, name := range []string{"back\\slash", "ctl\x01", "bad\xffutf8"} {
		src := t.TempDir()
		mustWrite(t, filepath.Join(src, name), "x", 0o644)
		_, err := Write(&bytes.Buffer{}, openRoot(t, src), WriteOptions{})
		if CodeOf(err) != CodeUnsafePath {
			t.Errorf("%q: err = %v, want %s", name, err, CodeUnsafePath)
		}
	}
}

func TestSetuidBitsDropped(t *testing.T) {
	target := filepath.Join(t.TempDir(), "ws")
	if _, err := ExtractFile(filepath.Join("testdata", "setuid.zip"), target, ExtractOptions{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{
		"bin":        os.ModeDir | 0o700,
		"bin/run.sh": 0o700,
		"g.txt":      0o600,
		"sticky":     os.ModeDir | 0o700,
		"sticky/f":   0o600,
	}
	for name, mode := range want {
		fi, err := os.Lstat(filepath.Join(target, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), mode)
		}
	}
}

func TestErlangArchive(t *testing.T) {
	target := filepath.Join(t.TempDir(), "ws")
	st, err := ExtractFile(filepath.Join("testdata", "erlang-workspace.zip"), target, ExtractOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := treeListing(t, target)
	want := "d \"notes\"\n"
	if !strings.Contains(got, want) || strings.Count(got, "\n") != 3 {
		t.Fatalf("tree:\n%s", got)
	}
	todo, _ := os.ReadFile(filepath.Join(target, "notes", "todo.md"))
	csv, _ := os.ReadFile(filepath.Join(target, "by_region.csv"))
	if string(todo) != "- ship it\n" {
		t.Errorf("todo.md = %q", todo)
	}
	if string(csv) != "region,total\nEMEA,12\n" {
		t.Errorf("by_region.csv = %q", csv)
	}
	if st.Files != 2 || st.Dirs != 1 || st.Bytes != 31 {
		t.Errorf("stats %+v", st)
	}
}

func TestExtractReplacesTargetAndKeeps(t *testing.T) {
	parent, target := hostileSetup(t, true)
	os.MkdirAll(filepath.Join(target, ".keepdir", "x"), 0o755)
	mustWrite(t, filepath.Join(target, ".keepdir", "x", "y"), "kept deep\n", 0o644)
	os.Symlink("../old.txt", filepath.Join(target, ".keepdir", "link"))
	data := buildZip(
		rawFile("new.txt", []byte("new\n"), 0o100644, true),
		rawFile(".index", []byte("forged index\n"), 0o100644, true),
		rawFile(".keepdir/evil", []byte("forged\n"), 0o100644, true),
	)
	st, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{Keep: []string{".index", ".keepdir", ".absent"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 1 {
		t.Errorf("stats %+v", st)
	}
	if got := listNames(t, parent); !slices.Equal(got, []string{"canary", "ws"}) {
		t.Errorf("parent has %v", got)
	}
	if got := listNames(t, target); !slices.Equal(got, []string{".index", ".keepdir", "new.txt"}) {
		t.Errorf("target has %v", got)
	}
	idx, _ := os.ReadFile(filepath.Join(target, ".index"))
	if string(idx) != "index record\n" {
		t.Errorf(".index = %q", idx)
	}
	deep, _ := os.ReadFile(filepath.Join(target, ".keepdir", "x", "y"))
	l, _ := os.Readlink(filepath.Join(target, ".keepdir", "link"))
	if string(deep) != "kept deep\n" || l != "../old.txt" {
		t.Errorf("kept dir: %q %q", deep, l)
	}

	for _, bad := range []string{"a/b", "..", "", "x\x00"} {
		_, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{Keep: []string{bad}})
		if CodeOf(err) != CodeUnsafePath {
			t.Errorf("Keep %q: %v", bad, err)
		}
	}
}

func TestExtractTargetErrors(t *testing.T) {
	data := buildZip(okEntry)
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "file"), "x", 0o644)
	os.Symlink(dir, filepath.Join(dir, "link"))
	for _, target := range []string{filepath.Join(dir, "file"), filepath.Join(dir, "link"), filepath.Join(dir, "missing", "ws")} {
		_, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{})
		if CodeOf(err) != CodeIO {
			t.Errorf("%s: %v", target, err)
		}
	}
	if got := listNames(t, dir); !slices.Equal(got, []string{"file", "link"}) {
		t.Errorf("dir has %v", got)
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{Code: CodeUnsafePath, Entry: "a\x1bb", Err: os.ErrInvalid}
	if got, want := e.Error(), `zipsafe: unsafe_path: entry "a\x1bb": invalid argument`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if CodeOf(nil) != "" || CodeOf(os.ErrInvalid) != "" || CodeOf(e) != CodeUnsafePath {
		t.Error("CodeOf")
	}
}

// TestWriteTypeChangedAfterListing: entries are typed as the directory
// lists them; one replaced after the listing (here from Exclude, which
// runs just before the entry is opened) by a symbolic link, a FIFO or a
// file of another type fails Write naming the path: it is never followed,
// never blocks and is never archived as what it was listed as. Exclude
// sees the listed type.
func TestWriteTypeChangedAfterListing(t *testing.T) {
	cases := []struct {
		name     string
		entry    string // "f": a regular file; "d": a directory
		wantType fs.FileMode
		swap     func(t *testing.T, p string)
		want     string
	}{
		{"file to symlink", "f", 0, func(t *testing.T, p string) {
			if err := os.Symlink("/etc/passwd", p); err != nil {
				t.Fatal(err)
			}
		}, "replaced by a symbolic link"},
		{"file to fifo", "f", 0, func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "replaced by a FIFO"},
		{"file to directory", "f", 0, func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "replaced by a directory"},
		{"directory to file", "d", fs.ModeDir, func(t *testing.T, p string) {
			mustWrite(t, p, "now a file\n", 0o600)
		}, "directory was replaced by"},
		{"directory to symlink", "d", fs.ModeDir, func(t *testing.T, p string) {
			if err := os.Symlink("/etc", p); err != nil {
				t.Fatal(err)
			}
		}, "directory was replaced by a symbolic link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := t.TempDir()
			mustWrite(t, filepath.Join(src, "a.txt"), "a\n", 0o644)
			p := filepath.Join(src, "x")
			if c.entry == "f" {
				mustWrite(t, p, "listed as a file\n", 0o644)
			} else {
				mustWrite(t, filepath.Join(p, "inner.txt"), "inner\n", 0o644)
			}
			var seen fs.FileMode = 1 // not a type
			_, err := Write(&bytes.Buffer{}, openRoot(t, src), WriteOptions{Exclude: func(rel string, d fs.DirEntry) bool {
				if rel == "x" {
					seen = d.Type()
					if err := os.RemoveAll(p); err != nil {
						t.Fatal(err)
					}
					c.swap(t, p)
				}
				return false
			}})
			if seen != c.wantType {
				t.Errorf("Exclude saw type %v, want %v", seen, c.wantType)
			}
			if CodeOf(err) != CodeUnsupportedFileType || !strings.Contains(err.Error(), `"x"`) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %s naming \"x\" and saying %q", err, CodeUnsupportedFileType, c.want)
			}
		})
	}
}
