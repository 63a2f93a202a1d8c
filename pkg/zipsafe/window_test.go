package zipsafe

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// windowReader.slice serves ranges of at most a window from the window,
// refilling it where needed, and declines larger or out-of-range ones
// without reading.
func TestWindowSlice(t *testing.T) {
	data := randomBytes(3*readWindow+123, 11)
	size := int64(len(data))
	cases := []struct {
		off, n int64
		ok     bool
	}{
		{0, 30, true}, {10, 100, true}, {readWindow - 10, 30, true}, {5, readWindow, true},
		{size - readWindow, readWindow, true}, {size - 20, 20, true}, {size, 0, true},
		{0, readWindow + 1, false}, {size - 20, 21, false}, {-1, 10, false}, {size + 1, 0, false}, {0, -1, false},
	}
	w := newWindowReader(bytes.NewReader(data), size)
	for _, c := range cases {
		b, ok, err := w.slice(c.off, c.n)
		if err != nil || ok != c.ok || (ok && !bytes.Equal(b, data[c.off:c.off+c.n])) {
			t.Errorf("slice(%d, %d) = %d bytes, %v, %v; want ok %v and the archive's bytes", c.off, c.n, len(b), ok, err, c.ok)
		}
	}
	f, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, _, err := newWindowReader(f, 100).slice(0, 10); err == nil {
		t.Error("slice of a closed file succeeded")
	}
}

// Entries whose compressed data is larger than a worker's window are
// read through a buffer instead of in place, and inflated by the
// streaming inflater: the same checks apply, and a failure leaves the
// target as it was.
func TestExtractEntriesLargerThanWindow(t *testing.T) {
	random := randomBytes(readWindow+readWindow/2, 12)
	text := wordText(4<<20, 13) // about 1.6 MiB deflated
	small := rawFile("d/small.txt", wordText(5000, 14), 0o100644, true)
	entries := map[string]rawEntry{
		"random":      rawFile("d/random.bin", random, 0o100644, true),
		"text":        rawFile("d/text.txt", text, 0o100755, true),
		"stored":      rawFile("d/stored.bin", random, 0o100644, false),
		"small after": small,
	}
	for _, name := range []string{"random", "text", "stored"} {
		if entries[name].csize <= readWindow {
			t.Fatalf("%s: %d compressed bytes, not more than the window", name, entries[name].csize)
		}
	}
	all := []rawEntry{entries["random"], entries["text"], entries["stored"], small}
	data := buildZip(all...)
	target := filepath.Join(t.TempDir(), "ws")
	st, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 4 {
		t.Fatalf("extracted %d files, want 4", st.Files)
	}
	for path, want := range map[string][]byte{"d/random.bin": random, "d/text.txt": text, "d/stored.bin": random, "d/small.txt": wordText(5000, 14)} {
		got, err := os.ReadFile(filepath.Join(target, path))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, %v; want the %d bytes archived", path, len(got), err, len(want))
		}
	}

	cases := []struct {
		name  string
		entry string
		spoil func(e *rawEntry)
		code  Code
	}{
		{"deflated, bad CRC", "text", func(e *rawEntry) { e.crc ^= 1 }, CodeChecksumMismatch},
		{"deflated, short", "random", func(e *rawEntry) { e.usize++ }, CodeSizeMismatch},
		{"deflated, long", "text", func(e *rawEntry) { e.usize-- }, CodeSizeMismatch},
		{"deflated, cut", "text", func(e *rawEntry) { e.data = e.data[:len(e.data)-100]; e.csize -= 100 }, CodeCorruptArchive},
		{"stored, bad CRC", "stored", func(e *rawEntry) { e.crc ^= 1 }, CodeChecksumMismatch},
		{"small one in place, bad CRC", "small after", func(e *rawEntry) { e.crc ^= 1 }, CodeChecksumMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var bad []rawEntry
			for _, e := range all {
				if e.name == entries[c.entry].name {
					c.spoil(&e)
				}
				bad = append(bad, e)
			}
			data := buildZip(bad...)
			parent := t.TempDir()
			target := populateTarget(t, parent, true)
			before := snapshot(t, parent)
			_, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{})
			var e *Error
			if !errors.As(err, &e) || e.Code != c.code || e.Entry != entries[c.entry].name {
				t.Fatalf("got %v, want %s at %s", err, c.code, entries[c.entry].name)
			}
			if after := snapshot(t, parent); after != before {
				t.Fatalf("target changed:\n%s\nwant:\n%s", after, before)
			}
		})
	}
}
