package adkfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
)

const latest = artifacts.Latest

var (
	session = artifacts.SessionScope("default", "u1", "s1")
	user    = artifacts.UserScope("default", "u1")
)

func open(t *testing.T, root string, opts adkfile.Options) *adkfile.Store {
	t.Helper()
	st, err := adkfile.Open(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func put(t *testing.T, st *adkfile.Store, scope artifacts.Scope, name, data string) artifacts.Record {
	t.Helper()
	rec, err := st.Put(t.Context(), scope, name, strings.NewReader(data), artifacts.PutOptions{MIMEType: "text/plain", Metadata: artifacts.Metadata{}})
	if err != nil {
		t.Fatalf("put %s %q: %v", scope, name, err)
	}
	return rec
}

func read(t *testing.T, st *adkfile.Store, scope artifacts.Scope, name string, v int64) string {
	t.Helper()
	r, err := st.Get(t.Context(), scope, name, v)
	if err != nil {
		t.Fatalf("get %q v%d: %v", name, v, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %q v%d: %v", name, v, err)
	}
	return string(b)
}

func wantCode(t *testing.T, err error, code artifacts.Code, what string) {
	t.Helper()
	if got := artifacts.CodeOf(err); got != code {
		t.Errorf("%s: code %q (%v), want %q", what, got, err, code)
	}
}

// TestRoundTrip: in both trees, versions number from 0, the latest is
// the highest, metadata.json is ADK's, a delete of the highest hands its
// number out again, and deleting every version removes the name's
// directories.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		variant adkfile.Variant
		dir     string // the session scope's artifacts/ below the root
	}{
		{adkfile.VariantApps, "apps/default/users/u1/sessions/s1/artifacts"},
		{adkfile.VariantUsers, "users/u1/sessions/s1/artifacts"},
	} {
		t.Run(tc.variant.String(), func(t *testing.T) {
			root := t.TempDir()
			st := open(t, root, adkfile.Options{NewVariant: tc.variant})
			for i := range 3 {
				if rec := put(t, st, session, "docs/a b.txt", fmt.Sprint("v", i)); rec.Version != int64(i) || rec.Size != 2 || rec.Digest != "" {
					t.Errorf("put %d: %+v", i, rec)
				}
			}
			if got := read(t, st, session, "docs/a b.txt", latest); got != "v2" {
				t.Errorf("latest = %q", got)
			}
			if got := read(t, st, session, "docs/a b.txt", 0); got != "v0" {
				t.Errorf("v0 = %q", got)
			}
			b, err := os.ReadFile(filepath.Join(root, tc.dir, "docs/a b.txt/versions/1/metadata.json"))
			if err != nil {
				t.Fatal(err)
			}
			want := `{
  "fileName": "docs/a b.txt",
  "mimeType": "text/plain",
  "version": 1,
  "canonicalUri": "file://` + filepath.ToSlash(root) + "/" + tc.dir + `/docs/a%20b.txt/versions/1/a%20b.txt"`
			if !strings.HasPrefix(string(b), want) {
				t.Errorf("metadata.json:\n%s\nwant it to start with\n%s", b, want)
			}
			if hasCreate := strings.Contains(string(b), `"createTime"`); hasCreate != (tc.variant == adkfile.VariantApps) {
				t.Errorf("createTime in %s metadata.json: %v", tc.variant, hasCreate)
			}
			recs, err := st.Delete(t.Context(), session, "docs/a b.txt", artifacts.Selector{Kind: artifacts.SelectLatest})
			if err != nil || len(recs) != 1 || recs[0].Version != 2 {
				t.Fatalf("delete latest: %v %+v", err, recs)
			}
			if rec := put(t, st, session, "docs/a b.txt", "again"); rec.Version != 2 {
				t.Errorf("put after deleting v2 got v%d, want 2 (ADK reuses the number)", rec.Version)
			}
			if _, err := st.Delete(t.Context(), session, "docs/a b.txt", artifacts.Selector{Kind: artifacts.SelectAll}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(root, tc.dir, "docs")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the name's directories survive deleting every version: %v", err)
			}
			wantCode(t, errOf(st.Stat(t.Context(), session, "docs/a b.txt", latest)), artifacts.CodeNotFound, "stat after deleting all")
			rec := put(t, st, user, "user:prefs.json", "{}")
			if _, err := os.Stat(filepath.Join(root, strings.TrimSuffix(tc.dir, "sessions/s1/artifacts"), "artifacts/prefs.json/versions/0/prefs.json")); err != nil || rec.Name != "user:prefs.json" {
				t.Errorf("user-scope put: %+v, %v", rec, err)
			}
		})
	}
}

func errOf[T any](_ T, err error) error { return err }

// TestNames: names ADK would put elsewhere or could not tell apart are
// refused before anything is written.
func TestNames(t *testing.T) {
	tests := []struct {
		scope artifacts.Scope
		name  string
		code  artifacts.Code
	}{
		{user, "prefs.json", artifacts.CodeInvalidName},
		{session, "user:prefs.json", artifacts.CodeInvalidName},
		{user, "user:", artifacts.CodeInvalidName},
		{session, "a/versions/b", artifacts.CodeInvalidName},
		{session, "versions", artifacts.CodeInvalidName},
		{session, "x/metadata.json", artifacts.CodeInvalidName},
		{session, strings.Repeat("n", 256), artifacts.CodeInvalidName},
		{session, "a\\b", artifacts.CodeInvalidName},
		{artifacts.SessionScope("default", "a/b", "s"), "x", artifacts.CodeInvalidScope},
		{artifacts.SessionScope("default", "u", ".."), "x", artifacts.CodeInvalidScope},
		{artifacts.SessionScope("default", strings.Repeat("u", 256), "s"), "x", artifacts.CodeInvalidScope},
	}
	root := t.TempDir()
	st := open(t, root, adkfile.Options{})
	for _, tt := range tests {
		_, err := st.Put(t.Context(), tt.scope, tt.name, strings.NewReader("x"), artifacts.PutOptions{MIMEType: "text/plain"})
		wantCode(t, err, tt.code, fmt.Sprintf("put %s %.40q", tt.scope, tt.name))
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("refused puts left %v behind", entries)
	}
	// Long names of short segments are fine.
	long := strings.Repeat("abcdefgh/", 113) + "end"
	put(t, st, session, long, "deep")
	if got := read(t, st, session, long, latest); got != "deep" {
		t.Errorf("deep name read %q", got)
	}
}

// TestStoreApp: a users/ store holds the scopes of its store app only.
func TestStoreApp(t *testing.T) {
	root := t.TempDir()
	st := open(t, root, adkfile.Options{NewVariant: adkfile.VariantUsers, App: "web"})
	put(t, st, artifacts.SessionScope("web", "u1", "s1"), "a.txt", "a")
	other := artifacts.SessionScope("default", "u1", "s1")
	_, err := st.ListNames(t.Context(), other, artifacts.ListOptions{})
	wantCode(t, err, artifacts.CodeNotFound, "list names of another app")
	if err == nil || !strings.Contains(err.Error(), `holds the scopes of app "web" only`) {
		t.Errorf("list names of another app: %v", err)
	}
	wantCode(t, errOf(st.Put(t.Context(), other, "b.txt", strings.NewReader("b"), artifacts.PutOptions{MIMEType: "text/plain"})), artifacts.CodeInvalidScope, "put into another app")
	// Opened again with the default app: the same tree, other scopes.
	st2 := open(t, root, adkfile.Options{})
	if st2.Variant() != adkfile.VariantUsers {
		t.Fatalf("variant %v", st2.Variant())
	}
	scopes, err := st2.ListScopes(t.Context())
	if err != nil || len(scopes) != 1 || scopes[0] != other {
		t.Errorf("scopes with the default store app: %v %v", scopes, err)
	}
}

// TestConcurrentPuts: writers in parallel on one name each get a
// distinct version, and every version reads back its own bytes.
func TestConcurrentPuts(t *testing.T) {
	st := open(t, t.TempDir(), adkfile.Options{})
	const writers, each = 8, 10
	var wg sync.WaitGroup
	got := make(chan artifacts.Record, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				rec, err := st.Put(t.Context(), session, "race.bin", strings.NewReader(fmt.Sprintf("w%d-%d", w, i)), artifacts.PutOptions{MIMEType: "text/plain"})
				if err != nil {
					t.Error(err)
					return
				}
				got <- rec
			}
		})
	}
	wg.Wait()
	close(got)
	seen := map[int64]bool{}
	for rec := range got {
		if seen[rec.Version] {
			t.Errorf("version %d handed out twice", rec.Version)
		}
		seen[rec.Version] = true
	}
	page, err := st.ListVersions(t.Context(), session, "race.bin", artifacts.ListOptions{Limit: 1000})
	if err != nil || len(page.Items) != writers*each {
		t.Fatalf("listed %d versions, %v; want %d", len(page.Items), err, writers*each)
	}
	for _, rec := range page.Items {
		if b := read(t, st, session, "race.bin", rec.Version); !strings.HasPrefix(b, "w") {
			t.Errorf("v%d holds %q", rec.Version, b)
		}
	}
}

