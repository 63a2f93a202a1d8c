package quota

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/promfile"
	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/workspace"
)

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openFS(t testing.TB, root string) *fsstore.Store {
	t.Helper()
	st, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func compute(t testing.TB, st *artifacts.Store, opts Options) *Report {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow }
	}
	r, err := Compute(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFixture checks every scope of the Erlang fixture against what
// expected.tsv implies.
func TestFixture(t *testing.T) {
	root, err := testfixtures.CopyFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	exp, err := testfixtures.ExpectedFS()
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		names    map[string]bool
		versions int64
		bytes    int64
		largest  Largest
	}
	wants := map[string]*want{}
	for _, e := range exp {
		w := wants[e.ScopeHash]
		if w == nil {
			w = &want{names: map[string]bool{}}
			wants[e.ScopeHash] = w
		}
		w.names[e.Name] = true
		w.versions++
		w.bytes += e.Size
		l := w.largest
		if w.versions == 1 || e.Size > l.Size || (e.Size == l.Size && (e.Name < l.Name || (e.Name == l.Name && e.Version < l.Version))) {
			w.largest = Largest{Name: e.Name, Version: e.Version, Size: e.Size}
		}
	}
	r := compute(t, artifacts.NewStore(openFS(t, root)), Options{})
	if len(r.Scopes) != len(wants) || len(wants) != 6 {
		t.Fatalf("%d scopes, want %d", len(r.Scopes), len(wants))
	}
	var totalV, totalB int64
	for _, s := range r.Scopes {
		w := wants[s.Hash]
		if w == nil {
			t.Fatalf("unexpected scope %s", s.Hash)
		}
		if s.Scope == nil || s.Scope.Hash() != s.Hash {
			t.Errorf("scope %s: decoded scope %v", s.Hash, s.Scope)
		}
		if s.Names != len(w.names) || s.Versions != w.versions || s.Bytes != w.bytes || s.Largest == nil || *s.Largest != w.largest {
			t.Errorf("%s: names %d versions %d bytes %d largest %+v; want %d %d %d %+v",
				s.Label(), s.Names, s.Versions, s.Bytes, s.Largest, len(w.names), w.versions, w.bytes, w.largest)
		}
		if s.NameCapacity != 5000 || s.FullestName == nil || s.FullestName.Capacity != 3333 {
			t.Errorf("%s: capacities %d %+v", s.Label(), s.NameCapacity, s.FullestName)
		}
		totalV += s.Versions
		totalB += s.Bytes
	}
	if r.Store.Scopes != 6 || r.Store.ScopeSlots != 6 || r.Store.ScopeDirs != 6 || r.Store.ScopeCapacity != 5000 {
		t.Errorf("store %+v", r.Store)
	}
	if r.Store.Versions != int64(len(exp)) || r.Store.Versions != totalV || r.Store.Bytes != totalB {
		t.Errorf("store totals %d versions %d bytes; want %d, %d", r.Store.Versions, r.Store.Bytes, len(exp), totalB)
	}
	// The bulk scope is the fullest: 251 of 5,000 name slots (5.02%) binds
	// before log.txt's 150 of 3,333 reservations (4.50%).
	bulk := r.Scopes[0]
	if bulk.Scope == nil || *bulk.Scope != artifacts.SessionScope("demo-a", "bulk", "s-a") {
		t.Fatalf("fullest scope %s", bulk.Label())
	}
	if f := bulk.FullestName; f.Name != "log.txt" || f.Reservations != 150 || f.Capacity != 3333 || f.UsagePercent != 4.5 {
		t.Errorf("bulk fullest name %+v", f)
	}
	if bulk.Names != 251 || bulk.NameSlots != 251 || bulk.BindingLimit != LimitNameSlots || bulk.UsagePercent != 5.02 {
		t.Errorf("bulk: %+v", bulk)
	}
	// session-damaged: ok.bin reserved 5 versions; lost-data.bin's missing
	// payload is a problem, but its record still counts.
	for _, s := range r.Scopes {
		if s.Scope != nil && s.Scope.Session == "session-damaged" {
			if s.FullestName.Name != "ok.bin" || s.FullestName.Reservations != 5 || s.Problems != 1 {
				t.Errorf("damaged: %+v %+v", s, s.FullestName)
			}
		}
	}
	if r.Warnings != 0 || r.Over != 0 {
		t.Errorf("warnings %d over %d", r.Warnings, r.Over)
	}

	// One scope only: one row, store totals unchanged.
	one := artifacts.SessionScope("demo-a", "bulk", "s-a")
	r1 := compute(t, artifacts.NewStore(openFS(t, root)), Options{Scope: &one, FailOverPercent: 5})
	if len(r1.Scopes) != 1 || r1.Scopes[0].Hash != one.Hash() || r1.Store.Versions != r.Store.Versions {
		t.Fatalf("scoped report %+v", r1.Scopes)
	}
	if r1.Over != 1 || len(r1.OverItems) != 1 || !strings.Contains(r1.OverItems[0], "251 of 5000 name slots") {
		t.Errorf("over %d %q", r1.Over, r1.OverItems)
	}
	// A scope that never held anything has a zero row.
	none := artifacts.AppScope("nobody")
	r2 := compute(t, artifacts.NewStore(openFS(t, root)), Options{Scope: &none})
	if len(r2.Scopes) != 1 || r2.Scopes[0].Names != 0 || r2.Scopes[0].Scope == nil || *r2.Scopes[0].Scope != none {
		t.Fatalf("empty scope row %+v", r2.Scopes)
	}
}

