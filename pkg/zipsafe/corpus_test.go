package zipsafe

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "regenerate testdata/hostile/*.zip and testdata/setuid.zip")

type hostileCase struct {
	file   string
	code   Code
	entry  string // the entry the error must name ("" for archive-level errors)
	limits Limits
	build  func() []byte
}

var okEntry = rawFile("ok.txt", []byte("hello, world\n"), 0o100644, true)

func nameCase(file, name string) hostileCase {
	return hostileCase{file: file, code: CodeUnsafePath, entry: name, build: func() []byte {
		return buildZip(okEntry, rawFile(name, []byte("pwned\n"), 0o100644, false))
	}}
}

func modeCase(file string, mode uint32) hostileCase {
	return hostileCase{file: file, code: CodeUnsupportedEntryType, entry: "special", build: func() []byte {
		return buildZip(okEntry, rawEntry{name: "special", mode: mode})
	}}
}

func textOf(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of some text that compresses fairly well\n", i)
	}
	return b.Bytes()[:n]
}

var hostileCases = []hostileCase{
	nameCase("zipslip_dotdot.zip", "../evil.txt"),
	nameCase("dotdot_middle.zip", "a/../../evil.txt"),
	nameCase("dotdot_trailing.zip", "a/.."),
	nameCase("absolute.zip", "/tmp/evil.txt"),
	nameCase("drive_letter.zip", "C:/evil.txt"),
	nameCase("drive_backslash.zip", `C:\evil.txt`),
	nameCase("backslash.zip", `a\..\..\evil.txt`),
	nameCase("nul_byte.zip", "evil\x00.txt"),
	nameCase("control_char.zip", "evil\x1b[31m.txt"),
	nameCase("newline.zip", "evil\n.txt"),
	nameCase("c1_control.zip", "evil\u0085.txt"),
	nameCase("long_component.zip", strings.Repeat("a", 300)),
	nameCase("long_path.zip", strings.Repeat(strings.Repeat("b", 200)+"/", 21)+"f"),
	nameCase("deep_path.zip", strings.Repeat("d/", 200)+"f"),
	nameCase("invalid_utf8.zip", "evil\xff\xfe.txt"),
	nameCase("dot_component.zip", "./evil.txt"),
	nameCase("empty_component.zip", "a//evil.txt"),
	nameCase("empty_name.zip", ""),
	{file: "symlink_write_through.zip", code: CodeUnsupportedEntryType, entry: "link", build: func() []byte {
		return buildZip(okEntry,
			rawFile("link", []byte("/tmp"), 0o120777, false),
			rawFile("link/evil.txt", []byte("pwned\n"), 0o100644, false))
	}},
	{file: "symlink_dotdot.zip", code: CodeUnsupportedEntryType, entry: "link", build: func() []byte {
		return buildZip(okEntry,
			rawFile("link", []byte("../../.."), 0o120777, false),
			rawFile("link/../evil.txt", []byte("pwned\n"), 0o100644, false))
	}},
	{file: "symlink_over_dir.zip", code: CodeUnsupportedEntryType, entry: "d", build: func() []byte {
		return buildZip(rawDir("d/"), okEntry, rawFile("d", []byte("/etc"), 0o120777, false))
	}},
	modeCase("char_device.zip", 0o020644),
	modeCase("block_device.zip", 0o060644),
	modeCase("fifo.zip", 0o010644),
	modeCase("socket.zip", 0o140755),
	modeCase("unknown_type.zip", 0o150644),
	{file: "duplicate_exact.zip", code: CodeDuplicateEntry, entry: "a.txt", build: func() []byte {
		return buildZip(rawFile("a.txt", []byte("first\n"), 0o100644, true), rawFile("a.txt", []byte("second\n"), 0o100644, true))
	}},
	{file: "duplicate_dir_slash.zip", code: CodeDuplicateEntry, entry: "a/", build: func() []byte {
		return buildZip(rawFile("a", []byte("file\n"), 0o100644, true), rawDir("a/"))
	}},
	{file: "duplicate_dir.zip", code: CodeDuplicateEntry, entry: "d/", build: func() []byte {
		return buildZip(rawDir("d/"), okEntry, rawDir("d/"))
	}},
	{file: "file_dir_collision.zip", code: CodeDuplicateEntry, entry: "a/b", build: func() []byte {
		return buildZip(rawFile("a", []byte("file\n"), 0o100644, true), rawFile("a/b", []byte("x\n"), 0o100644, true))
	}},
	{file: "dir_file_collision.zip", code: CodeDuplicateEntry, entry: "a", build: func() []byte {
		return buildZip(rawFile("a/b", []byte("x\n"), 0o100644, true), rawFile("a", []byte("file\n"), 0o100644, true))
	}},
	{file: "method99.zip", code: CodeUnsupportedCompression, entry: "m.txt", build: func() []byte {
		e := rawFile("m.txt", []byte("data\n"), 0o100644, false)
		e.method = 99
		return buildZip(okEntry, e)
	}},
	{file: "method_bzip2.zip", code: CodeUnsupportedCompression, entry: "m.txt", build: func() []byte {
		e := rawFile("m.txt", []byte("data\n"), 0o100644, false)
		e.method = 12
		return buildZip(okEntry, e)
	}},
	{file: "encrypted.zip", code: CodeEncryptedEntry, entry: "secret.txt", build: func() []byte {
		e := rawFile("secret.txt", []byte("0123456789abcdef"), 0o100644, false)
		e.flags |= 1
		return buildZip(okEntry, e)
	}},
	{file: "bad_crc.zip", code: CodeChecksumMismatch, entry: "b.txt", build: func() []byte {
		e := rawFile("b.txt", textOf(5000), 0o100644, true)
		e.crc ^= 1
		return buildZip(okEntry, e)
	}},
	{file: "zero_crc_lie.zip", code: CodeChecksumMismatch, entry: "b.txt", build: func() []byte {
		e := rawFile("b.txt", textOf(5000), 0o100644, true)
		e.crc = 0 // archive/zip's own reader skips the check when the CRC is 0
		return buildZip(okEntry, e)
	}},
	{file: "inflate_past_declared.zip", code: CodeSizeMismatch, entry: "big.txt", build: func() []byte {
		content := textOf(100_000)
		e := rawFile("big.txt", content, 0o100644, true)
		e.usize = 1000
		e.crc = rawFile("", content[:1000], 0, false).crc
		return buildZip(okEntry, e)
	}},
	{file: "inflate_short.zip", code: CodeSizeMismatch, entry: "short.txt", build: func() []byte {
		e := rawFile("short.txt", textOf(100_000), 0o100644, true)
		e.usize = 200_000
		return buildZip(okEntry, e)
	}},
	{file: "store_size_mismatch.zip", code: CodeSizeMismatch, entry: "s.txt", build: func() []byte {
		e := rawFile("s.txt", []byte("12345"), 0o100644, false)
		e.usize = 10
		return buildZip(okEntry, e)
	}},
	{file: "corrupt_deflate.zip", code: CodeCorruptArchive, entry: "c.txt", build: func() []byte {
		return buildZip(okEntry, rawEntry{name: "c.txt", method: 8, mode: 0o100644, crc: 1, csize: 16, usize: 100,
			data: bytes.Repeat([]byte{0xff}, 16)})
	}},
	{file: "ratio_bomb.zip", code: CodeRatioExceeded, entry: "zeros.bin", build: func() []byte {
		return buildZip(okEntry, rawFile("zeros.bin", make([]byte, 16<<20), 0o100644, true))
	}},
	{file: "too_many_entries.zip", code: CodeTooManyEntries, entry: "f10.txt", limits: Limits{MaxEntries: 10}, build: func() []byte {
		var es []rawEntry
		for i := range 20 {
			es = append(es, rawFile(fmt.Sprintf("f%d.txt", i), []byte("x\n"), 0o100644, true))
		}
		return buildZip(es...)
	}},
	{file: "too_large.zip", code: CodeTooLarge, entry: "f1.txt", limits: Limits{MaxBytes: 1 << 20}, build: func() []byte {
		var es []rawEntry
		for i := range 3 {
			es = append(es, rawFile(fmt.Sprintf("f%d.txt", i), textOf(600_000), 0o100644, true))
		}
		return buildZip(es...)
	}},
	{file: "overlap_same_header.zip", code: CodeOverlappingEntries, entry: "b.txt", build: func() []byte {
		var z rawZip
		e := rawFile("a.txt", textOf(10_000), 0o100644, true)
		off := z.add(e)
		e.name = "b.txt" // same data, second central directory record
		z.central(e, off)
		return z.bytes()
	}},
	{file: "overlap_quoted.zip", code: CodeOverlappingEntries, entry: "inner.txt", build: func() []byte {
		// The outer entry stores (quotes) the inner entry's local header
		// and data, so the inner entry's bytes are counted twice.
		var z rawZip
		inner := rawFile("inner.txt", textOf(10_000), 0o100644, true)
		quoted := inner.localHeader()
		outer := rawFile("outer.txt", quoted, 0o100644, false)
		off := z.add(outer)
		z.central(inner, off+30+uint32(len(outer.name)))
		return z.bytes()
	}},
	{file: "overlap_empty_entries.zip", code: CodeOverlappingEntries, entry: "e2", build: func() []byte {
		var z rawZip
		e := rawFile("e1", nil, 0o100644, false)
		off := z.add(e)
		e.name = "e2"
		z.central(e, off)
		return z.bytes()
	}},
	{file: "dir_with_data.zip", code: CodeCorruptArchive, entry: "d/", build: func() []byte {
		e := rawFile("d/", []byte("hidden"), 0o040755, false)
		return buildZip(okEntry, e)
	}},
	{file: "data_past_end.zip", code: CodeCorruptArchive, entry: "cut.txt", build: func() []byte {
		e := rawFile("cut.txt", []byte("0123456789"), 0o100644, false)
		e.csize, e.usize = 1_000_000, 1_000_000
		return buildZip(okEntry, e)
	}},
	{file: "bad_local_header.zip", code: CodeCorruptArchive, entry: "x.txt", build: func() []byte {
		var z rawZip
		z.add(okEntry)
		z.central(rawFile("x.txt", []byte("x"), 0o100644, false), 5)
		return z.bytes()
	}},
	{file: "truncated_half.zip", code: CodeCorruptArchive, build: func() []byte {
		b := buildZip(okEntry, rawFile("b.txt", textOf(20_000), 0o100644, true))
		return b[:len(b)/2]
	}},
	{file: "truncated_tail.zip", code: CodeCorruptArchive, build: func() []byte {
		b := buildZip(okEntry, rawFile("b.txt", textOf(20_000), 0o100644, true))
		return b[:len(b)-5]
	}},
	{file: "not_a_zip.zip", code: CodeCorruptArchive, build: func() []byte {
		return []byte("this is not a zip archive at all\n")
	}},
}