// TestNumbering: the next number counts version directories ADK JS left
// without metadata.json and pending directories of other writers.
func TestNumbering(t *testing.T) {
	root := t.TempDir()
	st := open(t, root, adkfile.Options{NewVariant: adkfile.VariantUsers})
	vdir := filepath.Join(root, "users/u1/sessions/s1/artifacts/n.txt/versions")
	if err := os.MkdirAll(filepath.Join(vdir, "0"), 0o755); err != nil { // killed JS save
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(vdir, ".1.pending"), 0o755); err != nil { // a writer under way
		t.Fatal(err)
	}
	if rec := put(t, st, session, "n.txt", "x"); rec.Version != 2 {
		t.Errorf("put got v%d, want 2", rec.Version)
	}
	err := errOf(st.Stat(t.Context(), session, "n.txt", 0))
	wantCode(t, err, artifacts.CodeNotFound, "stat of a version without metadata.json")
	if want := `name "n.txt" v0: `; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("stat of v0: %v, want the message to name %s", err, want)
	}
	page, err := st.ListVersions(t.Context(), session, "n.txt", artifacts.ListOptions{})
	if err != nil || len(page.Items) != 1 || page.Items[0].Version != 2 {
		t.Errorf("versions %+v, %v", page.Items, err)
	}
}

