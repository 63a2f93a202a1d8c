//go:build interop

package adk_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentstore/agentstore/pkg/workspace"
)

// The Go ADK (google.golang.org/adk/v2 v2.2.0, artifact/gcsartifact) and
// agentstore on one fake-gcs-server bucket: layout google-adk-gcs.

// adkgoSave is one save of the Go ADK in a test.
type adkgoSave struct {
	sc   scope // Session empty: a "user:" name, saved through sessionOf
	name string
	data []byte
	mime string
	text bool
}

// patterned returns n bytes of a pattern seeded by seed.
func patterned(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

// saveAll saves each of saves through c (user names from session) and
// checks the version the library hands out: from 1, one more per save of a
// name. It returns the payloads by scope, name and version.
func saveAll(t *testing.T, c *adkClient, session string, first int64, saves []adkgoSave) map[scope]map[string][][]byte {
	t.Helper()
	got := map[scope]map[string][][]byte{}
	for _, s := range saves {
		op := adkOp{Op: "save", App: s.sc.App, User: s.sc.User, Session: s.sc.Session, Name: s.name}
		if s.sc.Session == "" {
			op.Session = session
		}
		if s.text {
			op.Text = ptr(string(s.data))
		} else {
			op.Data, op.MIME = s.data, s.mime
		}
		r := c.must(op)
		if got[s.sc] == nil {
			got[s.sc] = map[string][][]byte{}
		}
		got[s.sc][s.name] = append(got[s.sc][s.name], s.data)
		if want := first + int64(len(got[s.sc][s.name])) - 1; r.Version == nil || *r.Version != want {
			t.Fatalf("%s saved %v %q as %v, want v%d", c.name, s.sc, s.name, r.Version, want)
		}
	}
	return got
}

// TestADKGoRoundTrip: the Go ADK saves artifacts (session and user scope,
// several versions, text and bytes); agentstore lists exactly what the
// library's own List and Versions return, reads the same bytes, verifies
// the store clean, and deletes a version with a plan, after which the
// library no longer loads it. Deleting the highest version is refused
// without --allow-number-reuse, and the library then does hand its number
// out again, as the plan says.
func TestADKGoRoundTrip(t *testing.T) {
	const bucket = "adk-go-interop"
	e := newEmulator(t, bucket)
	g := startADKGo(t, e, bucket)
	a := newAgentstore(t, "STORAGE_EMULATOR_HOST="+e.Host)
	st := storeArgs{"--store", "gs://" + bucket}
	objects := func() []string { return e.objects(t, bucket) }

	s1 := scope{"shop-agent", "alice", "s-0001"}
	s2 := scope{"shop-agent", "alice", "s 2 ü"}
	other := scope{"helpdesk", "alice", "s-0001"}
	saves := []adkgoSave{
		{sc: s1, name: "report.txt", data: []byte("q1 report, first draft\n"), text: true},
		{sc: s1, name: "report.txt", data: []byte("q1 report, second draft\n"), text: true},
		{sc: s1, name: "report.txt", data: []byte("q1 report, final\n"), text: true},
		{sc: s1, name: "chart.png", data: patterned(70_001, 1), mime: "image/png"},
		{sc: s1, name: "chart.png", data: patterned(3, 2), mime: "image/png"},
		{sc: s1.user(), name: "user:profile.json", data: []byte(`{"lang":"de"}`), mime: "application/json"},
		{sc: s1.user(), name: "user:profile.json", data: []byte(`{"lang":"fr"}`), mime: "application/json"},
		{sc: s2, name: "notes with spaces.md", data: []byte("# notes\n"), mime: "text/markdown"},
		{sc: other, name: "report.txt", data: []byte("other app\n"), text: true},
	}
	want := saveAll(t, g, s1.Session, 1, saves)

	// Names: the library lists a session's names and its user's "user:"
	// names together; agentstore lists them in their two scopes.
	for _, sc := range []scope{s1, s2, other} {
		adkNames := g.must(adkOp{Op: "list", App: sc.App, User: sc.User, Session: sc.Session}).Names
		ours := slices.Concat(a.names(st, sc), a.names(st, sc.user()))
		slices.Sort(ours)
		if !slices.Equal(ours, adkNames) {
			t.Errorf("%v: agentstore lists %q, adk-go %q", sc, ours, adkNames)
		}
	}

	// Versions, sizes, MIME types and bytes, name by name.
	for sc, names := range want {
		for name, payloads := range names {
			session := sc.Session
			if session == "" {
				session = s1.Session
			}
			adkVersions := g.must(adkOp{Op: "versions", App: sc.App, User: sc.User, Session: session, Name: name}).Versions
			items := a.versions(st, sc, name)
			var ours []int64
			for _, it := range items {
				ours = append(ours, it.Version)
			}
			if !slices.Equal(ours, adkVersions) || len(ours) != len(payloads) {
				t.Errorf("%v %q: agentstore lists versions %v, adk-go %v, %d saved", sc, name, ours, adkVersions, len(payloads))
				continue
			}
			for i, it := range items {
				load := g.must(adkOp{Op: "load", App: sc.App, User: sc.User, Session: session, Name: name, Version: ptr(it.Version)})
				meta := g.must(adkOp{Op: "get", App: sc.App, User: sc.User, Session: session, Name: name, Version: ptr(it.Version)}).Meta
				if it.Size != int64(len(payloads[i])) || it.MIMEType != meta.MIME || it.MIMEType != load.MIME {
					t.Errorf("%v %q v%d: agentstore size %d, MIME %q; saved %d bytes, adk-go MIME %q (load %q)", sc, name, it.Version, it.Size, it.MIMEType, len(payloads[i]), meta.MIME, load.MIME)
				}
				if got := a.payload(st, sc, name, it.Version); !bytes.Equal(got, load.Data) || !bytes.Equal(got, payloads[i]) {
					t.Errorf("%v %q v%d: agentstore reads %d bytes, adk-go %d, %d saved", sc, name, it.Version, len(got), len(load.Data), len(payloads[i]))
				}
			}
		}
	}
	a.verify(st)

	// Delete v2 of report.txt with a plan; the library loads it no more.
	p := a.deletePlan(st, s1, "report.txt", 2, objects)
	if p.ReusedNumber != nil {
		t.Errorf("deleting v2 of 3 says it reuses number %d", *p.ReusedNumber)
	}
	a.confirmDelete(st, s1, "report.txt", 2, p, 0)
	if r := g.do(adkOp{Op: "load", App: s1.App, User: s1.User, Session: s1.Session, Name: "report.txt", Version: ptr(int64(2))}); !r.NotFound {
		t.Errorf("adk-go still loads the deleted v2: %+v", r)
	}
	if vs := g.must(adkOp{Op: "versions", App: s1.App, User: s1.User, Session: s1.Session, Name: "report.txt"}).Versions; !slices.Equal(vs, []int64{1, 3}) {
		t.Errorf("adk-go lists versions %v after the delete, want [1 3]", vs)
	}
	if l := g.must(adkOp{Op: "load", App: s1.App, User: s1.User, Session: s1.Session, Name: "report.txt"}); string(l.Data) != "q1 report, final\n" {
		t.Errorf("adk-go's latest after the delete: %q", l.Data)
	}
	a.verify(st)

	// Deleting the highest version (v2 of chart.png's 1-2): the plan says
	// the library will hand its number out again, and is refused without
	// --allow-number-reuse; with it, the library's next save is v2 again.
	p = a.deletePlan(st, s1, "chart.png", 2, objects)
	if p.ReusedNumber == nil || *p.ReusedNumber != 2 {
		t.Errorf("the plan deleting the highest v2 says reused_number %v, want 2", p.ReusedNumber)
	}
	r := a.run(slices.Concat([]string{"artifacts", "delete"}, st, s1.flags(), []string{"--name", "chart.png", "--version", "2", "-o", "table"})...)
	if r.code != 4 || !strings.Contains(r.stdout, "ADK will hand out v2 again on the next save") {
		t.Errorf("the plan's text does not warn of the reuse: %s", r)
	}
	before := objects()
	r = a.confirmDelete(st, s1, "chart.png", 2, p, 4)
	if !strings.Contains(r.stderr, "--allow-number-reuse") {
		t.Errorf("the refusal does not name --allow-number-reuse: %s", r)
	}
	if after := objects(); !slices.Equal(before, after) {
		t.Fatalf("the refused delete changed the store:\nbefore %q\nafter  %q", before, after)
	}
	a.confirmDelete(st, s1, "chart.png", 2, p, 0, "--allow-number-reuse")
	if r := g.must(adkOp{Op: "save", App: s1.App, User: s1.User, Session: s1.Session, Name: "chart.png", Data: []byte("reused"), MIME: "image/png"}); *r.Version != 2 {
		t.Errorf("adk-go saved v%d after v2 was deleted, want 2 (the number reused)", *r.Version)
	}
	items := a.versions(st, s1, "chart.png")
	if len(items) != 2 || items[0].Version != 1 || items[1].Version != 2 || items[1].Size != int64(len("reused")) {
		t.Errorf("agentstore lists %+v after the reuse", items)
	}
	a.verify(st)
}

// TestADKGoWorkspace: ws snapshot writes workspace.zip as the library's
// next version, and the library's Load returns the same bytes; a
// workspace.zip the library saved is what ws hydrate extracts.
func TestADKGoWorkspace(t *testing.T) {
	const bucket = "adk-go-workspace"
	e := newEmulator(t, bucket)
	g := startADKGo(t, e, bucket)
	a := newAgentstore(t, "STORAGE_EMULATOR_HOST="+e.Host)
	st := storeArgs{"--store", "gs://" + bucket}
	sc := scope{"shop-agent", "alice", "s-0001"}

	// The bucket is the Go ADK's: it numbers from 1.
	g.must(adkOp{Op: "save", App: sc.App, User: sc.User, Session: sc.Session, Name: "report.txt", Text: ptr("hello\n")})

	scratch := t.TempDir()
	files := map[string]string{"by_region.csv": "region,revenue\nnorth,120\n", "notes/todo.md": "- ship it\n"}
	workspaceTree(t, scratch, sc, files)
	snap := a.snapshot(st, scratch, sc)
	if snap.Version != 1 || snap.Files != 2 {
		t.Fatalf("ws snapshot: %+v, want v1 of 2 files", snap)
	}
	load := g.must(adkOp{Op: "load", App: sc.App, User: sc.User, Session: sc.Session, Name: "workspace.zip"})
	checkLoadedSnapshot(t, a, st, sc, snap, load, files)
	if names := g.must(adkOp{Op: "list", App: sc.App, User: sc.User, Session: sc.Session}).Names; !slices.Equal(names, []string{"report.txt", "workspace.zip"}) {
		t.Errorf("adk-go lists %q", names)
	}

	// The library saves the next workspace.zip; ws hydrate reads that
	// latest version into a fresh scratch root.
	next := map[string]string{"by_region.csv": "region,revenue\nsouth,95\n", "deep/dir/a.txt": "a\n"}
	r := g.must(adkOp{Op: "save", App: sc.App, User: sc.User, Session: sc.Session, Name: "workspace.zip", Data: makeZip(t, next), MIME: "application/zip"})
	if *r.Version != 2 {
		t.Fatalf("adk-go saved workspace.zip v%d, want 2", *r.Version)
	}
	fresh := t.TempDir()
	var h struct {
		Version int64 `json:"version"`
		Files   int   `json:"files"`
	}
	a.json(&h, slices.Concat([]string{"ws", "hydrate"}, st, []string{"--scratch", fresh}, sc.flags())...)
	if h.Version != 2 || h.Files != 2 {
		t.Errorf("ws hydrate: %+v, want v2 with 2 files", h)
	}
	if got := treeFiles(t, filepath.Join(fresh, workspace.DirName(sc.App, sc.User, sc.Session))); !maps.Equal(got, next) {
		t.Errorf("hydrated %q, want %q", got, next)
	}

	// ws sweep of an idle workspace writes the next version, which the
	// library's Load returns.
	swept := map[string]string{"final.txt": "swept\n", "out/chart.svg": "<svg/>\n"}
	idle := t.TempDir()
	idleWorkspace(t, idle, sc, swept)
	v := sweepOne(t, a, st, idle)
	if v != 3 {
		t.Fatalf("ws sweep wrote workspace.zip v%d, want 3", v)
	}
	load = g.must(adkOp{Op: "load", App: sc.App, User: sc.User, Session: sc.Session, Name: "workspace.zip"})
	checkLoadedSnapshot(t, a, st, sc, snapshotOut{Version: v, Size: int64(len(load.Data))}, load, swept)
	a.verify(st)
}

// TestADKGoRace: agentstore's ws snapshot and the Go ADK's Save write one
// name at once, 8 writers x 25 saves each; nothing is lost: every save
// lists as a distinct version holding what that save wrote.
func TestADKGoRace(t *testing.T) {
	// The race: 8 writers on each side, 25 saves each. Under the
	// race detector 8 x 5 (see raceBuild); the pass without it runs all.
	const (
		bucket  = "adk-go-race"
		writers = 8
	)
	saves := 25
	if raceBuild {
		saves = 5
	}
	e := newEmulator(t, bucket)
	g := startADKGo(t, e, bucket)
	a := newAgentstore(t, "STORAGE_EMULATOR_HOST="+e.Host)
	st := storeArgs{"--store", "gs://" + bucket}
	sc := scope{"race-app", "u", "s"}

	// The library writes first, so the bucket is an ADK one and the
	// client is warm; then both sides start together.
	g.must(adkOp{Op: "save", App: sc.App, User: sc.User, Session: sc.Session, Name: "warm.txt", Text: ptr("x")})

	type snap struct {
		writer, index int
		out           snapshotOut
		err           string
	}
	var (
		mu    sync.Mutex
		snaps []snap
		wg    sync.WaitGroup
	)
	adkDone := make(chan adkResult, 1)
	go func() {
		adkDone <- g.do(adkOp{Op: "race", App: sc.App, User: sc.User, Session: sc.Session, Name: "workspace.zip", Writers: writers, Saves: saves})
	}()
	for w := range writers {
		// Each agentstore writer has a scratch root of its own, with the
		// same session's workspace in it.
		scratch := t.TempDir()
		wg.Go(func() {
			for i := range saves {
				workspaceTree(t, scratch, sc, map[string]string{"turn.txt": fmt.Sprintf("agentstore writer %d save %d\n", w, i)})
				r := a.run(slices.Concat([]string{"ws", "snapshot"}, st, []string{"--scratch", scratch, "-o", "json"}, sc.flags())...)
				s := snap{writer: w, index: i}
				if r.code != 0 {
					s.err = r.String()
				} else if err := json.Unmarshal([]byte(r.stdout), &s.out); err != nil || s.out.Unchanged {
					s.err = fmt.Sprintf("%v (unchanged %v): %s", err, s.out.Unchanged, r)
				}
				mu.Lock()
				snaps = append(snaps, s)
				mu.Unlock()
				if s.err != "" {
					return
				}
			}
		})
	}
	wg.Wait()
	res := <-adkDone
	if res.Error != "" {
		t.Fatalf("adk-go's saves: %s", res.Error)
	}
	for _, s := range snaps {
		if s.err != "" {
			t.Fatalf("agentstore writer %d snapshot %d: %s", s.writer, s.index, s.err)
		}
	}
	if len(res.Saves) != writers*saves || len(snaps) != writers*saves {
		t.Fatalf("%d adk-go saves and %d snapshots acknowledged, want %d each", len(res.Saves), len(snaps), writers*saves)
	}

	// Every acknowledged write has a version of its own, and that version
	// holds what it wrote: the library's payload, or the archive of the
	// snapshot's workspace (its turn.txt).
	check := map[int64]func(data []byte) string{} // version -> what is wrong with data
	claim := func(v int64, who string, fn func([]byte) string) {
		if _, dup := check[v]; dup {
			t.Fatalf("v%d acknowledged twice (the second time to %s)", v, who)
		}
		check[v] = fn
	}
	for _, s := range res.Saves {
		claim(s.Version, fmt.Sprintf("adk-go writer %d save %d", s.Writer, s.Index), func(data []byte) string {
			if got := sha256hex(data); got != s.SHA256 {
				return fmt.Sprintf("sha256 %s, adk-go writer %d save %d wrote %s", got, s.Writer, s.Index, s.SHA256)
			}
			return ""
		})
	}
	for _, s := range snaps {
		claim(s.out.Version, fmt.Sprintf("agentstore writer %d snapshot %d", s.writer, s.index), func(data []byte) string {
			want := fmt.Sprintf("agentstore writer %d save %d\n", s.writer, s.index)
			if int64(len(data)) != s.out.Size || (s.out.Digest != "" && sha256hex(data) != s.out.Digest) {
				return fmt.Sprintf("%d bytes (sha256 %s), the snapshot wrote %d (%s)", len(data), sha256hex(data), s.out.Size, s.out.Digest)
			}
			if got := zipFiles(t, data); got["turn.txt"] != want || len(got) != 1 {
				return fmt.Sprintf("the archive holds %q, agentstore writer %d snapshot %d wrote turn.txt %q", got, s.writer, s.index, want)
			}
			return ""
		})
	}
	items := a.versions(st, sc, "workspace.zip")
	adkVersions := g.must(adkOp{Op: "versions", App: sc.App, User: sc.User, Session: sc.Session, Name: "workspace.zip"}).Versions
	if len(items) != 2*writers*saves || len(adkVersions) != len(items) {
		t.Fatalf("agentstore lists %d versions, adk-go %d, want %d", len(items), len(adkVersions), 2*writers*saves)
	}
	for i, it := range items {
		if it.Version != adkVersions[i] {
			t.Fatalf("version %d: agentstore v%d, adk-go v%d", i, it.Version, adkVersions[i])
		}
		fn, ok := check[it.Version]
		if !ok {
			t.Fatalf("v%d is listed but no writer was told it", it.Version)
		}
		load := g.must(adkOp{Op: "load", App: sc.App, User: sc.User, Session: sc.Session, Name: "workspace.zip", Version: ptr(it.Version)})
		if int64(len(load.Data)) != it.Size {
			t.Errorf("v%d: agentstore lists %d bytes, adk-go loads %d", it.Version, it.Size, len(load.Data))
		}
		if bad := fn(load.Data); bad != "" {
			t.Errorf("v%d holds %s", it.Version, bad)
		}
	}
	t.Logf("%d versions; adk-go gave up %d times on a version another writer took, and saved again", len(items), res.Conflicts)
	a.verify(st)
}