// setuidArchive holds entries with set-user-ID, set-group-ID and sticky bits;
// it must extract with those bits dropped.
func setuidArchive() []byte {
	return buildZip(
		rawDir("bin/"),
		rawFile("bin/run.sh", []byte("#!/bin/sh\necho hi\n"), 0o104755, true),
		rawFile("g.txt", []byte("setgid\n"), 0o102644, true),
		rawEntry{name: "sticky/", mode: 0o041777},
		rawFile("sticky/f", []byte("world writable\n"), 0o100666, true),
	)
}

// TestGenerateCorpus regenerates the committed corpus:
//
//	go test ./pkg/zipsafe -run TestGenerateCorpus -update
func TestGenerateCorpus(t *testing.T) {
	if !*update {
		t.Skip("run with -update to regenerate testdata")
	}
	dir := filepath.Join("testdata", "hostile")
	old, _ := filepath.Glob(filepath.Join(dir, "*.zip"))
	for _, f := range old {
		os.Remove(f)
	}
	for _, c := range hostileCases {
		if err := os.WriteFile(filepath.Join(dir, c.file), c.build(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join("testdata", "setuid.zip"), setuidArchive(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHostileCorpusComplete(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "hostile", "*.zip"))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk, inTable []string
	for _, f := range files {
		onDisk = append(onDisk, filepath.Base(f))
	}
	for _, c := range hostileCases {
		inTable = append(inTable, c.file)
	}
	slices.Sort(onDisk)
	slices.Sort(inTable)
	if !slices.Equal(onDisk, inTable) {
		t.Fatalf("testdata/hostile and hostileCases differ (run go test -run TestGenerateCorpus -update):\n disk: %v\ntable: %v", onDisk, inTable)
	}
	if len(inTable) < 25 {
		t.Fatalf("corpus has %d archives, want at least 25", len(inTable))
	}
}

func TestHostileCorpus(t *testing.T) {
	for _, c := range hostileCases {
		t.Run(strings.TrimSuffix(c.file, ".zip"), func(t *testing.T) {
			path := filepath.Join("testdata", "hostile", c.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			check := func(t *testing.T, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("extract succeeded, want %s", c.code)
				}
				if got := CodeOf(err); got != c.code {
					t.Fatalf("code %q, want %q (err: %v)", got, c.code, err)
				}
				var ze *Error
				if !asError(err, &ze) || ze.Entry != c.entry {
					t.Fatalf("error entry %q, want %q (err: %v)", ze.Entry, c.entry, err)
				}
				if c.entry != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", c.entry)) {
					t.Fatalf("Error() %q does not name entry %q", err.Error(), c.entry)
				}
			}
			opts := ExtractOptions{Limits: c.limits, Keep: []string{".index"}}
			for _, variant := range []string{"existing", "missing", "file"} {
				t.Run(variant, func(t *testing.T) {
					parent, target := hostileSetup(t, variant != "missing")
					before := snapshot(t, parent)
					var err error
					if variant == "file" {
						_, err = ExtractFile(path, target, opts)
					} else {
						_, err = Extract(bytes.NewReader(data), int64(len(data)), target, opts)
					}
					check(t, err)
					if after := snapshot(t, parent); after != before {
						t.Fatalf("parent directory changed:\nbefore:\n%s\nafter:\n%s", before, after)
					}
				})
			}
		})
	}
}

// hostileSetup makes parent/{canary,ws}; ws (the target) is populated when
// withTarget is set. It returns parent and the target path.
func hostileSetup(t testing.TB, withTarget bool) (string, string) {
	t.Helper()
	parent := t.TempDir()
	mustWrite(t, filepath.Join(parent, "canary", "canary.txt"), "canary\n", 0o644)
	return parent, populateTarget(t, parent, withTarget)
}

// populateTarget creates parent/ws with known content if withTarget is set,
// and returns its path.
func populateTarget(t testing.TB, parent string, withTarget bool) string {
	target := filepath.Join(parent, "ws")
	if withTarget {
		mustWrite(t, filepath.Join(target, ".index"), "index record\n", 0o600)
		mustWrite(t, filepath.Join(target, "old.txt"), "old content\n", 0o644)
		mustWrite(t, filepath.Join(target, "sub", "deep", "x.bin"), "\x00\x01\x02", 0o644)
		mustWrite(t, filepath.Join(target, "run.sh"), "#!/bin/sh\n", 0o755)
		if err := os.Mkdir(filepath.Join(target, "empty"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return target
}
