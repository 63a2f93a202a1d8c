package workspace

import (
	"context"
	"io/fs"
	"slices"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// TestAgentNamesListed: a name beginning with ".agentstore-" is the
// agent's at every depth (only the index's names and the writes'
// temporary names at the top are the manager's): written, listed by
// List, ReadDir and EachEntry, and snapshotted; a reserved name at the
// top is refused, and the index is never listed.
func TestAgentNamesListed(t *testing.T) {
	ctx := context.Background()
	m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{Policy: SnapshotManual})
	w := mustOpen(t, m, sessionScope("names"))
	for _, n := range []string{".agentstore-notes.txt", "d/.agentstore-notes.txt", "d/.agentstore-tmp-0123456789abcdef"} {
		if err := w.Write(ctx, n, []byte("hidden?")); err != nil {
			t.Fatalf("write %s: %v", n, err)
		}
	}
	for _, n := range []string{".agentstore-tmp-0123456789abcdef", IndexName, "d/" + IndexName} {
		wantCode(t, w.Write(ctx, n, []byte("x")), artifacts.CodePermission)
	}
	want := map[string][]string{
		".": {".agentstore-notes.txt", "d"},
		"d": {".agentstore-notes.txt", ".agentstore-tmp-0123456789abcdef"},
	}
	for dir, names := range want {
		fis, err := w.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		var listed, read, each []string
		for _, fi := range fis {
			listed = append(listed, fi.Name())
		}
		ents, err := w.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			read = append(read, e.Name())
		}
		if err := w.EachEntry(dir, func(n []byte, _ fs.FileMode) { each = append(each, string(n)) }); err != nil {
			t.Fatal(err)
		}
		for call, got := range map[string][]string{"List": listed, "ReadDir": read, "EachEntry": each} {
			if !slices.Equal(got, names) {
				t.Errorf("%s(%q) = %q, want %q", call, dir, got, names)
			}
		}
	}
	res, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil || res.Files != 3 {
		t.Fatalf("snapshot %+v, %v: want the 3 files", res, err)
	}
}
