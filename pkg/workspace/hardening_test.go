package workspace

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// zipNames lists the entry names of a version of the session's snapshot.
func zipNames(t *testing.T, st *artifacts.Store, scope artifacts.Scope, version int64) []string {
	t.Helper()
	rd, err := st.Get(context.Background(), scope, SnapshotName, version)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rd)
	rd.Close()
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// countVersions returns how many versions of the snapshot the store holds.
func countVersions(t *testing.T, st *artifacts.Store, scope artifacts.Scope) int {
	t.Helper()
	page, err := st.ListVersions(context.Background(), scope, SnapshotName, artifacts.ListOptions{Limit: 1000})
	if artifacts.IsNotFound(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Items)
}

// Renaming a file onto itself (or onto another link to it) frees nothing,
// so it cannot be used to write past the total cap.
func TestRenameOntoItselfFreesNothing(t *testing.T) {
	ctx := context.Background()
	m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{Quota: Quota{TotalBytes: 1000}, Policy: SnapshotManual})
	w := mustOpen(t, m, sessionScope("rename"))
	if err := w.Write(ctx, "x", bytes.Repeat([]byte("a"), 900)); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(w.Path(), "x"), filepath.Join(w.Path(), "x-link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range [][2]string{{"x", "x"}, {"x", "./x"}, {"x", "sub/../x"}, {"x", "x-link"}, {"x-link", "x"}} {
		for range 10 {
			if err := w.Rename(ctx, tc[0], tc[1]); err != nil {
				t.Fatalf("Rename(%q, %q): %v", tc[0], tc[1], err)
			}
		}
	}
	// x and x-link are one file: the workspace still holds 2 x 900 bytes
	// by name, as measure counts it, and no rename freed any.
	if got := w.Quota().Usage; got != 900 {
		t.Fatalf("usage %d after self-renames, want 900", got)
	}
	err := w.Write(ctx, "more", bytes.Repeat([]byte("b"), 17_000))
	wantCode(t, err, artifacts.CodeQuotaExceeded)
	if _, err := os.Lstat(filepath.Join(w.Path(), "more")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused write left %v", err)
	}
	// A rename that does replace another file frees its bytes.
	if err := w.Write(ctx, "y", bytes.Repeat([]byte("c"), 50)); err != nil {
		t.Fatal(err)
	}
	if err := w.Rename(ctx, "y", "x"); err != nil {
		t.Fatal(err)
	}
	if got := w.Quota().Usage; got != 50 {
		t.Fatalf("usage %d after replacing x, want 50", got)
	}
}

// Names a snapshot cannot hold are refused by every confined call that
// creates one, with invalid_name, and leave nothing behind; so no write
// can make later snapshots fail.
func TestNamesSnapshotsCannotHoldAreRefused(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{Policy: SnapshotManual})
	scope := sessionScope("names")
	w := mustOpen(t, m, scope)
	if err := w.Write(ctx, "ok.txt", []byte("ok")); err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("d/", 128) + "f"
	bad := []string{"x:y", `dir\file.txt`, "a\tb", "c\u0085d", "e\x7ff", "bad\xffutf8", "sub/" + "g\x1b[2J", deep}
	before := dirState(t, w.Path())
	for _, name := range bad {
		calls := map[string]error{
			"Write":  w.Write(ctx, name, []byte("x")),
			"Append": w.Append(ctx, name, []byte("x")),
			"Mkdir":  w.Mkdir(ctx, name),
			"Rename": w.Rename(ctx, "ok.txt", name),
		}
		_, calls["WriteFrom"] = w.WriteFrom(ctx, name, strings.NewReader("x"))
		for call, err := range calls {
			if artifacts.CodeOf(err) != artifacts.CodeInvalidName {
				t.Errorf("%s(%q): %v, want invalid_name", call, name, err)
			}
		}
	}
	if after := dirState(t, w.Path()); after != before {
		t.Fatalf("refused names changed the tree:\n%s\n---\n%s", before, after)
	}
	// 128 levels are fine, as the zip writer's limit says.
	if err := w.Write(ctx, strings.Repeat("d/", 127)+"f", []byte("deep")); err != nil {
		t.Fatal(err)
	}
	res, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatalf("snapshot after the refusals: %v", err)
	}
	if res.Files != 2 {
		t.Fatalf("snapshot holds %d files", res.Files)
	}
}

