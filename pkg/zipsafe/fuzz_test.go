package zipsafe

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzExtract is seeded with every archive under testdata (the hostile
// corpus, the setuid and Erlang archives) plus a valid archive from Write.
//
//	go test ./pkg/zipsafe -run '^$' -fuzz FuzzExtract -fuzztime 60s
func FuzzExtract(f *testing.F) {
	for _, pattern := range []string{"testdata/*.zip", "testdata/hostile/*.zip"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	src := f.TempDir()
	mustWrite(f, filepath.Join(src, "a", "b.txt"), "bee\n", 0o644)
	mustWrite(f, filepath.Join(src, "x.sh"), "#!/bin/sh\n", 0o755)
	os.Mkdir(filepath.Join(src, "empty"), 0o755)
	data, _ := writeTree(f, src, WriteOptions{})
	f.Add(data)

	// One fixture per process, reused across iterations (creating files is
	// slow): a failed extraction must leave it untouched anyway, and after
	// a successful one the target is rebuilt.
	parent, target := hostileSetup(f, true)
	before := snapshot(f, parent)
	canary := snapshot(f, filepath.Join(parent, "canary"))

	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxEntries: 200, MaxBytes: 8 << 20, MaxDepth: 32}
		_, err := Extract(bytes.NewReader(data), int64(len(data)), target, ExtractOptions{Limits: lim, Keep: []string{".index"}})
		if err != nil {
			if CodeOf(err) == "" {
				t.Fatalf("error without code: %v", err)
			}
			if after := snapshot(t, parent); after != before {
				t.Fatalf("failed extraction changed the tree (%v):\nbefore:\n%s\nafter:\n%s", err, before, after)
			}
			return
		}
		defer func() {
			if err := os.RemoveAll(target); err != nil {
				t.Fatal(err)
			}
			populateTarget(t, parent, true)
		}()
		if got := listNames(t, parent); !slices.Equal(got, []string{"canary", "ws"}) {
			t.Fatalf("parent holds %v", got)
		}
		if after := snapshot(t, filepath.Join(parent, "canary")); after != canary {
			t.Fatal("canary changed")
		}
		if idx, _ := os.ReadFile(filepath.Join(target, ".index")); string(idx) != "index record\n" {
			t.Fatalf("kept .index = %q", idx)
		}
		filepath.WalkDir(target, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			info, _ := d.Info()
			switch m := info.Mode(); {
			case path == target:
			case m.IsDir():
				if m.Perm() != 0o700 {
					t.Fatalf("%s: directory mode %v", path, m)
				}
			case m.IsRegular():
				if m.Perm() != 0o600 && m.Perm() != 0o700 {
					t.Fatalf("%s: file mode %v", path, m)
				}
			default:
				t.Fatalf("%s: created %v", path, m)
			}
			return nil
		})
	})
}
