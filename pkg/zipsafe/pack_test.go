package zipsafe

import (
	"archive/zip"
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func randomBytes(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestWriteChoosesMethod checks which entries are deflated and which are
// stored, for files small enough to be compressed by a worker and files
// large enough to stream, and that every one round-trips through Extract
// and Info-ZIP with its modification time.
func TestWriteChoosesMethod(t *testing.T) {
	large := bufferedMax + 100_000
	cases := []struct {
		name    string
		content []byte
		want    uint16
	}{
		{"small.txt", textOf(50_000), zip.Deflate},
		{"small-random.bin", randomBytes(50_000, 1), zip.Store},
		{"small-text-named.png", textOf(50_000), zip.Store},
		{"UPPER.JPG", textOf(10_000), zip.Store},
		{"archive.tar.gz", textOf(10_000), zip.Store},
		{"empty", nil, zip.Store},
		{"tiny.txt", []byte("x"), zip.Store},
		{"large.txt", textOf(large), zip.Deflate},
		{"large-random.bin", randomBytes(large, 2), zip.Store},
		{"large-text-named.mp4", textOf(large), zip.Store},
		{"large-random-head-text-tail.bin", append(randomBytes(probeBytes, 3), textOf(large)...), zip.Store},
	}
	src := t.TempDir()
	mtime := time.Date(2024, 5, 6, 7, 8, 10, 0, time.Local)
	for _, c := range cases {
		p := filepath.Join(src, c.name)
		if err := os.WriteFile(p, c.content, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	data, st := writeTree(t, src, WriteOptions{})
	if st.Files != len(cases) {
		t.Fatalf("wrote %d files, want %d", st.Files, len(cases))
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*zip.File{}
	for _, f := range zr.File {
		byName[f.Name] = f
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := byName[c.name]
			if f == nil {
				t.Fatal("no entry")
			}
			if f.Method != c.want {
				t.Errorf("method %d, want %d", f.Method, c.want)
			}
			if !f.Modified.Equal(mtime) {
				t.Errorf("modified %v, want %v", f.Modified, mtime)
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, c.content) {
				t.Errorf("content differs (%d bytes, %v)", len(got), err)
			}
		})
	}
	target := filepath.Join(t.TempDir(), "ws")
	if _, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := treeListing(t, target), treeListing(t, src); got != want {
		t.Fatalf("round trip differs:\n got:\n%s\nwant:\n%s", got, want)
	}
	if unzip, err := exec.LookPath("unzip"); err == nil {
		zp := filepath.Join(t.TempDir(), "m.zip")
		os.WriteFile(zp, data, 0o644)
		if out, err := exec.Command(unzip, "-tq", zp).CombinedOutput(); err != nil {
			t.Errorf("unzip -t: %v\n%s", err, out)
		}
	}
}

// packOne runs entries through a packer and returns the archive and the
// error Write would return.
func packOne(t *testing.T, entries ...*entry) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zw.RegisterCompressor(zip.Deflate, compressor(DefaultLevel))
	p := newPacker(zw, DefaultLimits(), WriteOptions{}, zip.Deflate, DefaultLevel)
	p.start()
	for i, e := range entries {
		if e.kind == kindFail {
			p.fail(e.err)
			break
		}
		if err := p.send(e); err != nil {
			for _, rest := range entries[i+1:] {
				if rest.f != nil {
					rest.f.Close() // never opened, in Write
				}
			}
			break
		}
	}
	_, err := p.finish()
	if err == nil {
		err = zw.Close()
	}
	return buf.Bytes(), err
}

func fileEntry(t *testing.T, kind entryKind, name string, content []byte, size int64) *entry {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
		t.Fatal(err)
	}
	root := openRoot(t, dir)
	d, err := root.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, _, err := newSrcDir(root, d).open(name)
	if err != nil {
		t.Fatal(err)
	}
	h := &zip.FileHeader{Name: name, Method: zip.Deflate}
	h.SetMode(0o600)
	return &entry{kind: kind, rel: name, hdr: h, f: f, size: size}
}

// TestWriteFileGrew: a file longer than when it was examined is not cut at
// the old size; the writer streams it whole.
func TestWriteFileGrew(t *testing.T) {
	content := textOf(300_000)
	data, err := packOne(t, fileEntry(t, kindBuffered, "grew.txt", content, 1000))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("got %d bytes (%v), want %d", len(got), err, len(content))
	}
}

// TestWriteErrorOrder: whatever finishes first, Write reports the first
// failure in archive order, and closes every file it opened.
func TestWriteErrorOrder(t *testing.T) {
	walkErr := newErr(CodeUnsafePath, "z", "walk failed here")
	cases := []struct {
		name     string
		entries  func(t *testing.T) []*entry
		wantCode Code
		wantName string
	}{
		{"read error before walk error", func(t *testing.T) []*entry {
			bad := fileEntry(t, kindBuffered, "bad", textOf(100), 100)
			bad.f.Close() // reading fails
			return []*entry{fileEntry(t, kindBuffered, "ok", textOf(100), 100), bad,
				fileEntry(t, kindBuffered, "after", textOf(100), 100), {kind: kindFail, err: walkErr}}
		}, CodeIO, `"bad"`},
		{"stream read error", func(t *testing.T) []*entry {
			bad := fileEntry(t, kindStream, "big", textOf(100), 100)
			bad.f.Close()
			return []*entry{bad, fileEntry(t, kindBuffered, "after", textOf(100), 100)}
		}, CodeIO, `"big"`},
		{"walk error first", func(t *testing.T) []*entry {
			return []*entry{fileEntry(t, kindBuffered, "ok", textOf(100), 100), {kind: kindFail, err: walkErr}}
		}, CodeUnsafePath, `"z"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			entries := c.entries(t)
			_, err := packOne(t, entries...)
			if CodeOf(err) != c.wantCode || !strings.Contains(err.Error(), c.wantName) {
				t.Fatalf("error %v, want %s naming %s", err, c.wantCode, c.wantName)
			}
			for _, e := range entries {
				if e.f == nil {
					continue
				}
				// An open file reads a byte or EOF; a closed one fails.
				if _, err := e.f.Read(make([]byte, 1)); err == nil || err == io.EOF {
					t.Errorf("%s left open", e.rel)
				}
			}
		})
	}
}

// TestWriteMemoryBounded: compressing files on every core holds at most the
// budget in memory, however many and however large the files are.
func TestWriteMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	src := t.TempDir()
	text := textOf(bufferedMax - 1000)
	for i := range 32 {
		if err := os.WriteFile(filepath.Join(src, strings.Repeat("f", 1+i%5)+string(rune('a'+i%26))+string(rune('a'+i/26))), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := startHeapSampler()
	st, err := Write(io.Discard, openRoot(t, src), WriteOptions{})
	peak := h.peakMB()
	if err != nil || st.Files != 32 {
		t.Fatalf("Write: %v, %+v", err, st)
	}
	t.Logf("peak heap %.1f MiB", peak)
	// The budget, plus the workers' and the writer's buffers and
	// compressors, plus garbage not yet collected.
	if limit := float64(budgetBytes>>20) * 2.5; peak > limit {
		t.Errorf("peak heap %.1f MiB for 64 MiB of files, want under %.0f MiB", peak, limit)
	}
}
