package workspace

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// compareTreePaths orders paths as walkTree visits them.
func TestCompareTreePaths(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"a", "a", 0},
		{"a", "b", -1},
		{"a", "a/b", -1},
		{"a/b", "a-c", -1}, // "a" and its tree come before "a-c"
		{"a-c", "a/b", 1},
		{"a/b", "a.c", -1},
		{"a/z", "a0", -1},
		{"a b/c", "a/c", 1},
		{"a/b/c", "a/b", 1},
		{"a/b/c", "a/bc", -1},
		{"B", "a", -1},
		{"a\u00e9", "a/z", 1},
	}
	for _, c := range cases {
		if got := compareTreePaths(c.a, c.b); got != c.want {
			t.Errorf("compareTreePaths(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// treeStateArchive is a snapshot with names whose walk order differs from
// their byte order, empty and implied directories, an executable, an
// empty file, and reserved names at the top that a walk leaves out (a
// forged index temporary file and a directory under a reserved name).
func treeStateArchive(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	add := func(name, data string, mode os.FileMode) {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(mode)
		if strings.HasSuffix(name, "/") {
			h.Method = zip.Store
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	add("a", "top file\n", 0o644)
	add("a-b/x.txt", "dash\n", 0o644)
	add("a.b/x.txt", "dot\n", 0o644)
	add("a0/x.txt", "zero\n", 0o644)
	add("ab/deep/er/x.txt", strings.Repeat("deep text\n", 2000), 0o644)
	add("empty/", "", os.ModeDir|0o755)
	add("bin/run.sh", "#!/bin/sh\n", 0o755)
	add("bin/zero", "", 0o644)
	add("bin-old/x.txt", "after bin/ in a walk, before it in byte order\n", 0o644)
	add(IndexName+"-0123456789abcdef", "forged temporary index\n", 0o644)
	add(ReservedPrefix+"notes/kept.txt", "an agent's file under the reserved prefix\n", 0o644)
	add(IndexName+"-fedcba9876543210/x.txt", "below a reserved name\n", 0o644)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// After a hydration the index holds the state a walk of the new tree
// gives (taken from the extraction, not a walk), and the ledger the bytes
// the walk counts; so a snapshot right after is unchanged, and one after a
// change is not.
func TestHydrateRecordsTreeState(t *testing.T) {
	ctx := context.Background()
	archive := treeStateArchive(t)
	cases := []struct {
		name string
		old  bool // a workspace exists (with its index) before the hydration
	}{
		{"new directory", false},
		{"over a workspace", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t, fsstore.Options{})
			store := artifacts.NewStore(st)
			m := newManager(t, store, Options{Policy: SnapshotManual})
			scope := sessionScope("state-" + strings.ReplaceAll(c.name, " ", "-"))
			if c.old {
				w := mustOpen(t, m, scope)
				if err := w.Write(ctx, "old.txt", []byte("old")); err != nil {
					t.Fatal(err)
				}
				if _, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			rec, err := st.Put(ctx, scope, SnapshotName, bytes.NewReader(archive), artifacts.PutOptions{MIMEType: SnapshotMIMEType})
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Hydrate(ctx, scope, artifacts.Latest, HydrateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Version != rec.Version {
				t.Fatalf("hydrated v%d, want v%d", res.Version, rec.Version)
			}
			w := mustOpen(t, m, scope)
			root, err := os.OpenRoot(w.Path())
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			walked, err := scanTree(root)
			if err != nil {
				t.Fatal(err)
			}
			w.stmu.Lock()
			ix := w.index
			w.stmu.Unlock()
			if ix.TreeState != walked.State {
				t.Fatalf("index tree state %s, a walk says %s", ix.TreeState, walked.State)
			}
			if q := w.ledger.status(); q.Usage != walked.Bytes+int64(walked.Dirs)*DirBytes || q.Files != walked.Files || q.Dirs != walked.Dirs {
				t.Fatalf("ledger %+v, a walk counts %d bytes, %d files, %d directories", q, walked.Bytes, walked.Files, walked.Dirs)
			}
			if walked.Files != 9 || walked.Dirs != 10 {
				t.Fatalf("walk found %d files, %d directories; the archive has 9 and 10 outside the reserved names", walked.Files, walked.Dirs)
			}
			if _, err := os.Stat(filepath.Join(w.Path(), IndexName+"-0123456789abcdef")); err != nil {
				t.Fatalf("the reserved name was not extracted (test set-up): %v", err)
			}
			again, err := w.Snapshot(ctx, SnapshotOptions{})
			if err != nil || !again.Unchanged || again.Version != rec.Version {
				t.Fatalf("snapshot right after the hydration: %+v %v", again, err)
			}
			if err := w.Write(ctx, "a-b/x.txt", []byte("changed")); err != nil {
				t.Fatal(err)
			}
			changed, err := w.Snapshot(ctx, SnapshotOptions{})
			if err != nil || changed.Unchanged || changed.Version <= rec.Version {
				t.Fatalf("snapshot after a change: %+v %v", changed, err)
			}
			names := zipNames(t, store, scope, changed.Version)
			if !slices.Contains(names, "a-b/x.txt") || !slices.Contains(names, ReservedPrefix+"notes/kept.txt") {
				t.Fatalf("snapshot after a change holds %q", names)
			}
		})
	}
}

// madeTree gives the scan a walk gives for entries reported in any
// order, over several of its chunks.
func TestMadeTreeManyEntries(t *testing.T) {
	dir := t.TempDir()
	n := 2*madeChunk + 17
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%05d", (i*7919)%n))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	walked, err := scanTree(root)
	if err != nil {
		t.Fatal(err)
	}
	var rels []string
	var infos []fs.FileInfo
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		fi, err := os.Lstat(p)
		rel, _ := filepath.Rel(dir, p)
		rels, infos = append(rels, filepath.ToSlash(rel)), append(infos, fi)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var m madeTree
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(len(rels)) { // any order
		m.add(rels[i], infos[i])
	}
	if len(m.chunks) < 3 {
		t.Fatalf("%d chunks: the test wants several", len(m.chunks))
	}
	if got := m.scan(); got.State != walked.State || got.Files != n || got.Dirs != 7 || got.Bytes != walked.Bytes {
		t.Fatalf("scan of the reported entries %+v, a walk %+v", got, walked)
	}
}
