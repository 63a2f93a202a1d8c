package zipsafe

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestExtractReportsEarliestFailure: files are extracted by several
// workers, yet the error is the one of the first bad entry in archive
// order, and the target is left as it was.
// forceParallel makes Extract use every worker however small the
// entries, for the rest of the test.
func forceParallel(t *testing.T) {
	old := smallEntries
	smallEntries = 0
	t.Cleanup(func() { smallEntries = old })
}

func TestExtractReportsEarliestFailure(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs 2 or more Ps for parallel extraction")
	}
	forceParallel(t)
	build := func(bad map[int]string) []byte {
		var entries []rawEntry
		for i := range 64 {
			// Four directories: four runs for the workers to share.
			e := rawFile(fmt.Sprintf("d%d/f%02d.txt", i/16, i), textOf(20_000+i), 0o100644, true)
			switch bad[i] {
			case "crc":
				e.crc ^= 1
			case "size":
				e.usize--
			}
			entries = append(entries, e)
		}
		return buildZip(entries...)
	}
	cases := []struct {
		name  string
		bad   map[int]string
		code  Code
		entry string
	}{
		{"one bad crc", map[int]string{40: "crc"}, CodeChecksumMismatch, "d2/f40.txt"},
		{"crc then size", map[int]string{7: "crc", 8: "size", 50: "size"}, CodeChecksumMismatch, "d0/f07.txt"},
		{"size then crc", map[int]string{3: "size", 4: "crc"}, CodeSizeMismatch, "d0/f03.txt"},
		{"last entry", map[int]string{63: "crc"}, CodeChecksumMismatch, "d3/f63.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := build(c.bad)
			for range 5 { // different interleavings, same answer
				parent := t.TempDir()
				target := populateTarget(t, parent, true)
				before := snapshot(t, parent)
				_, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{})
				var e *Error
				if !asError(err, &e) || e.Code != c.code || e.Entry != c.entry {
					t.Fatalf("got %v, want %s at %s", err, c.code, c.entry)
				}
				if after := snapshot(t, parent); after != before {
					t.Fatalf("target changed:\n%s\nwant:\n%s", after, before)
				}
			}
		})
	}
}

// TestExtractProgressParallel: progress counts every file once, in
// increasing order, whichever worker extracted it.
func TestExtractProgressParallel(t *testing.T) {
	forceParallel(t)
	src := t.TempDir()
	for i := range 200 {
		mustWrite(t, filepath.Join(src, fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%03d", i)), string(textOf(1000+i)), 0o644)
	}
	data, wst := writeTree(t, src, WriteOptions{})
	var files []int
	var last int64
	st, err := Extract(bytes.NewReader(data), int64(len(data)), filepath.Join(t.TempDir(), "ws"), ExtractOptions{
		Progress: func(n int, b int64) {
			if b < last {
				t.Errorf("bytes went back from %d to %d", last, b)
			}
			last = b
			files = append(files, n)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 200 || st.Bytes != wst.Bytes || st.Dirs != 7 || len(files) != 200 || last != wst.Bytes {
		t.Fatalf("stats %+v (write %+v), %d progress calls ending at %d bytes", st, wst, len(files), last)
	}
	for i, n := range files {
		if n != i+1 {
			t.Fatalf("progress call %d reported %d files", i, n)
		}
	}
}

// TestWindowReader checks reads inside, across and past the window, and
// large reads that bypass it, against the archive itself.
func TestWindowReader(t *testing.T) {
	data := randomBytes(3*readWindow+123, 9)
	size := int64(len(data))
	cases := []struct {
		off int64
		n   int
	}{
		{0, 30}, {10, 100}, {readWindow - 10, 30}, {readWindow + 5, 1000}, {5, 30},
		{size - 20, 20}, {size - 20, 40}, {size, 10}, {size + 5, 10}, {100, readWindow}, {0, 0},
	}
	w := newWindowReader(bytes.NewReader(data), size)
	for _, c := range cases {
		got := make([]byte, c.n)
		n, err := w.ReadAt(got, c.off)
		want := make([]byte, c.n)
		wn, werr := bytes.NewReader(data).ReadAt(want, c.off)
		if n != wn || (err == nil) != (werr == nil) || !bytes.Equal(got[:n], want[:wn]) {
			t.Errorf("ReadAt(%d bytes at %d) = %d, %v; want %d, %v", c.n, c.off, n, err, wn, werr)
		}
		if werr != nil && err != io.EOF {
			t.Errorf("ReadAt(%d bytes at %d): error %v, want io.EOF", c.n, c.off, err)
		}
	}
	// A source that fails is reported, not cached.
	f, err := os.Open(filepath.Join(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := newWindowReader(f, 100).ReadAt(make([]byte, 10), 0); err == nil {
		t.Error("read from a closed file succeeded")
	}
}