// TestTooLargeAndCanceled: a refused put leaves nothing behind.
func TestTooLargeAndCanceled(t *testing.T) {
	root := t.TempDir()
	st := open(t, root, adkfile.Options{MaxArtifactBytes: 10})
	wantCode(t, errOf(st.Put(t.Context(), session, "big", bytes.NewReader(make([]byte, 11)), artifacts.PutOptions{MIMEType: "text/plain"})), artifacts.CodeTooLarge, "put of 11 bytes past 10")
	vdir := filepath.Join(root, "apps/default/users/u1/sessions/s1/artifacts/big/versions")
	if entries, err := os.ReadDir(vdir); err != nil || len(entries) != 0 {
		t.Errorf("a refused put left %v (%v)", entries, err)
	}
	ctx, cancel := contextCanceled(t)
	cancel()
	wantCode(t, errOf(st.Put(ctx, session, "big", strings.NewReader("x"), artifacts.PutOptions{MIMEType: "text/plain"})), artifacts.CodeCanceled, "put with a canceled context")
	if entries, err := os.ReadDir(vdir); err != nil || len(entries) != 0 {
		t.Errorf("a canceled put left %v (%v)", entries, err)
	}
}

// TestHostile: what a hostile or damaged tree holds neither crashes,
// hangs nor reads outside the root: each is a problem of its version, or
// a foreign entry, and the rest of the store still lists.
func TestHostile(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("outside the root"), 0o644); err != nil {
		t.Fatal(err)
	}
	const art = "users/u1/sessions/s1/artifacts"
	meta := func(name string, v int) string {
		return fmt.Sprintf(`{"fileName": %q, "version": %d}`, name, v)
	}
	tests := []struct {
		name  string
		plant func(t *testing.T, root string) // plants the damage
		path  string                          // the problem's path, below the root
		code  artifacts.Code
	}{
		{"metadata.json is a directory", func(t *testing.T, root string) {
			mkdir(t, root, art+"/x.txt/versions/0/metadata.json")
			write(t, root, art+"/x.txt/versions/0/x.txt", "x")
		}, art + "/x.txt/versions/0", artifacts.CodeUnsafeStore},
		{"metadata.json of 100 MB", func(t *testing.T, root string) {
			write(t, root, art+"/x.txt/versions/0/x.txt", "x")
			f, err := os.Create(filepath.Join(root, art, "x.txt/versions/0/metadata.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(100 << 20); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}, art + "/x.txt/versions/0", artifacts.CodeCorrupt},
		{"metadata.json not JSON", func(t *testing.T, root string) {
			write(t, root, art+"/x.txt/versions/0/x.txt", "x")
			write(t, root, art+"/x.txt/versions/0/metadata.json", "{not json")
		}, art + "/x.txt/versions/0", artifacts.CodeCorrupt},
		{"metadata.json of another version", func(t *testing.T, root string) {
			write(t, root, art+"/x.txt/versions/0/x.txt", "x")
			write(t, root, art+"/x.txt/versions/0/metadata.json", meta("x.txt", 3))
		}, art + "/x.txt/versions/0", artifacts.CodeCorrupt},
		{"metadata.json of another name", func(t *testing.T, root string) {
			write(t, root, art+"/x.txt/versions/0/x.txt", "x")
			write(t, root, art+"/x.txt/versions/0/metadata.json", meta("y.txt", 0))
		}, art + "/x.txt/versions/0", artifacts.CodeCorrupt},
		{"payload missing", func(t *testing.T, root string) {
			write(t, root, art+"/x.txt/versions/0/metadata.json", meta("x.txt", 0))
		}, art + "/x.txt/versions/0", artifacts.CodeCorrupt},
		{"metadata.json links outside", func(t *testing.T, root string) {
			write(t, root, art+"/x.txt/versions/0/x.txt", "x")
			symlink(t, outside, root, art+"/x.txt/versions/0/metadata.json")
		}, art + "/x.txt/versions/0", artifacts.CodeUnsafeStore},
		{"payload links outside", func(t *testing.T, root string) {
			write(t, root, art+"/x.txt/versions/0/metadata.json", meta("x.txt", 0))
			symlink(t, outside, root, art+"/x.txt/versions/0/x.txt")
		}, art + "/x.txt/versions/0", artifacts.CodeUnsafeStore},
		{"payload is a named pipe", func(t *testing.T, root string) {
			write(t, root, art+"/x.txt/versions/0/metadata.json", meta("x.txt", 0))
			mkdir(t, root, art+"/x.txt/versions/0")
			if err := syscall.Mkfifo(filepath.Join(root, art, "x.txt/versions/0/x.txt"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, art + "/x.txt/versions/0", artifacts.CodeUnsafeStore},
		{"non-UTF-8 name", func(t *testing.T, root string) {
			write(t, root, art+"/bad\xff/versions/0/bad\xff", "x")
			write(t, root, art+"/bad\xff/versions/0/metadata.json", meta("bad", 0))
		}, art + "/bad\xff", "foreign"},
		{"non-numeric version", func(t *testing.T, root string) {
			write(t, root, art+"/x.txt/versions/latest/x.txt", "x")
		}, art + "/x.txt/versions/latest", "foreign"},
		{"leading-zero version", func(t *testing.T, root string) {
			write(t, root, art+"/x.txt/versions/01/x.txt", "x")
		}, art + "/x.txt/versions/01", "foreign"},
		{"versions directory links outside", func(t *testing.T, root string) {
			mkdir(t, root, art+"/x.txt")
			symlink(t, filepath.Dir(outside), root, art+"/x.txt/versions")
		}, art + "/x.txt/versions", "foreign"},
		{"a file among the names", func(t *testing.T, root string) {
			write(t, root, art+"/notes.md", "x")
		}, art + "/notes.md", "foreign"},
		{"a stray top-level entry", func(t *testing.T, root string) {
			write(t, root, "README", "x")
		}, "README", "foreign"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, art+"/good.txt/versions/0/good.txt", "good")
			write(t, root, art+"/good.txt/versions/0/metadata.json", meta("good.txt", 0))
			tt.plant(t, root)
			st := open(t, root, adkfile.Options{})
			var problems []artifacts.Problem
			var records int
			err := st.Walk(t.Context(), func(u artifacts.ScopeUsage) error {
				for _, n := range u.Names {
					records += len(n.Records)
					problems = append(problems, n.Problems...)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("walk: %v", err)
			}
			if records != 1 {
				t.Errorf("walk found %d records, want the 1 good one", records)
			}
			if len(problems) != 1 || problems[0].Path != filepath.Join(root, tt.path) || problems[0].Code != tt.code {
				t.Fatalf("problems %+v, want one of code %s at %s", problems, tt.code, tt.path)
			}
			if strings.Contains(problems[0].Reason, "outside the root") {
				t.Errorf("the reason quotes a file outside the root: %s", problems[0].Reason)
			}
			if got := read(t, st, session, "good.txt", latest); got != "good" {
				t.Errorf("good.txt reads %q", got)
			}
			if tt.code != "foreign" {
				_, err := st.Get(t.Context(), session, "x.txt", 0)
				wantCode(t, err, tt.code, "get of the damaged version")
			}
		})
	}
}

func mkdir(t *testing.T, root, rel string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, root, rel, data string) {
	t.Helper()
	mkdir(t, root, filepath.Dir(rel))
	if err := os.WriteFile(filepath.Join(root, rel), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, root, rel string) {
	t.Helper()
	mkdir(t, root, filepath.Dir(rel))
	if err := os.Symlink(target, filepath.Join(root, rel)); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteExact: a version whose payload or metadata.json changed in
// place since it was read (same size, new mtime) is not deleted.
func TestDeleteExact(t *testing.T) {
	root := t.TempDir()
	st := open(t, root, adkfile.Options{})
	recs := []artifacts.Record{put(t, st, session, "x.txt", "one"), put(t, st, session, "x.txt", "two")}
	payload := filepath.Join(root, "apps/default/users/u1/sessions/s1/artifacts/x.txt/versions/0/x.txt")
	if err := os.WriteFile(payload, []byte("ONE"), 0o644); err != nil { // same size
		t.Fatal(err)
	}
	past := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(payload, past, past); err != nil {
		t.Fatal(err)
	}
	_, err := st.DeleteExact(t.Context(), session, "x.txt", recs[0].Ref())
	wantCode(t, err, artifacts.CodeConflict, "DeleteExact of a version rewritten in place")
	if got := read(t, st, session, "x.txt", 0); got != "ONE" {
		t.Errorf("v0 after the refused delete: %q", got)
	}
	if _, err := st.DeleteExact(t.Context(), session, "x.txt", recs[1].Ref()); err != nil {
		t.Fatalf("DeleteExact of an unchanged version: %v", err)
	}
	wantCode(t, errOf(st.Stat(t.Context(), session, "x.txt", 1)), artifacts.CodeNotFound, "stat after DeleteExact")
	wantCode(t, errOf(st.DeleteExact(t.Context(), session, "x.txt", recs[1].Ref())), artifacts.CodeNotFound, "DeleteExact again")
}

// TestRepair: what interrupted writers left is removed only past the
// grace period and only if unchanged; damaged and foreign entries are
// reported, never removed; an apps/ store's old users/ tree is reported
// with the move it needs.
func TestRepair(t *testing.T) {
	const art = "apps/default/users/u1/sessions/s1/artifacts"
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	old, fresh := now.Add(-time.Hour), now.Add(-time.Minute)
	plant := func(t *testing.T, root string) {
		write(t, root, art+"/ok.txt/versions/0/ok.txt", "ok")
		write(t, root, art+"/ok.txt/versions/0/metadata.json", `{"fileName": "ok.txt", "version": 0}`)
		write(t, root, art+"/ok.txt/versions/.1.pending/ok.txt", "half")      // old pending save
		mkdir(t, root, art+"/ok.txt/versions/.2.pending")                     // fresh pending save
		write(t, root, art+"/ok.txt/versions/.deleting-0-abc/ok.txt", "gone") // interrupted delete
		write(t, root, art+"/up.bin/versions/0/up.bin", "cut short")          // ADK JS killed save
		mkdir(t, root, art+"/empty.bin/versions/0")                           // killed before writing
		write(t, root, art+"/bad.txt/versions/0/bad.txt", "x")
		write(t, root, art+"/bad.txt/versions/0/metadata.json", "{")
		write(t, root, "users/old/artifacts/a/versions/0/a", "legacy")
		for _, p := range []string{art + "/ok.txt/versions/.1.pending/ok.txt", art + "/ok.txt/versions/.1.pending", art + "/ok.txt/versions/.deleting-0-abc", art + "/up.bin/versions/0", art + "/empty.bin/versions/0"} {
			if err := os.Chtimes(filepath.Join(root, p), old, old); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(filepath.Join(root, art, "ok.txt/versions/.2.pending"), fresh, fresh); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	plant(t, root)
	st := open(t, root, adkfile.Options{})
	if !st.HasLegacyTree() {
		t.Error("HasLegacyTree is false for a store with apps/ and users/")
	}
	plan, err := st.PlanRepair(t.Context(), artifacts.RepairOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	dry := plan.Report()
	var planned []string
	for _, it := range dry.RemovedItems {
		planned = append(planned, strings.TrimPrefix(it.Path, filepath.Join(root, art)+"/"))
	}
	want := []string{"empty.bin/versions/0", "ok.txt/versions/.1.pending", "ok.txt/versions/.deleting-0-abc", "up.bin/versions/0"}
	if !slices.Equal(planned, want) || dry.Young != 1 {
		t.Errorf("planned %q (young %d), want %q (young 1)", planned, dry.Young, want)
	}
	var corrupt []string
	for _, c := range dry.CorruptItems {
		corrupt = append(corrupt, string(c.Code)+" "+strings.TrimPrefix(c.Path, root+"/"))
	}
	wantCorrupt := []string{"corrupt_artifact " + art + "/bad.txt/versions/0", "foreign users"}
	if !slices.Equal(corrupt, wantCorrupt) {
		t.Errorf("corrupt items %q, want %q", corrupt, wantCorrupt)
	}
	if !strings.Contains(dry.CorruptItems[1].Reason, "ADK Python no longer reads") {
		t.Errorf("legacy tree reason: %s", dry.CorruptItems[1].Reason)
	}
	if got, want := dry.CorruptItems[1].NextCommand, adkfile.MigrateCommand(root, adkfile.DefaultApp); got != want {
		t.Errorf("legacy tree next command %q, want %q", got, want)
	}
	// The killed save gets its metadata.json after planning (a slow
	// writer): it is skipped, not removed.
	write(t, root, art+"/up.bin/versions/0/metadata.json", `{"fileName": "up.bin", "version": 0}`)
	rep, err := plan.Execute(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 3 || len(rep.SkippedItems) != 1 || !strings.HasSuffix(rep.SkippedItems[0].Path, "up.bin/versions/0") {
		t.Errorf("removed %d, skipped %+v", rep.Removed, rep.SkippedItems)
	}
	for _, p := range []string{"ok.txt/versions/.1.pending", "ok.txt/versions/.deleting-0-abc", "empty.bin"} {
		if _, err := os.Stat(filepath.Join(root, art, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survives: %v", p, err)
		}
	}
	for _, p := range []string{art + "/ok.txt/versions/.2.pending", art + "/bad.txt/versions/0/metadata.json", art + "/up.bin/versions/0/up.bin", "users/old/artifacts/a/versions/0/a"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	if got := read(t, st, session, "up.bin", latest); got != "cut short" {
		t.Errorf("the version published meanwhile reads %q", got)
	}
	if _, err := plan.Execute(t.Context()); artifacts.CodeOf(err) != artifacts.CodeConflict {
		t.Errorf("a plan executed twice: %v", err)
	}
	// No grace: the fresh pending directory goes too.
	plan, err = st.PlanRepair(t.Context(), artifacts.RepairOptions{Grace: artifacts.NoRepairGrace, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if rep := plan.Report(); rep.Removed != 1 || rep.Young != 0 {
		t.Errorf("with no grace: %d planned, %d young; want 1, 0", rep.Removed, rep.Young)
	}
	// A limit below the files scanned stops before anything is planned.
	if _, err := st.PlanRepair(t.Context(), artifacts.RepairOptions{Limit: 2}); !errors.As(err, new(*artifacts.RepairLimitError)) {
		t.Errorf("limit 2: %v", err)
	}
}

// TestDetect: a directory holding apps/ or users/ is a store; the inside
// of one (ROOT/apps/{app}, ROOT/users/{user}/…) is not, and the guess
// names the store's root.
func TestDetect(t *testing.T) {
	root := t.TempDir()
	mkdir(t, root, "py/apps/a/users/u/artifacts/x/versions")
	mkdir(t, root, "js/users/u/sessions/s/artifacts")
	mkdir(t, root, "other/stuff")
	l := adkfile.NewLayout(adkfile.LayoutOptions{})
	tests := []struct {
		dir    string
		detect bool
		guess  string // the --store the guess names, "" for none
	}{
		{"py", true, ""},
		{"js", true, ""},
		{"other", false, ""},
		{"py/apps/a", false, "py"},
		{"py/apps/a/users", false, "py"},
		{"js/users/u", false, "js"},
		{"js/users/u/sessions/s/artifacts", false, "js"},
	}
	for _, tt := range tests {
		loc := artifacts.Location{Scheme: artifacts.SchemeFile, Root: filepath.Join(root, tt.dir)}
		if got, err := l.Detect(t.Context(), loc); err != nil || got != tt.detect {
			t.Errorf("Detect(%s) = %v, %v; want %v", tt.dir, got, err, tt.detect)
		}
		g := l.Guess(t.Context(), loc)
		if want := "--store " + filepath.Join(root, tt.guess) + ","; (tt.guess == "") != (g == "") || (tt.guess != "" && !strings.Contains(g, want)) {
			t.Errorf("Guess(%s) = %q, want one naming %s", tt.dir, g, tt.guess)
		}
	}
}
