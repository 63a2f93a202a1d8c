//go:build linux

package zipsafe

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
)

// madeArchive holds files at several depths, an explicit empty directory,
// directories only implied by their files, an executable, an empty file,
// a kept name and entries large enough for several workers.
func madeArchive() []byte {
	entries := []rawEntry{
		rawDir("empty/"),
		rawFile(".index", []byte("forged index\n"), 0o100644, false),
		rawFile("a", []byte("top\n"), 0o100644, false),
		rawFile("a-b/c.txt", textOf(3000), 0o100644, true),
		rawFile("d/e/f/g.txt", textOf(100), 0o100644, true),
		rawFile("d/run.sh", []byte("#!/bin/sh\n"), 0o100755, false),
		rawFile("d/zero", nil, 0o100644, false),
	}
	for i := range 16 {
		entries = append(entries, rawFile(fmt.Sprintf("big/%02d.txt", i), textOf(70_000+i), 0o100644, true))
	}
	return buildZip(entries...)
}

// Made reports every file and directory of the new tree once, with the
// information Lstat gives for it after the swap (inode, size, mode, times
// to the nanosecond), and nothing for the kept names; the same whether
// one worker or several extracted the files, and with set-group-ID
// directories (the bit new directories inherit).
func TestExtractMadeMatchesTree(t *testing.T) {
	data := madeArchive()
	cases := []struct {
		name     string
		parallel bool
		setgid   bool
		old      bool
	}{
		{"one worker, new target", false, false, false},
		{"one worker, over an old target", false, false, true},
		{"parallel, over an old target", true, false, true},
		{"one worker, setgid parent", false, true, false},
		{"parallel, setgid parent", true, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.parallel {
				forceParallel(t)
			}
			parent := t.TempDir()
			if c.setgid {
				if err := os.Chmod(parent, 0o755|fs.ModeSetgid); err != nil {
					t.Fatal(err)
				}
			}
			target := populateTarget(t, parent, c.old)
			var mu sync.Mutex
			made := map[string]fs.FileInfo{}
			var dup []string
			st, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{
				Keep: []string{".index"},
				Made: func(name string, fi fs.FileInfo) {
					mu.Lock()
					defer mu.Unlock()
					if _, ok := made[name]; ok {
						dup = append(dup, name)
					}
					made[name] = fi
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(dup) > 0 {
				t.Fatalf("reported more than once: %q", dup)
			}
			var want []string
			err = filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(target, p)
				if rel == "." || (rel == ".index" && c.old) {
					return nil
				}
				want = append(want, filepath.ToSlash(rel))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(made)); !slices.Equal(got, want) {
				t.Fatalf("reported %q\nwant %q", got, want)
			}
			if len(made) != st.Files+st.Dirs {
				t.Fatalf("%d reported, stats say %d files and %d directories", len(made), st.Files, st.Dirs)
			}
			for _, name := range want {
				fi := made[name]
				on, err := os.Lstat(filepath.Join(target, filepath.FromSlash(name)))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := describeInfo(fi), describeInfo(on); got != want {
					t.Errorf("%s: reported %s\n on disk %s", name, got, want)
				}
				if c.setgid && on.IsDir() && on.Mode()&fs.ModeSetgid == 0 {
					t.Errorf("%s: directory did not inherit the set-group-ID bit (test set-up)", name)
				}
			}
		})
	}
}

// describeInfo is everything a tree state hashes of an entry.
func describeInfo(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Sprintf("%s: no stat", fi.Name())
	}
	return fmt.Sprintf("name=%s mode=%v dir=%t size=%d mtime=%d ino=%d ctime=%d/%d",
		fi.Name(), fi.Mode(), fi.IsDir(), fi.Size(), fi.ModTime().UnixNano(), st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
}

// A failed extraction reports what it made before failing (the caller
// ignores it) and leaves the target as it was.
func TestExtractMadeOnFailure(t *testing.T) {
	good := rawFile("a.txt", []byte("a\n"), 0o100644, false)
	bad := rawFile("b.txt", []byte("b\n"), 0o100644, false)
	bad.crc ^= 1
	data := buildZip(good, bad)
	parent := t.TempDir()
	target := populateTarget(t, parent, true)
	before := snapshot(t, parent)
	var made []string
	_, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{
		Made: func(name string, fi fs.FileInfo) { made = append(made, name) },
	})
	var e *Error
	if !asError(err, &e) || e.Code != CodeChecksumMismatch || e.Entry != "b.txt" {
		t.Fatalf("got %v, want %s at b.txt", err, CodeChecksumMismatch)
	}
	if !slices.Equal(made, []string{"a.txt"}) {
		t.Fatalf("made %q before failing, want [a.txt]", made)
	}
	if after := snapshot(t, parent); after != before {
		t.Fatalf("target changed:\n%s\nwant:\n%s", after, before)
	}
}
