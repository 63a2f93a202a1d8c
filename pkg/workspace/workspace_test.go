package workspace

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

func TestDirName(t *testing.T) {
	// Fixed values, computed with printf and sha256sum: the names are on
	// disk, so they must never change.
	for _, c := range []struct{ got, want string }{
		{DirName("demo-a", "user-42", "session-7"), "0a6f0a1046a2b8c226b854ba3d5805a8"}, // sha256("agentstore-workspace/2\0demo-a\0user-42\0session-7")
		{LegacyDirName("user-42", "session-7"), "f40dd1bc04bfac53104a804a80d1a153"},     // sha256("user-42\0session-7")
	} {
		if c.got != c.want || !IsDirName(c.got) {
			t.Errorf("name %q, want %q", c.got, c.want)
		}
	}
	distinct := []string{
		DirName("demo-a", "user-42", "session-7"),
		DirName("victim", "user-42", "session-7"), // the app is bound
		DirName("demo-a", "user-42", "session-8"),
		DirName("ab", "c", "d"), DirName("a", "bc", "d"), DirName("a", "b", "cd"), // the separator separates
		LegacyDirName("user-42", "session-7"),
	}
	seen := map[string]bool{}
	for _, d := range distinct {
		if seen[d] {
			t.Errorf("collision: %s", d)
		}
		seen[d] = true
	}
}

