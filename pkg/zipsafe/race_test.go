package zipsafe

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const outsideCanary = "OUTSIDE-CANARY-5f1d0c"

// makeOutside creates a directory outside every tree under test, holding one
// canary file, and returns a function that fails the test if anything in it
// changed.
func makeOutside(t *testing.T) (string, func()) {
	dir := filepath.Join(t.TempDir(), "outside")
	mustWrite(t, filepath.Join(dir, "canary.txt"), outsideCanary+"\n", 0o644)
	before := snapshot(t, dir)
	return dir, func() {
		t.Helper()
		if after := snapshot(t, dir); after != before {
			t.Fatalf("outside directory changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	}
}

// swapper repeatedly replaces the directories returned by paths() with
// symbolic links to dest and back, until stopped.
func swapper(paths func() []string, dest string, pause time.Duration) (stop func() int64) {
	var done atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		moved := make(map[string]string)
		for i := 0; !done.Load(); i++ {
			for _, p := range paths() {
				fi, err := os.Lstat(p)
				switch {
				case err != nil:
				case fi.IsDir():
					m := fmt.Sprintf("%s.moved%d", p, i)
					if os.Rename(p, m) == nil && os.Symlink(dest, p) == nil {
						moved[p] = m
						swaps.Add(1)
					}
				case fi.Mode()&fs.ModeSymlink != 0 && moved[p] != "":
					if os.Remove(p) == nil {
						os.Rename(moved[p], p)
					}
					delete(moved, p)
				}
			}
			runtime.Gosched()
			time.Sleep(pause)
		}
	})
	return func() int64 {
		done.Store(true)
		wg.Wait()
		return swaps.Load()
	}
}

func TestRaceExtractSymlinkSwap(t *testing.T) {
	outside, checkOutside := makeOutside(t)
	parent := t.TempDir()
	target := filepath.Join(parent, "ws")
	var es []rawEntry
	for i := range 40 {
		for j := range 5 {
			es = append(es, rawFile(fmt.Sprintf("d/s%02d/f%d.txt", i, j), textOf(2000+i*j), 0o100644, true))
		}
	}
	data := buildZip(es...)

	// Every sibling of the target (the target itself, the temporary
	// extraction directories, the old trees being removed): replace d,
	// d/s00..d/s39 and the kept directory with links to outside.
	paths := func() []string {
		var ps []string
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			base := filepath.Join(parent, e.Name())
			ps = append(ps, filepath.Join(base, "keepdir"), filepath.Join(base, "d"))
			for i := 0; i < 40; i += 3 {
				ps = append(ps, filepath.Join(base, "d", fmt.Sprintf("s%02d", i)))
			}
		}
		return ps
	}
	stop := func() int64 { return 0 }
	var ok, failed int
	var swaps int64
	for i := range 40 {
		if i%8 == 0 {
			// A fresh target, with the swapper stopped meanwhile: it would
			// move directories of the old target back into place while it
			// is removed.
			swaps += stop()
			staging := filepath.Join(t.TempDir(), "ws")
			mustWrite(t, filepath.Join(staging, "keepdir", "k.txt"), "kept\n", 0o644)
			if err := os.RemoveAll(target); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(staging, target); err != nil {
				t.Fatal(err)
			}
			stop = swapper(paths, outside, time.Millisecond)
		}
		_, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{Keep: []string{"keepdir"}})
		if err != nil {
			if CodeOf(err) == "" {
				t.Fatalf("untyped error: %v", err)
			}
			failed++
		} else {
			ok++
		}
		checkOutside()
	}
	swaps += stop()
	t.Logf("%d extractions succeeded, %d refused, %d swaps", ok, failed, swaps)
	checkOutside()
	noCanaryIn(t, target)
	if got := listNames(t, parent); !slices.Equal(got, []string{"ws"}) {
		t.Errorf("leftovers next to target: %v", got)
	}
}

// noCanaryIn fails if a regular file under dir (not following links)
// contains the outside canary.
func noCanaryIn(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(outsideCanary)) {
				t.Errorf("%s holds content read from outside", path)
			}
		}
		return nil
	})
}

func TestRaceWriteSymlinkSwap(t *testing.T) {
	outside, checkOutside := makeOutside(t)
	src := t.TempDir()
	for i := range 100 {
		mustWrite(t, filepath.Join(src, "d", fmt.Sprintf("f%03d.txt", i)), "inside content\n", 0o644)
	}
	mustWrite(t, filepath.Join(src, "inner", "marker.txt"), "INNER-MARKER\n", 0o644)
	root := openRoot(t, src)

	for _, dest := range []string{outside, filepath.Join(src, "inner")} {
		stop := swapper(func() []string { return []string{filepath.Join(src, "d")} }, dest, 0)
		var ok, failed int
		for range 60 {
			var buf bytes.Buffer
			_, err := Write(&buf, root, WriteOptions{Level: LevelStore})
			// Stored (uncompressed) data: the canary would be visible verbatim,
			// even in a partial archive.
			if bytes.Contains(buf.Bytes(), []byte(outsideCanary)) {
				t.Fatal("archive contains content from outside the root")
			}
			if err != nil {
				if c := CodeOf(err); c != CodeUnsupportedFileType && c != CodeIO {
					t.Fatalf("unexpected error: %v", err)
				}
				failed++
				continue
			}
			ok++
			zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range zr.File {
				if !strings.HasPrefix(f.Name, "d") || strings.HasSuffix(f.Name, "/") {
					continue
				}
				rc, _ := f.Open()
				b, _ := io.ReadAll(rc)
				rc.Close()
				if strings.Contains(string(b), "INNER-MARKER") {
					t.Fatalf("%s: followed a swapped-in symlink inside the root", f.Name)
				}
			}
		}
		swaps := stop()
		t.Logf("dest %s: %d writes succeeded, %d refused, %d swaps", filepath.Base(dest), ok, failed, swaps)
		// Restore a real d for the next round.
		os.Remove(filepath.Join(src, "d"))
		moved, _ := filepath.Glob(filepath.Join(src, "d.moved*"))
		for _, m := range moved {
			if _, err := os.Stat(filepath.Join(src, "d")); err != nil {
				os.Rename(m, filepath.Join(src, "d"))
			}
		}
	}
	checkOutside()
}
