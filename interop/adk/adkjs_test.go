//go:build interop

package adk_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/workspace"
)

// ADK JS 2.0.0 (@google/adk) and agentstore: the GcsArtifactService on
// fake-gcs-server (layout google-adk-gcs, versions from 0, "user:" stripped
// from object names, custom metadata as object metadata, file references
// as zero-byte objects) and the FileArtifactService in a directory (layout
// google-adk-file, ADK JS's variant without an app level).

// jsSave is one save of ADK JS in a test.
type jsSave struct {
	session     string // "" for a "user:" name
	name        string
	text        string
	data        []byte
	mime        string
	displayName string
	fileURI     string
	metadata    map[string]any
}

// jsSaves are the saves of the ADK JS round trips: text, bytes, a display
// name, custom metadata, a file reference, "user:" names, names with "/"
// and names one of which is a prefix of another's directory.
func jsSaves() []jsSave {
	return []jsSave{
		{session: "c-01", name: "summary.txt", text: "first summary\n", metadata: map[string]any{"source": "crm", "turn": "1"}},
		{session: "c-01", name: "summary.txt", text: "second summary\n", metadata: map[string]any{"source": "crm", "turn": "2"}},
		{session: "c-01", name: "summary.txt", text: "third summary\n"},
		{session: "c-01", name: "chart.png", data: patterned(70_001, 3), mime: "image/png", displayName: "Chart Q1"},
		{session: "c-01", name: "link.pdf", fileURI: "gs://elsewhere/link.pdf", mime: "application/pdf"},
		{session: "c-01", name: "reports/2026/q1 sales.csv", data: []byte("a,b\n1,2\n"), mime: "text/csv"},
		{session: "c-01", name: "reports/2026/q1 sales.csv", data: []byte("a,b\n1,3\n"), mime: "text/csv"},
		{session: "c-02", name: "naïve résumé.md", data: []byte("# résumé\n"), mime: "text/markdown", metadata: map[string]any{"author": "erin"}},
		{name: "user:prefs.json", data: []byte(`{"theme":"dark"}`), mime: "application/json"},
		{name: "user:prefs.json", data: []byte(`{"theme":"light"}`), mime: "application/json"},
		{name: "user:nested/cfg.yaml", data: []byte("a: 1\n"), mime: "application/yaml"},
	}
}

// saveJS saves each of saves through c in app/user (user names through
// session c-01) and checks the versions the library hands out: from 0.
// It returns the saves by name, in order.
func saveJS(t *testing.T, c *adkClient, app, user string, saves []jsSave) map[string][]jsSave {
	t.Helper()
	byName := map[string][]jsSave{}
	for _, s := range saves {
		op := adkOp{Op: "save", App: app, User: user, Session: s.session, Name: s.name, Metadata: s.metadata}
		if s.session == "" {
			op.Session = "c-01"
		}
		switch {
		case s.fileURI != "":
			op.FileURI, op.FileMIME = s.fileURI, s.mime
		case s.data != nil:
			op.Data, op.MIME, op.DisplayName = s.data, s.mime, s.displayName
		default:
			op.Text = ptr(s.text)
		}
		r := c.must(op)
		key := s.session + "\x00" + s.name
		byName[key] = append(byName[key], s)
		if want := int64(len(byName[key]) - 1); r.Version == nil || *r.Version != want {
			t.Fatalf("%s saved %s %q as %v, want v%d", c.name, s.session, s.name, r.Version, want)
		}
	}
	return byName
}

// payloadOf is the payload bytes of a save (none for a file reference).
func (s jsSave) payloadOf() []byte {
	switch {
	case s.fileURI != "":
		return []byte{}
	case s.data != nil:
		return s.data
	}
	return []byte(s.text)
}

