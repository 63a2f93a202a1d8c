package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// An agent cannot edit, replace, remove, rename or read the index through
// any path of the confined API.
func TestIndexTampering(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{})
	scope := sessionScope("tamper")
	w := mustOpen(t, m, scope)
	ixPath := filepath.Join(w.Path(), IndexName)
	orig, err := os.ReadFile(ixPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, "x", []byte("payload")); err != nil {
		t.Fatal(err)
	}
	// Planted by the agent's shell: a symlink to the index, a symlink to
	// the workspace itself, a hard link to the index.
	if err := os.Symlink(IndexName, filepath.Join(w.Path(), "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(w.Path(), "self")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(ixPath, filepath.Join(w.Path(), "hard")); err != nil {
		t.Fatal(err)
	}
	names := []string{
		IndexName, "./" + IndexName, "a/../" + IndexName, "self/" + IndexName,
		"self/self/" + IndexName, IndexName + "/", "./a/./../" + IndexName,
	}
	forged := []byte(`{"format":"agentstore-workspace-index/1","app":"demo-a","user":"evil","session":"x"}`)
	for _, n := range names {
		if err := w.Write(ctx, n, forged); err == nil {
			t.Errorf("Write(%q) succeeded", n)
		}
		if _, err := w.WriteFrom(ctx, n, nil); err == nil {
			t.Errorf("WriteFrom(%q) succeeded", n)
		}
		if err := w.Append(ctx, n, forged); err == nil {
			t.Errorf("Append(%q) succeeded", n)
		}
		if err := w.Rename(ctx, "x", n); err == nil {
			t.Errorf("Rename(x, %q) succeeded", n)
		}
		if err := w.Rename(ctx, n, "stolen"); err == nil {
			t.Errorf("Rename(%q, stolen) succeeded", n)
		}
		if err := w.Remove(ctx, n); err == nil {
			t.Errorf("Remove(%q) succeeded", n)
		}
		if err := w.RemoveAll(ctx, n); err == nil {
			t.Errorf("RemoveAll(%q) succeeded", n)
		}
		if err := w.Mkdir(ctx, n); err == nil {
			t.Errorf("Mkdir(%q) succeeded", n)
		}
		if _, err := w.Open(n); err == nil {
			t.Errorf("Open(%q) succeeded", n)
		}
		if _, err := w.ReadLines(n, 0, 1); err == nil {
			t.Errorf("ReadLines(%q) succeeded", n)
		}
		if _, err := w.Stat(n); err == nil {
			t.Errorf("Stat(%q) succeeded", n)
		}
		if _, err := w.Promote(ctx, n, PromoteOptions{Name: "leak"}); err == nil {
			t.Errorf("Promote(%q) succeeded", n)
		}
	}
	wantCode(t, w.Write(ctx, IndexName, forged), artifacts.CodePermission)
	// Through the planted links: reading or appending refused; Write and
	// Rename replace the link itself.
	for _, n := range []string{"link", "hard"} {
		if _, err := w.Open(n); err == nil {
			t.Errorf("Open(%q) read the index", n)
		}
		if err := w.Append(ctx, n, forged); err == nil {
			t.Errorf("Append(%q) wrote the index", n)
		}
		if _, err := w.Promote(ctx, n, PromoteOptions{Name: "leak"}); err == nil {
			t.Errorf("Promote(%q) published the index", n)
		}
		if err := w.Write(ctx, n, forged); err != nil {
			t.Errorf("Write(%q): %v", n, err)
		}
	}
	if err := w.Rename(ctx, "link", "moved"); err != nil && artifacts.CodeOf(err) != artifacts.CodeNotFound {
		t.Fatal(err)
	}
	// The index is hidden from listings.
	fis, err := w.List(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range fis {
		if fi.Name() == IndexName {
			t.Fatal("List shows the index")
		}
	}
	fis, _ = w.List("self") // a final symlink is not followed
	for _, fi := range fis {
		if fi.Name() == IndexName {
			t.Fatal("List(self) shows the index")
		}
	}
	now, err := os.ReadFile(ixPath)
	if err != nil {
		t.Fatal(err)
	}
	var a, b Index
	json.Unmarshal(orig, &a)
	json.Unmarshal(now, &b)
	if b.User != "user-42" || b.Session != "tamper" || b.Created != a.Created {
		t.Fatalf("index changed: %s", now)
	}
	// The snapshot leaves the index out.
	res, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wb := mustOpen(t, newManager(t, artifacts.NewStore(st), Options{}), scope)
	if _, err := os.Stat(filepath.Join(wb.Path(), "hard")); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, wb.Path())
	for k := range got {
		if filepath.Base(k) == IndexName {
			t.Fatalf("snapshot v%d holds %s", res.Version, k)
		}
	}
}