// Only the index is reserved: names beginning with ".agentstore-" are the
// agent's, and a snapshot holds them at every depth.
func TestOnlyTheIndexIsReserved(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{Policy: SnapshotManual})
	scope := sessionScope("reserved")
	w := mustOpen(t, m, scope)
	for _, n := range []string{".agentstore-notes", "proj/.agentstore-notes", "proj/.agentstore-tmp-0123456789abcdef"} {
		if err := w.Write(ctx, n, []byte(n)); err != nil {
			t.Fatalf("Write(%q): %v", n, err)
		}
	}
	// Planted behind the API: an index-like name below the top is kept,
	// and listed like any other entry.
	mustWriteFile(t, filepath.Join(w.Path(), "proj", IndexName), "not the index", 0o600)
	fis, err := w.List("proj")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, fi := range fis {
		listed = append(listed, fi.Name())
	}
	if want := []string{".agentstore-index", ".agentstore-notes", ".agentstore-tmp-0123456789abcdef"}; !slices.Equal(listed, want) {
		t.Fatalf("List(proj) = %q, want %q", listed, want)
	}
	res, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".agentstore-notes", "proj/", "proj/.agentstore-index", "proj/.agentstore-notes", "proj/.agentstore-tmp-0123456789abcdef"}
	if got := zipNames(t, artifacts.NewStore(st), scope, res.Version); !slices.Equal(got, want) {
		t.Fatalf("snapshot holds %q, want %q", got, want)
	}
	for _, n := range []string{IndexName + "-0123456789abcdef", IndexName} {
		if IsReserved(n) != true || IsReserved("proj/"+n) {
			t.Errorf("IsReserved(%q) / below the top: wrong", n)
		}
	}
	if IsReserved(".agentstore-notes") || IsReserved(IndexName+"-xyz") {
		t.Error("IsReserved reserves too much")
	}
}