// jsRoundTrip checks agentstore against ADK JS on a store ADK JS wrote
// with jsSaves (saved, from saveJS): names, versions, MIME types, metadata keys and bytes as
// the library gives them, fs verify clean, a delete with a plan the
// library then sees, and workspace.zip both ways.
func jsRoundTrip(t *testing.T, c *adkClient, a *agentstore, st storeArgs, app, user string, saved map[string][]jsSave, objects func() []string) {

	// Names: the library lists a session's names with its user's "user:"
	// names; agentstore lists them in their two scopes.
	for _, session := range []string{"c-01", "c-02"} {
		sc := scope{app, user, session}
		jsNames := c.must(adkOp{Op: "list", App: app, User: user, Session: session}).Names
		slices.Sort(jsNames)
		ours := slices.Concat(a.names(st, sc), a.names(st, sc.user()))
		slices.Sort(ours)
		if !slices.Equal(ours, jsNames) {
			t.Errorf("%v: agentstore lists %q, ADK JS %q", sc, ours, jsNames)
		}
	}

	// Versions, MIME types, metadata keys and bytes, name by name.
	for key, saves := range saved {
		session, name, _ := strings.Cut(key, "\x00")
		sc := scope{app, user, session}
		jsSession := session
		if session == "" {
			jsSession = "c-01"
		}
		jsVersions := c.must(adkOp{Op: "versions", App: app, User: user, Session: jsSession, Name: name}).Versions
		items := a.versions(st, sc, name)
		var ours []int64
		for _, it := range items {
			ours = append(ours, it.Version)
		}
		if !slices.Equal(ours, jsVersions) || len(ours) != len(saves) {
			t.Errorf("%v %q: agentstore lists versions %v, ADK JS %v, %d saved", sc, name, ours, jsVersions, len(saves))
			continue
		}
		for i, it := range items {
			meta := c.must(adkOp{Op: "get", App: app, User: user, Session: jsSession, Name: name, Version: ptr(it.Version)}).Meta
			keys := slices.Sorted(maps.Keys(meta.CustomMetadata))
			if keys == nil {
				keys = []string{}
			}
			got := slices.Sorted(slices.Values(it.MetadataKeys))
			if got == nil {
				got = []string{}
			}
			want := saves[i].payloadOf()
			if it.Size != int64(len(want)) || it.MIMEType != meta.MIME || !slices.Equal(got, keys) {
				t.Errorf("%v %q v%d: agentstore size %d, MIME %q, metadata keys %q; saved %d bytes, ADK JS MIME %q, keys %q",
					sc, name, it.Version, it.Size, it.MIMEType, got, len(want), meta.MIME, keys)
			}
			load := c.must(adkOp{Op: "load", App: app, User: user, Session: jsSession, Name: name, Version: ptr(it.Version)})
			if saves[i].fileURI != "" {
				if load.FileURI != saves[i].fileURI {
					t.Errorf("%v %q v%d: ADK JS loads the reference %q, want %q", sc, name, it.Version, load.FileURI, saves[i].fileURI)
				}
				load.Data = []byte{}
			}
			if b := a.payload(st, sc, name, it.Version); !bytes.Equal(b, want) || !bytes.Equal(b, load.Data) {
				t.Errorf("%v %q v%d: agentstore reads %d bytes, ADK JS %d, %d saved", sc, name, it.Version, len(b), len(load.Data), len(want))
			}
		}
	}
	a.verify(st)

	// Delete v1 of three with a plan; the library no longer lists or loads
	// it, and still loads the others.
	sc := scope{app, user, "c-01"}
	p := a.deletePlan(st, sc, "summary.txt", 1, objects)
	if p.ReusedNumber != nil {
		t.Errorf("deleting v1 of 0-2 says it reuses number %d", *p.ReusedNumber)
	}
	a.confirmDelete(st, sc, "summary.txt", 1, p, 0)
	if vs := c.must(adkOp{Op: "versions", App: app, User: user, Session: "c-01", Name: "summary.txt"}).Versions; !slices.Equal(vs, []int64{0, 2}) {
		t.Errorf("ADK JS lists versions %v after the delete, want [0 2]", vs)
	}
	if r := c.do(adkOp{Op: "load", App: app, User: user, Session: "c-01", Name: "summary.txt", Version: ptr(int64(1))}); !r.NotFound {
		t.Errorf("ADK JS still loads the deleted v1: %+v", r)
	}
	if r := c.must(adkOp{Op: "load", App: app, User: user, Session: "c-01", Name: "summary.txt"}); string(r.Data) != "third summary\n" || !r.IsText {
		t.Errorf("ADK JS's latest after the delete: %q (text %v)", r.Data, r.IsText)
	}
	a.verify(st)

	// ws snapshot writes workspace.zip as the library's first version (0),
	// which it loads with the same bytes; ws hydrate reads the library's
	// next one.
	scratch := t.TempDir()
	files := map[string]string{"by_region.csv": "region,revenue\nnorth,120\n", "notes/todo.md": "- ship it\n"}
	workspaceTree(t, scratch, sc, files)
	snap := a.snapshot(st, scratch, sc)
	if snap.Version != 0 {
		t.Errorf("ws snapshot wrote workspace.zip v%d into a store ADK JS numbers from 0", snap.Version)
	}
	load := c.must(adkOp{Op: "load", App: app, User: user, Session: "c-01", Name: "workspace.zip"})
	checkLoadedSnapshot(t, a, st, sc, snap, load, files)
	next := map[string]string{"by_region.csv": "region,revenue\nsouth,95\n"}
	if r := c.must(adkOp{Op: "save", App: app, User: user, Session: "c-01", Name: "workspace.zip", Data: makeZip(t, next), MIME: "application/zip"}); *r.Version != snap.Version+1 {
		t.Fatalf("ADK JS saved workspace.zip v%d after the snapshot's v%d", *r.Version, snap.Version)
	}
	fresh := t.TempDir()
	var h struct {
		Version int64 `json:"version"`
	}
	a.json(&h, slices.Concat([]string{"ws", "hydrate"}, st, []string{"--scratch", fresh}, sc.flags())...)
	if h.Version != snap.Version+1 {
		t.Errorf("ws hydrate read v%d, want ADK JS's latest v%d", h.Version, snap.Version+1)
	}
	if got := treeFiles(t, filepath.Join(fresh, workspace.DirName(app, user, "c-01"))); !maps.Equal(got, next) {
		t.Errorf("hydrated %q, want %q", got, next)
	}
	a.verify(st)
}