// nearCeiling builds a store within 5% of every ceiling: 4,800 of 5,000
// scopes, one scope with 4,800 of 5,000 names, one name with 3,200 of
// 3,333 reservations.
func nearCeiling(t testing.TB) string {
	root := t.TempDir()
	l := newLayout(t, root)
	names := l.scope(artifacts.AppScope("many-names"))
	names.name("a", 1, 3)
	names.nameSlots(4800)
	res := l.scope(artifacts.UserScope("many-versions", "u"))
	res.name("log.txt", 2, 3200)
	res.name("other", 1, 1)
	l.scopeSlots(4800)
	return root
}

func TestNearCeiling(t *testing.T) {
	root := nearCeiling(t)
	r := compute(t, artifacts.NewStore(openFS(t, root)), Options{FailOverPercent: 90})
	if r.Store.Scopes != 4800 || r.Store.ScopeSlots != 4800 || r.Store.ScopeDirs != 2 || r.Store.UsagePercent != 96 || !r.Store.Warn || !r.Store.Over {
		t.Errorf("store %+v", r.Store)
	}
	if len(r.Scopes) != 2 {
		t.Fatalf("%d scopes", len(r.Scopes))
	}
	// 3,200/3,333 = 96.01% comes before 4,800/5,000 = 96%.
	v, n := r.Scopes[0], r.Scopes[1]
	if v.BindingLimit != LimitReservations || v.FullestName.Name != "log.txt" || v.FullestName.Reservations != 3200 || v.UsagePercent != 96.01 || !v.Over || v.Versions != 3 {
		t.Errorf("reservations scope %+v %+v", v, v.FullestName)
	}
	if n.BindingLimit != LimitNameSlots || n.NameSlots != 4800 || n.Names != 1 || n.UsagePercent != 96 || !n.Over {
		t.Errorf("names scope %+v", n)
	}
	if r.Over != 3 || r.Warnings != 3 || len(r.OverItems) != 3 {
		t.Errorf("over %d warnings %d %q", r.Over, r.Warnings, r.OverItems)
	}
	// Below the thresholds nothing is over.
	r = compute(t, artifacts.NewStore(openFS(t, root)), Options{WarnPercent: 97, FailOverPercent: 97})
	if r.Over != 0 || r.Warnings != 0 {
		t.Errorf("over %d warnings %d", r.Over, r.Warnings)
	}
	// --top 1 keeps the fullest scope and every counter.
	top := compute(t, artifacts.NewStore(openFS(t, root)), Options{FailOverPercent: 90}).Top(1)
	if len(top.Scopes) != 1 || top.Scopes[0].FullestName.Name != "log.txt" || top.ScopesTotal != 2 || top.Over != 3 {
		t.Errorf("top 1: %+v", top)
	}
}