// The Erlang fixture's workspace.zip (written by Erlang's zip module)
// hydrates into exactly notes/todo.md and by_region.csv.
func TestHydrateErlangFixture(t *testing.T) {
	root, err := testfixtures.CopyFSStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, artifacts.NewStore(st), Options{})
	scope := artifacts.SessionScope("demo-a", "user-42", "session-7")
	w := mustOpen(t, m, scope) // first touch hydrates the latest snapshot
	if w.Index().SnapshotVersion != 1 {
		t.Fatalf("index snapshot version %d, want 1", w.Index().SnapshotVersion)
	}
	got := readTree(t, w.Path())
	want := []string{"by_region.csv", "notes/", "notes/todo.md"}
	if !slices.Equal(keys(got), want) {
		t.Fatalf("hydrated tree %v, want %v", keys(got), want)
	}
	for name, e := range got {
		if !e.Dir && e.Data == "" {
			t.Errorf("%s is empty", name)
		}
	}
	fis, err := w.List(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range fis {
		names = append(names, fi.Name())
	}
	if !slices.Equal(names, []string{"by_region.csv", "notes"}) {
		t.Fatalf("List(.) = %v", names)
	}
	// Hydrating explicitly gives the same.
	res, err := m.Hydrate(context.Background(), scope, 1, HydrateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 2 || res.Version != 1 {
		t.Fatalf("hydrate result %+v", res)
	}
	if !slices.Equal(keys(readTree(t, w.Path())), want) {
		t.Fatal("tree changed")
	}
	lines, err := w.ReadLines("notes/todo.md", 0, 10)
	if err != nil || len(lines.Lines) == 0 {
		t.Fatalf("ReadLines: %v %v", lines, err)
	}
}

// A tree with nested directories, empty files, non-ASCII names and an
// executable file snapshots and hydrates to the same tree; a second
// snapshot makes version 2.
func TestSnapshotRoundTrip(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	a := newManager(t, artifacts.NewStore(st), Options{})
	b := newManager(t, artifacts.NewStore(st), Options{})
	scope := sessionScope("round-trip")
	w := mustOpen(t, a, scope)
	dir := w.Path()
	mustWriteFile(t, filepath.Join(dir, "a/b/c/deep.txt"), "deep\n", 0o644)
	mustWriteFile(t, filepath.Join(dir, "empty.txt"), "", 0o600)
	mustWriteFile(t, filepath.Join(dir, "données/résumé ü.md"), "# résumé\n", 0o644)
	mustWriteFile(t, filepath.Join(dir, "用户/日志.txt"), "日志\n", 0o600)
	mustWriteFile(t, filepath.Join(dir, "bin/run.sh"), "#!/bin/sh\necho hi\n", 0o755)
	if err := os.MkdirAll(filepath.Join(dir, "empty-dir/inner"), 0o700); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	if err := w.Write(ctx, "data/big.bin", big); err != nil {
		t.Fatal(err)
	}
	want := readTree(t, dir)
	res, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 1 || res.Files != 6 || res.Record.MIMEType != SnapshotMIMEType || res.Record.Name != SnapshotName {
		t.Fatalf("snapshot %+v", res)
	}
	wb := mustOpen(t, b, scope) // first touch on b hydrates v1
	got := readTree(t, wb.Path())
	if !mapsEqual(got, want) {
		t.Fatalf("hydrated tree differs:\n got %v\nwant %v", keys(got), keys(want))
	}
	if !got["bin/run.sh"].Exec || got["empty.txt"].Exec {
		t.Fatal("exec bit not kept")
	}
	if err := wb.Write(ctx, "second.txt", []byte("2")); err != nil {
		t.Fatal(err)
	}
	res2, err := wb.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Version != 2 {
		t.Fatalf("second snapshot is v%d", res2.Version)
	}
	// Hydrating v1 on a brings back v1 exactly; the index is kept.
	before := w.Index()
	if _, err := w.Hydrate(ctx, 1, HydrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !mapsEqual(readTree(t, dir), want) {
		t.Fatal("v1 hydrate differs")
	}
	if ix := w.Index(); ix.Created != before.Created || ix.SnapshotVersion != 1 {
		t.Fatalf("index after hydrate %+v", ix)
	}
	if _, err := w.Hydrate(ctx, artifacts.Latest, HydrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Stat("second.txt"); err != nil {
		t.Fatalf("latest hydrate: %v", err)
	}
}

func mapsEqual(a, b map[string]treeEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The worked example, end to end: two pods (managers on two scratch roots)
// share one store.
func TestWorkedExample(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	scope := sessionScope("session-worked")
	quota := Quota{TurnBytes: 10_000_000}

	// Turn one on pod A: write a result and snapshot (v1).
	scratchA := t.TempDir()
	a, err := New(Options{Scratch: scratchA, Store: artifacts.NewStore(st), Quota: quota})
	if err != nil {
		t.Fatal(err)
	}
	wa := mustOpen(t, a, scope)
	if err := wa.BeginTurn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wa.Write(ctx, "results/by_region.csv", []byte("region,total\nemea,42\n")); err != nil {
		t.Fatal(err)
	}
	snap, err := wa.EndTurn(ctx)
	if err != nil || snap == nil || snap.Version != 1 {
		t.Fatalf("end of turn one: %+v, %v", snap, err)
	}
	// Pod A is evicted: its directory is gone.
	a.Close()
	if err := os.RemoveAll(filepath.Join(scratchA, DirName(scope.App, scope.User, scope.Session))); err != nil {
		t.Fatal(err)
	}

	// Turn two on pod B: first touch hydrates v1.
	b := newManager(t, artifacts.NewStore(st), Options{Quota: quota})
	wb := mustOpen(t, b, scope)
	if err := wb.BeginTurn(ctx); err != nil {
		t.Fatal(err)
	}
	lines, err := wb.ReadLines("results/by_region.csv", 1, 5)
	if err != nil || !slices.Equal(lines.Lines, []string{"emea,42"}) {
		t.Fatalf("turn two sees %v, %v", lines, err)
	}
	report := "# Report\n\nEMEA: 42\n"
	if err := wb.Write(ctx, "report.md", []byte(report)); err != nil {
		t.Fatal(err)
	}
	snap, err = wb.EndTurn(ctx)
	if err != nil || snap == nil || snap.Version != 2 {
		t.Fatalf("end of turn two: %+v, %v", snap, err)
	}
	rec, err := wb.Promote(ctx, "report.md", PromoteOptions{Name: "deliverables/report.md"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Scope != scope || rec.Version != 1 || rec.Size != int64(len(report)) || rec.MIMEType != "text/markdown; charset=utf-8" {
		t.Fatalf("deliverable %+v", rec)
	}
	rd, err := st.Get(ctx, scope, "deliverables/report.md", artifacts.Latest)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rd); err != nil || buf.String() != report {
		t.Fatalf("deliverable bytes %q, %v", buf.String(), err)
	}
	rd.Close()

	// Turn three: 900 KB files under a 10 MB per-turn allowance (the
	// directory chunks costs DirBytes of it); the twelfth write is
	// refused with the allowance left, writing nothing.
	if err := wb.BeginTurn(ctx); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 900_000)
	for i := 1; i <= 12; i++ {
		name := "chunks/part-" + string(rune('a'+i-1)) + ".bin"
		err := wb.Write(ctx, name, chunk)
		if i <= 11 {
			if err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
			continue
		}
		wantCode(t, err, artifacts.CodeQuotaExceeded)
		var ae *artifacts.Error
		if !errors.As(err, &ae) || ae.Remaining != 10_000_000-11*900_000-DirBytes {
			t.Fatalf("write 12: remaining %d, want %d (%v)", ae.Remaining, 10_000_000-11*900_000-DirBytes, err)
		}
		if _, serr := wb.Stat(name); artifacts.CodeOf(serr) != artifacts.CodeNotFound {
			t.Fatalf("the refused write left %s: %v", name, serr)
		}
		// No temporary file either.
		ents, _ := os.ReadDir(filepath.Join(wb.Path(), "chunks"))
		if len(ents) != 11 {
			t.Fatalf("chunks holds %d entries, want 11", len(ents))
		}
		// The stream variant is refused the same way, removing its temp.
		_, err = wb.WriteFrom(ctx, name, bytes.NewReader(chunk))
		wantCode(t, err, artifacts.CodeQuotaExceeded)
		ents, _ = os.ReadDir(filepath.Join(wb.Path(), "chunks"))
		if len(ents) != 11 {
			t.Fatalf("chunks holds %d entries after WriteFrom, want 11", len(ents))
		}
	}
	if q := wb.Quota(); q.TurnUsed != 11*900_000+DirBytes || q.Remaining != 100_000-DirBytes {
		t.Fatalf("quota %+v", q)
	}
	// A new turn resets the allowance.
	if err := wb.BeginTurn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wb.Write(ctx, "chunks/part-l.bin", chunk); err != nil {
		t.Fatal(err)
	}
}

func TestTotalQuota(t *testing.T) {
	ctx := context.Background()
	m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{Quota: Quota{TotalBytes: 1000 + DirBytes}})
	w := mustOpen(t, m, sessionScope("total"))
	// A directory costs DirBytes: the files below share 1000 bytes.
	if err := w.Mkdir(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "a", make([]byte, 600)); err != nil {
		t.Fatal(err)
	}
	// Replacing a holds 700, fine; adding b would make 1100.
	if err := w.Write(ctx, "a", make([]byte, 700)); err != nil {
		t.Fatal(err)
	}
	err := w.Write(ctx, "b", make([]byte, 400))
	wantCode(t, err, artifacts.CodeQuotaExceeded)
	var ae *artifacts.Error
	errors.As(err, &ae)
	if ae.Remaining != 300 {
		t.Fatalf("remaining %d, want 300", ae.Remaining)
	}
	err = w.Append(ctx, "a", make([]byte, 301))
	wantCode(t, err, artifacts.CodeQuotaExceeded)
	if fi, _ := w.Stat("a"); fi.Size() != 700 {
		t.Fatalf("a has %d bytes", fi.Size())
	}
	// A refused append to a new file leaves no file behind.
	wantCode(t, w.Append(ctx, "new", make([]byte, 301)), artifacts.CodeQuotaExceeded)
	if _, err := w.Stat("new"); !artifacts.IsNotFound(err) {
		t.Fatalf("after a refused append, stat of the new file: %v", err)
	}
	// Nor does a refused write, streamed write or append leave the
	// directories it made for the file; one that was there stays.
	before := readTree(t, w.Path())
	wantCode(t, w.Write(ctx, "d1/d2/f", make([]byte, 301)), artifacts.CodeQuotaExceeded)
	_, err = w.WriteFrom(ctx, "r1/r2/f", bytes.NewReader(make([]byte, 301)))
	wantCode(t, err, artifacts.CodeQuotaExceeded)
	wantCode(t, w.Append(ctx, "e1/e2/f", make([]byte, 301)), artifacts.CodeQuotaExceeded)
	wantCode(t, w.Write(ctx, "keep/new/f", make([]byte, 301)), artifacts.CodeQuotaExceeded)
	if got := readTree(t, w.Path()); !maps.Equal(got, before) {
		t.Fatalf("after refused writes the workspace holds %v, want %v", keys(got), keys(before))
	}
	if err := w.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "b", make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
}

// TestWriteParentsFail: a write or append whose directory cannot be
// made, because a file stands where a directory would go, fails with
// CodeInvalidArgument, as it did with MkdirAll (not an I/O error naming
// the host path), and changes nothing.
func TestWriteParentsFail(t *testing.T) {
	ctx := context.Background()
	m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{})
	w := mustOpen(t, m, sessionScope("parents"))
	if err := w.Write(ctx, "file.txt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	before := readTree(t, w.Path())
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"write two below a file", func() error { return w.Write(ctx, "file.txt/sub/f", []byte("y")) }},
		{"write below a file", func() error { return w.Write(ctx, "file.txt/f", []byte("y")) }},
		{"append two below a file", func() error { return w.Append(ctx, "file.txt/sub/f", []byte("y")) }},
		{"append below a file", func() error { return w.Append(ctx, "file.txt/f", []byte("y")) }},
	} {
		err := c.call()
		if artifacts.CodeOf(err) != artifacts.CodeInvalidArgument || strings.Contains(err.Error(), w.Path()) {
			t.Errorf("%s: %v, want %s without the host path", c.name, err, artifacts.CodeInvalidArgument)
		}
		if got := readTree(t, w.Path()); !maps.Equal(got, before) {
			t.Errorf("%s: the workspace holds %v, want %v", c.name, keys(got), keys(before))
		}
	}
}

// TestRefusedWriteDirsBusy: a write refused because a directory it
// makes is over the entry limit removes the directories it made, also
// while another call is in the workspace (every change holds the
// ledger's change lock, so nothing else can have entered them).
func TestRefusedWriteDirsBusy(t *testing.T) {
	ctx := context.Background()
	m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{Quota: Quota{MaxEntries: 2}})
	w := mustOpen(t, m, sessionScope("busy"))
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := w.WriteFrom(ctx, "streamed", pr)
		done <- err
	}()
	if _, err := pw.Write([]byte("first")); err != nil { // the streamed write is in the workspace now
		t.Fatal(err)
	}
	err := w.Write(ctx, "d1/d2/d3/f", []byte("x"))
	wantCode(t, err, artifacts.CodeQuotaExceeded)
	var qe *QuotaExceeded
	if !errors.As(err, &qe) || qe.Limit != LimitEntries {
		t.Fatalf("refusal %v, want limit entries", err)
	}
	if _, err := os.Stat(filepath.Join(w.Path(), "d1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("while another call ran, the refused write's directory: %v", err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if q := w.Quota(); q.Files != 1 || q.Dirs != 0 || q.Usage != 5 {
		t.Fatalf("ledger %+v, want the streamed file only", q)
	}
}