// TestADKJSGCS: the round trip with ADK JS's GcsArtifactService.
func TestADKJSGCS(t *testing.T) {
	const bucket = "adk-js-interop"
	e := newEmulator(t, bucket)
	c := startADKJSGCS(t, e, bucket)
	saved := saveJS(t, c, "crm-agent", "erin", jsSaves())

	// What the library wrote, as Cloud Storage would hold it: the content
	// type (carried by the proxy), "user:" stripped from the object name.
	for name, want := range map[string]string{
		"crm-agent/erin/c-01/chart.png/0":   "image/png",
		"crm-agent/erin/c-01/summary.txt/0": "text/plain",
		"crm-agent/erin/user/prefs.json/1":  "application/json",
	} {
		o, err := e.srv.GetObject(bucket, name)
		if err != nil {
			t.Errorf("ADK JS's object %q: %v", name, err)
			continue
		}
		if o.ContentType != want {
			t.Errorf("object %q has content type %q, want %q", name, o.ContentType, want)
		}
	}

	a := newAgentstore(t, "STORAGE_EMULATOR_HOST="+e.Host)
	jsRoundTrip(t, c, a, storeArgs{"--store", "gs://" + bucket}, "crm-agent", "erin", saved, func() []string { return e.objects(t, bucket) })
}

// TestADKJSFile: the round trip with ADK JS's FileArtifactService, whose
// layout has no app level: the app is --store-app.
func TestADKJSFile(t *testing.T) {
	root := t.TempDir()
	c := startADKJSFile(t, root)
	saved := saveJS(t, c, "crm-agent", "erin", jsSaves())
	a := newAgentstore(t)
	jsRoundTrip(t, c, a, storeArgs{"--store", root, "--store-app", "crm-agent"}, "crm-agent", "erin", saved, func() []string { return fileTree(t, root) })
}

// fileTree lists every entry under root with its kind, size and the
// SHA-256 of a file's bytes, so that any change shows.
func fileTree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out = append(out, rel+"/")
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out = append(out, fmt.Sprintf("%s %d %s", rel, len(b), hex.EncodeToString(sum[:])))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