func TestEmptyStore(t *testing.T) {
	r := compute(t, artifacts.NewStore(openFS(t, t.TempDir())), Options{FailOverPercent: 1})
	if r.Over != 0 || len(r.Scopes) != 0 || r.Store.Scopes != 0 || r.Store.ScopeSlots != 0 {
		t.Fatalf("%+v", r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"scopes":[]`)) || !bytes.Contains(b, []byte(`"workspaces":[]`)) {
		t.Errorf("%s", b)
	}
}

// TestJSONShape pins the fields cli.md requires.
func TestJSONShape(t *testing.T) {
	root, err := testfixtures.CopyFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	m, err := workspace.New(workspace.Options{Scratch: scratch})
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.Open(context.Background(), artifacts.SessionScope("demo-a", "user-42", "session-7"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), "notes.md", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	m.Close()
	r := compute(t, artifacts.NewStore(openFS(t, root)), Options{Scratch: scratch, WorkspaceLimits: WorkspaceLimits{MaxBytes: 10, MaxFiles: 100}, FailOverPercent: 49})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Store  map[string]any `json:"store"`
		Scopes []struct {
			Scope       map[string]any `json:"scope"`
			Names       *int           `json:"names"`
			Versions    *int           `json:"versions"`
			Bytes       *int           `json:"bytes"`
			Largest     map[string]any `json:"largest"`
			NameCap     *int           `json:"name_capacity"`
			FullestName map[string]any `json:"fullest_name"`
		} `json:"scopes"`
		Workspaces []map[string]any `json:"workspaces"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scopes", "scope_capacity"} {
		if _, ok := v.Store[k]; !ok {
			t.Errorf("store lacks %s: %s", k, b)
		}
	}
	for _, s := range v.Scopes {
		if s.Scope == nil || s.Names == nil || s.Versions == nil || s.Bytes == nil || s.Largest == nil || s.NameCap == nil || s.FullestName == nil {
			t.Fatalf("scope row lacks fields: %s", b)
		}
		for _, k := range []string{"name", "reservations", "capacity"} {
			if _, ok := s.FullestName[k]; !ok {
				t.Fatalf("fullest_name lacks %s", k)
			}
		}
	}
	if len(v.Workspaces) != 1 {
		t.Fatalf("workspaces %v", v.Workspaces)
	}
	ws := v.Workspaces[0]
	for _, k := range []string{"dir", "scope", "bytes", "files", "last_access", "idle_seconds", "usage_percent"} {
		if _, ok := ws[k]; !ok {
			t.Errorf("workspace lacks %s", k)
		}
	}
	if ws["bytes"] != 5.0 || ws["files"] != 1.0 || ws["usage_percent"] != 50.0 || ws["binding_limit"] != "bytes" || ws["over"] != true || ws["dir"] != workspace.DirName("demo-a", "user-42", "session-7") {
		t.Errorf("workspace row %v", ws)
	}
	if r.Over != 1 {
		t.Errorf("over %d", r.Over)
	}
	// Scoped to another session, the workspace is left out.
	other := artifacts.SessionScope("demo-a", "user-42", "other")
	r = compute(t, artifacts.NewStore(openFS(t, root)), Options{Scope: &other, Scratch: scratch})
	if len(r.Workspaces) != 0 {
		t.Errorf("scoped workspaces %+v", r.Workspaces)
	}
	app := artifacts.AppScope("demo-a")
	r = compute(t, artifacts.NewStore(openFS(t, root)), Options{Scope: &app, Scratch: scratch})
	if len(r.Workspaces) != 1 || r.Workspaces[0].MaxBytes != DefaultWorkspaceLimits().MaxBytes {
		t.Errorf("app-scoped workspaces %+v", r.Workspaces)
	}
}

// hostile are scope ids that need escaping in label values.
var hostile = []artifacts.Scope{
	artifacts.SessionScope(`quo"te`, `back\slash`, "new\nline"),
	artifacts.SessionScope("ünï", "用户-a", "sessão/ü 1"),
	artifacts.UserScope(`\"`, "\\n"),
	artifacts.AppScope("}{=,\""),
}

// promStore returns a memory store holding the hostile scopes and n more.
func promStore(t testing.TB, n int) *artifacts.Store {
	st, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	scopes := append([]artifacts.Scope{}, hostile...)
	for i := range n {
		scopes = append(scopes, artifacts.AppScope(fmt.Sprintf("app-%02d", i)))
	}
	for i, s := range scopes {
		for j := range i%3 + 1 {
			if _, err := st.Put(ctx, s, fmt.Sprintf("n%d", j), strings.NewReader("payload"), artifacts.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return artifacts.NewStore(st)
}

func TestPrometheus(t *testing.T) {
	st := promStore(t, 30)
	r := compute(t, st, Options{})
	var buf bytes.Buffer
	if err := r.WritePrometheus(&buf, PromOptions{Store: "mem://x\"\\\n"}); err != nil {
		t.Fatal(err)
	}
	fams, err := promfile.Parse(buf.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if got := len(fams[MetricPrefix+"scope_names"].Series); got != DefaultPrometheusTop {
		t.Errorf("%d scope series, want %d", got, DefaultPrometheusTop)
	}
	if got := fams[MetricPrefix+"store_versions"].Series; len(got) != 1 {
		t.Errorf("store_versions %v", got)
	}
	// All of them with a negative Top; the hostile ids are among them.
	buf.Reset()
	if err := r.WritePrometheus(&buf, PromOptions{Store: "mem", Top: -1}); err != nil {
		t.Fatal(err)
	}
	fams, err = promfile.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got := len(fams[MetricPrefix+"scope_names"].Series); got != 34 {
		t.Errorf("%d scope series, want 34", got)
	}
	if !strings.Contains(buf.String(), `app="quo\"te",kind="session",scope_hash=`) || !strings.Contains(buf.String(), `session="new\nline"`) || !strings.Contains(buf.String(), `user="back\\slash"`) {
		t.Errorf("label escaping:\n%s", buf.String())
	}
	checkExpfmt(t, buf.Bytes(), hostile)

	// The file is replaced atomically and parses the same.
	path := filepath.Join(t.TempDir(), "quota.prom")
	n, err := r.WritePrometheusFile(path, PromOptions{Store: "mem", Top: 5})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fams, err = promfile.Parse(b)
	if err != nil || len(fams[MetricPrefix+"scope_usage_ratio"].Series) != 5 {
		t.Fatalf("%v %v", err, fams[MetricPrefix+"scope_usage_ratio"])
	}
	series := 0
	for _, f := range fams {
		series += len(f.Series)
	}
	if series != n {
		t.Errorf("wrote %d series, file has %d", n, series)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}