// A forged index whose key does not hash to its directory is reported as
// bad_index and never used to pick a scope.
func TestForgedIndex(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{})
	victim := artifacts.SessionScope("demo-a", "victim", "s")
	// The victim has a snapshot in the store.
	wv := mustOpen(t, m, victim)
	wv.Write(ctx, "v.txt", []byte("victim data"))
	if _, err := wv.Snapshot(ctx, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	// The attacker's directory claims to be the victim's session.
	attacker := mustOpen(t, m, sessionScope("attacker"))
	forged, _ := json.Marshal(Index{Format: IndexFormat, App: "demo-a", User: "victim", Session: "s"})
	if err := os.WriteFile(filepath.Join(attacker.Path(), IndexName), forged, 0o600); err != nil {
		t.Fatal(err)
	}
	// A directory with an index that does not decode, one without an
	// index, a file and a symlink.
	os.Mkdir(filepath.Join(m.Scratch(), "garbage"), 0o700)
	os.WriteFile(filepath.Join(m.Scratch(), "garbage", IndexName), []byte("{not json"), 0o600)
	os.Mkdir(filepath.Join(m.Scratch(), "bare"), 0o700)
	os.WriteFile(filepath.Join(m.Scratch(), "bare", "f"), []byte("12345"), 0o600)
	os.WriteFile(filepath.Join(m.Scratch(), "file"), []byte("x"), 0o600)
	os.Symlink(wv.Path(), filepath.Join(m.Scratch(), "link"))

	infos, err := m.ListWorkspaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]State{}
	for _, in := range infos {
		states[in.Dir] = in.State
		sc, ok := in.Scope()
		switch in.Dir {
		case wv.Dir():
			if !ok || sc != victim || in.SnapshotVersion != 1 || in.Files != 1 || in.Bytes != 11 {
				t.Errorf("victim: %+v", in)
			}
		case attacker.Dir():
			if ok || in.Index != nil || in.SnapshotVersion != 0 {
				t.Errorf("forged index used: %+v", in)
			}
		case "bare":
			if in.Files != 1 || in.Bytes != 5 {
				t.Errorf("bare: %+v", in)
			}
		}
	}
	want := map[string]State{
		wv.Dir(): StateOK, attacker.Dir(): StateBadIndex, "garbage": StateBadIndex,
		"bare": StateNoIndex, "file": StateNotADirectory, "link": StateSymlink,
	}
	if len(states) != len(want) {
		t.Fatalf("states %v, want %v", states, want)
	}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("%s: state %s, want %s", k, states[k], v)
		}
	}
	// The operator's snapshot of the attacker's scope refuses the bad index.
	m2 := newManager(t, artifacts.NewStore(st), Options{Scratch: m.Scratch()})
	_, err = m2.Snapshot(ctx, sessionScope("attacker"), SnapshotOptions{})
	wantCode(t, err, artifacts.CodeConflict)
	// Opening the attacker's session again repairs its own index.
	w2, err := m2.Open(ctx, sessionScope("attacker"))
	if err != nil {
		t.Fatal(err)
	}
	if ix := w2.Index(); ix.User != "user-42" || ix.Session != "attacker" {
		t.Fatalf("index %+v", ix)
	}
}