func TestSnapshotOnWrite(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{Policy: SnapshotOnWrite})
	scope := sessionScope("on-write")
	w := mustOpen(t, m, scope)
	for i, name := range []string{"one.txt", "two.txt"} {
		if err := w.Write(ctx, name, []byte(name)); err != nil {
			t.Fatal(err)
		}
		rec, err := st.Stat(ctx, scope, SnapshotName, artifacts.Latest)
		if err != nil || rec.Version != int64(i+1) {
			t.Fatalf("after write %d: %+v %v", i+1, rec, err)
		}
	}
	// A second pod sees both files on first touch.
	b := newManager(t, artifacts.NewStore(st), Options{})
	wb := mustOpen(t, b, scope)
	got := readTree(t, wb.Path())
	if !slices.Equal(keys(got), []string{"one.txt", "two.txt"}) {
		t.Fatalf("pod b sees %v", keys(got))
	}
	if snap, err := wb.EndTurn(ctx); err != nil || snap != nil {
		t.Fatalf("EndTurn without changes: %+v %v", snap, err)
	}
}

func TestConfinedAPI(t *testing.T) {
	ctx := context.Background()
	m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{})
	w := mustOpen(t, m, sessionScope("confined"))
	if err := w.Mkdir(ctx, "d/e"); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "d/e/f.txt", []byte("l0\nl1\r\nl2\nl3")); err != nil {
		t.Fatal(err)
	}
	l, err := w.ReadLines("d/e/f.txt", 1, 2)
	if err != nil || !slices.Equal(l.Lines, []string{"l1", "l2"}) || !l.More || l.Next != 3 {
		t.Fatalf("ReadLines = %+v, %v", l, err)
	}
	l, err = w.ReadLines("d/e/f.txt", 3, 5)
	if err != nil || !slices.Equal(l.Lines, []string{"l3"}) || l.More {
		t.Fatalf("ReadLines tail = %+v, %v", l, err)
	}
	if err := w.Append(ctx, "d/e/f.txt", []byte("\nl4\n")); err != nil {
		t.Fatal(err)
	}
	if err := w.Rename(ctx, "d/e/f.txt", "g.txt"); err != nil {
		t.Fatal(err)
	}
	f, err := w.Open("g.txt")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(f)
	f.Close()
	if buf.String() != "l0\nl1\r\nl2\nl3\nl4\n" {
		t.Fatalf("g.txt = %q", buf.String())
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a\x00b", "."} {
		if err := w.Write(ctx, bad, []byte("x")); err == nil {
			t.Errorf("Write(%q) succeeded", bad)
		}
	}
	if _, err := w.Open("../../etc/passwd"); err == nil {
		t.Fatal("escaped with ..")
	}
	// A symbolic link planted by the agent does not lead outside.
	outside := t.TempDir()
	mustWriteFile(t, filepath.Join(outside, "secret"), "SECRET", 0o600)
	if err := os.Symlink(outside, filepath.Join(w.Path(), "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(w.Path(), "sec")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Open("out/secret"); err == nil {
		t.Fatal("read through a symlink to outside")
	}
	if _, err := w.Open("sec"); err == nil {
		t.Fatal("read a final symlink")
	}
	if err := w.Write(ctx, "out/new", []byte("x")); err == nil {
		t.Fatal("wrote through a symlink to outside")
	}
	if _, err := w.List("out"); err == nil {
		t.Fatal("listed through a symlink")
	}
	if err := w.Append(ctx, "sec", []byte("x")); err == nil {
		t.Fatal("appended through a final symlink")
	}
	// Write replaces the link itself, not its target.
	if err := w.Write(ctx, "sec", []byte("mine")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "SECRET" {
		t.Fatal("the outside file changed")
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Fatal("a file appeared outside")
	}
	// Remove of the link removes the link.
	if err := w.Remove(ctx, "out"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatal(err)
	}
	if err := w.RemoveAll(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	fis, _ := w.List(".")
	var names []string
	for _, fi := range fis {
		names = append(names, fi.Name())
	}
	if !slices.Equal(names, []string{"g.txt", "sec"}) {
		t.Fatalf("List = %v", names)
	}
	// A snapshot skips symbolic links instead of failing.
	if err := os.Symlink("g.txt", filepath.Join(w.Path(), "link")); err != nil {
		t.Fatal(err)
	}
	res, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil || res.Skipped != 1 || res.Files != 2 {
		t.Fatalf("snapshot %+v, %v", res, err)
	}
}

func TestReference(t *testing.T) {
	dir := t.TempDir()
	mustWriteFile(t, filepath.Join(dir, "docs/guide.md"), "a\nb\nc\n", 0o644)
	outside := t.TempDir()
	mustWriteFile(t, filepath.Join(outside, "secret"), "S", 0o600)
	os.Symlink(outside, filepath.Join(dir, "out"))
	m := newManager(t, nil, Options{Reference: dir})
	ref := m.Reference()
	l, err := ref.ReadLines("docs/guide.md", 1, 1)
	if err != nil || !slices.Equal(l.Lines, []string{"b"}) {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := ref.Open("out/secret"); err == nil {
		t.Fatal("reference read through a symlink to outside")
	}
	if _, err := ref.Stat("docs"); err != nil {
		t.Fatal(err)
	}
	fis, err := ref.List(".")
	if err != nil || len(fis) != 2 {
		t.Fatalf("%v %v", fis, err)
	}
	f, err := ref.Open("docs/guide.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// *File has no write method; the descriptor is read-only too.
	var x any = f
	if _, ok := x.(interface{ Write([]byte) (int, error) }); ok {
		t.Fatal("reference File can write")
	}
}

func TestHydrateErrors(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{})
	_, err := m.Hydrate(ctx, sessionScope("none"), artifacts.Latest, HydrateOptions{})
	wantCode(t, err, artifacts.CodeNotFound)
	_, err = m.Hydrate(ctx, artifacts.UserScope("a", "u"), artifacts.Latest, HydrateOptions{})
	wantCode(t, err, artifacts.CodeInvalidScope)
	_, err = m.Snapshot(ctx, sessionScope("none"), SnapshotOptions{})
	wantCode(t, err, artifacts.CodeNotFound)
	// A snapshot that is not a zip is refused; the tree stays.
	scope := sessionScope("corrupt")
	w := mustOpen(t, m, scope)
	w.Write(ctx, "keep.txt", []byte("keep"))
	if _, err := st.Put(ctx, scope, SnapshotName, strings.NewReader("not a zip"), artifacts.PutOptions{MIMEType: SnapshotMIMEType}); err != nil {
		t.Fatal(err)
	}
	_, err = w.Hydrate(ctx, artifacts.Latest, HydrateOptions{})
	wantCode(t, err, artifacts.CodeCorrupt)
	if _, err := w.Stat("keep.txt"); err != nil {
		t.Fatal(err)
	}
	// No temporary file is left in the scratch root.
	ents, _ := os.ReadDir(m.Scratch())
	if len(ents) != 1 {
		t.Fatalf("scratch root holds %d entries", len(ents))
	}
}