// A snapshot lists every entry it leaves out, with its kind.
func TestSnapshotReportsWhatItLeavesOut(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{Policy: SnapshotManual})
	scope := sessionScope("omitted")
	w := mustOpen(t, m, scope)
	if err := w.Write(ctx, "run-3/out.txt", []byte("result")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("run-3", filepath.Join(w.Path(), "latest")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(w.Path(), "run-3", "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Omission{{Path: "latest", Kind: "symlink"}, {Path: "run-3/pipe", Kind: "fifo"}}
	if !slices.Equal(res.Omitted, want) || res.Skipped != 2 {
		t.Fatalf("omitted %v (skipped %d), want %v", res.Omitted, res.Skipped, want)
	}
	if got := zipNames(t, artifacts.NewStore(st), scope, res.Version); !slices.Equal(got, []string{"run-3/", "run-3/out.txt"}) {
		t.Fatalf("snapshot holds %q", got)
	}
	// An unchanged tree reports them too.
	res, err = m.Snapshot(ctx, scope, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Unchanged || !slices.Equal(res.Omitted, want) {
		t.Fatalf("unchanged %t, omitted %v", res.Unchanged, res.Omitted)
	}
}

// A snapshot of the tree the latest version already holds writes nothing.
func TestUnchangedSnapshotWritesNothing(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{Policy: SnapshotManual})
	scope := sessionScope("unchanged")
	w := mustOpen(t, m, scope)
	if err := w.Write(ctx, "a.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	first, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil || first.Unchanged || first.Version != 1 {
		t.Fatalf("first snapshot %+v %v", first, err)
	}
	for i := range 3 {
		res, err := w.Snapshot(ctx, SnapshotOptions{})
		if err != nil || !res.Unchanged || res.Version != 1 || res.Files != 1 || res.Record.Digest != first.Record.Digest {
			t.Fatalf("snapshot %d of an unchanged tree: %+v %v", i, res, err)
		}
	}
	// Another process (a manager without the workspace open) agrees.
	m2 := newManager(t, artifacts.NewStore(st), Options{Scratch: m.Scratch()})
	if res, err := m2.Snapshot(ctx, scope, SnapshotOptions{}); err != nil || !res.Unchanged || res.Version != 1 {
		t.Fatalf("operator snapshot: %+v %v", res, err)
	}
	if n := countVersions(t, artifacts.NewStore(st), scope); n != 1 {
		t.Fatalf("%d versions, want 1", n)
	}
	// A changed tree is a new version; so is one a newer version (from
	// another replica) does not hold.
	if err := w.Write(ctx, "a.txt", []byte("b")); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil || res.Unchanged || res.Version != 2 {
		t.Fatalf("after a change: %+v %v", res, err)
	}
	if _, err := st.Put(ctx, scope, SnapshotName, strings.NewReader("other replica"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil || res.Unchanged || res.Version != 4 {
		t.Fatalf("after another replica's v3: %+v %v", res, err)
	}
	// A hydrated tree is unchanged until touched.
	m3 := newManager(t, artifacts.NewStore(st), Options{})
	w3 := mustOpen(t, m3, scope)
	if res, err := w3.Snapshot(ctx, SnapshotOptions{}); err != nil || !res.Unchanged || res.Version != 4 {
		t.Fatalf("snapshot of a hydrated tree: %+v %v", res, err)
	}
}

// Hydrate refuses to overwrite work no snapshot holds, lists it, and
// changes nothing; --force overwrites; HydrateTo restores elsewhere.
func TestHydrateRefusesToOverwriteUnsavedWork(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{Policy: SnapshotManual})
	scope := sessionScope("overwrite")
	w := mustOpen(t, m, scope)
	if err := w.Write(ctx, "a.txt", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "same.txt", []byte("same")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	// Saved work is never in the way: hydrating v1 over itself is fine.
	if _, err := w.Hydrate(ctx, 1, HydrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "a.txt", []byte("edited")); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "new/b.txt", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(w.Path(), "link")); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, w.Path())
	for _, hydrate := range []func() error{
		func() error { _, err := w.Hydrate(ctx, 1, HydrateOptions{}); return err },
		func() error {
			_, err := newManager(t, artifacts.NewStore(st), Options{Scratch: m.Scratch()}).Hydrate(ctx, scope, artifacts.Latest, HydrateOptions{})
			return err
		},
	} {
		err := hydrate()
		var oe *OverwriteError
		if !errors.As(err, &oe) || artifacts.CodeOf(err) != CodeWouldOverwrite {
			t.Fatalf("hydrate over unsaved work: %v", err)
		}
		want := []Loss{{"a.txt", "modified"}, {"link", "symlink"}, {"new", "new"}, {"new/b.txt", "new"}}
		if !slices.Equal(oe.Lost, want) || oe.Total != 4 || oe.Version != 1 {
			t.Fatalf("lost %v (total %d, v%d), want %v", oe.Lost, oe.Total, oe.Version, want)
		}
		if !strings.Contains(err.Error(), `"a.txt" modified`) {
			t.Errorf("message %q", err)
		}
		if after := dirState(t, w.Path()); after != before {
			t.Fatalf("a refused hydration changed the workspace:\n%s\n---\n%s", before, after)
		}
	}
	// --to: into a new directory, the workspace untouched.
	to := filepath.Join(t.TempDir(), "v1")
	res, err := m.HydrateTo(ctx, scope, 1, to, HydrateOptions{})
	if err != nil || res.Dir != to || res.Files != 2 {
		t.Fatalf("HydrateTo: %+v %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(to, "a.txt")); err != nil || string(b) != "v1" {
		t.Fatalf("restored a.txt: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(to, IndexName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("HydrateTo wrote an index: %v", err)
	}
	if after := dirState(t, w.Path()); after != before {
		t.Fatal("HydrateTo changed the workspace")
	}
	_, err = m.HydrateTo(ctx, scope, 1, to, HydrateOptions{})
	wantCode(t, err, artifacts.CodeConflict)
	_, err = m.HydrateTo(ctx, scope, 1, filepath.Join(to, "no", "parent"), HydrateOptions{})
	wantCode(t, err, artifacts.CodeNotFound)
	// Force overwrites.
	if _, err := w.Hydrate(ctx, 1, HydrateOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Path(), "a.txt")); string(b) != "v1" {
		t.Fatalf("a.txt %q after a forced hydration", b)
	}
}

// Work saved in a snapshot (not the one restored) is not in the way.
func TestHydrateOverSavedWork(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{Policy: SnapshotManual})
	scope := sessionScope("saved")
	w := mustOpen(t, m, scope)
	for _, data := range []string{"v1", "v2"} {
		if err := w.Write(ctx, "a.txt", []byte(data)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Hydrate(ctx, 1, HydrateOptions{}); err != nil {
		t.Fatalf("hydrating v1 over the tree saved as v2: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Path(), "a.txt")); string(b) != "v1" {
		t.Fatalf("a.txt %q", b)
	}
}

// A hydration checks what can fail before it replaces anything: an index
// that is a directory makes it fail with the workspace unchanged.
func TestHydrateChecksBeforeTheSwap(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{Policy: SnapshotManual})
	scope := sessionScope("swap")
	w := mustOpen(t, m, scope)
	if err := w.Write(ctx, "a.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	ix := filepath.Join(m.Scratch(), w.Dir(), IndexName)
	if err := os.Remove(ix); err != nil {
		t.Fatal(err)
	}
	mustWriteFile(t, filepath.Join(ix, "planted"), "x", 0o600)
	if err := os.Symlink("/etc", filepath.Join(ix, "etc")); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, m.Scratch())
	m2 := newManager(t, artifacts.NewStore(st), Options{Scratch: m.Scratch()})
	for _, force := range []bool{false, true} {
		_, err := m2.Hydrate(ctx, scope, 1, HydrateOptions{Force: force})
		wantCode(t, err, artifacts.CodeConflict)
		if !strings.Contains(err.Error(), "nothing was replaced") {
			t.Errorf("message %q", err)
		}
	}
	if after := dirState(t, m.Scratch()); after != before {
		t.Fatalf("a failed hydration changed the scratch root:\n%s\n---\n%s", before, after)
	}
}

// Debris of killed hydrations is removed after the grace period unless a
// running hydration holds it.
func TestCleanDebris(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	now := time.Now()
	m := newManager(t, artifacts.NewStore(st), Options{Now: func() time.Time { return now }})
	scratch := m.Scratch()
	busyDir, idleDir := DirName("a", "u", "busy"), DirName("a", "u", "idle")
	old := now.Add(-2 * time.Hour)
	made := map[string]bool{
		".agentstore-hydrate-" + idleDir + "-0123456789abcdef.zip": true,  // killed
		".agentstore-hydrate-0123456789abcdef.zip":                 true,  // older naming, killed
		"." + idleDir + ".zipsafe-new-42":                          true,  // killed
		"." + idleDir + ".zipsafe-old-43":                          true,  // killed
		".agentstore-hydrate-" + busyDir + "-fedcba9876543210.zip": false, // running
		"." + busyDir + ".zipsafe-new-44":                          false, // running
	}
	for n := range made {
		p := filepath.Join(scratch, n)
		if strings.HasSuffix(n, ".zip") {
			mustWriteFile(t, p, "zip", 0o600)
		} else {
			mustWriteFile(t, filepath.Join(p, "sub", "f"), "data", 0o600)
			if err := os.Chtimes(filepath.Join(p, "sub"), old, old); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	// The running hydration holds its archive's lock.
	f, err := os.Open(filepath.Join(scratch, ".agentstore-hydrate-"+busyDir+"-fedcba9876543210.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if held, err := osutil.TryLockExclusive(f); err != nil || !held {
		t.Fatal(held, err)
	}
	// A fresh one is within the grace period; a workspace is not debris.
	fresh := ".agentstore-hydrate-" + idleDir + "-1111111111111111.zip"
	mustWriteFile(t, filepath.Join(scratch, fresh), "zip", 0o600)
	mustOpen(t, m, sessionScope("ws"))

	dry, err := m.CleanDebris(ctx, time.Hour, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(dry) != len(made)+1 || slices.ContainsFunc(dry, func(d Debris) bool { return d.Removed }) {
		t.Fatalf("dry run: %+v", dry)
	}
	got, err := m.CleanDebris(ctx, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range got {
		want, ok := made[d.Name]
		if d.Name == fresh {
			want, ok = false, true
		}
		if !ok || d.Removed != want || d.InProgress == want || d.Err != nil {
			t.Errorf("%s: removed %t in progress %t err %v", d.Name, d.Removed, d.InProgress, d.Err)
		}
		_, err := os.Lstat(filepath.Join(scratch, d.Name))
		if gone := errors.Is(err, os.ErrNotExist); gone != want {
			t.Errorf("%s: gone %t, want %t", d.Name, gone, want)
		}
	}
	if _, err := os.Stat(filepath.Join(scratch, DirName("demo-a", "user-42", "ws"))); err != nil {
		t.Fatalf("the workspace: %v", err)
	}
}
