package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// savedSession makes scope's workspace through package workspace, as an
// earlier version did, with one file snapshotted to st as v1, and renames
// it to the legacy per-session name when legacy is set; the tree and its
// index look untouched since last. It returns the directory's name.
func savedSession(t *testing.T, scratch string, st *artifacts.Store, scope artifacts.Scope, last time.Time, legacy bool) string {
	t.Helper()
	ctx := context.Background()
	m, err := workspace.New(workspace.Options{Scratch: scratch, Store: st, Policy: workspace.SnapshotManual, Now: func() time.Time { return last }})
	must(t, err)
	defer m.Close()
	w, err := m.Open(ctx, scope)
	must(t, err)
	must(t, w.Write(ctx, "notes.txt", []byte(scope.App+" "+scope.Session+"\n")))
	if _, err := w.Snapshot(ctx, workspace.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, w.Close())
	name := w.Dir()
	if legacy {
		name = workspace.LegacyDirName(scope.User, scope.Session)
		must(t, os.Rename(w.Path(), filepath.Join(scratch, name)))
	}
	backdate(t, filepath.Join(scratch, name), last)
	return name
}

// forgeApp rewrites the app in the index of dir, as an agent writing its
// directory outside the confined API would.
func forgeApp(t *testing.T, dir, app string) {
	t.Helper()
	p := filepath.Join(dir, workspace.IndexName)
	b, err := os.ReadFile(p)
	must(t, err)
	var ix map[string]any
	must(t, json.Unmarshal(b, &ix))
	ix["app"] = app
	b, err = json.Marshal(ix)
	must(t, err)
	must(t, os.WriteFile(p, b, 0o600))
	backdate(t, dir, t0.Add(-72*time.Hour))
}

// A scratch root with workspaces under app-bound names and under the
// legacy per-session names: the sweep removes idle app-bound ones,
// migrates the legacy one the store confirms (and removes it on a later
// run), and keeps away from the forged ones, reporting each.
func TestSweepMixedLegacy(t *testing.T) {
	st := artifacts.NewStore(newStore(t))
	scratch := t.TempDir()
	old := t0.Add(-72 * time.Hour)
	genuine := artifacts.SessionScope("demo", "user-1", "s-legacy")
	current := savedSession(t, scratch, st, artifacts.SessionScope("demo", "user-2", "s-new"), old, false)
	legacy := savedSession(t, scratch, st, genuine, old, true)
	// evil-app's agents claim victim-app's sessions, under both names.
	forgedLegacy := savedSession(t, scratch, st, artifacts.SessionScope("evil-app", "user-3", "s-1"), old, true)
	forgeApp(t, filepath.Join(scratch, forgedLegacy), "victim-app")
	forgedNew := savedSession(t, scratch, st, artifacts.SessionScope("evil-app", "user-3", "s-2"), old, false)
	forgeApp(t, filepath.Join(scratch, forgedNew), "victim-app")
	forged := map[string]string{}
	for _, d := range []string{forgedLegacy, forgedNew} {
		forged[d] = treeOf(t, filepath.Join(scratch, d))
	}
	migrated := workspace.DirName(genuine.App, genuine.User, genuine.Session)
	checkForged := func(items map[string]Item) {
		t.Helper()
		if it := items[forgedLegacy]; it.Decision != Skipped || it.Code != CodeUnboundApp || it.Scope != nil || !strings.Contains(it.Reason, "which nothing confirms") {
			t.Errorf("forged legacy: %+v", it)
		}
		if it := items[forgedNew]; it.Decision != Skipped || it.Scope != nil || !strings.Contains(it.Reason, "bad index") {
			t.Errorf("forged app-bound: %+v", it)
		}
		for d, tree := range forged {
			if got := treeOf(t, filepath.Join(scratch, d)); got != tree {
				t.Errorf("%s changed", d)
			}
		}
		for _, sc := range []artifacts.Scope{artifacts.SessionScope("victim-app", "user-3", "s-1"), artifacts.SessionScope("victim-app", "user-3", "s-2")} {
			if _, err := st.Stat(context.Background(), sc, workspace.SnapshotName, artifacts.Latest); !artifacts.IsNotFound(err) {
				t.Errorf("%s got a snapshot: %v", sc, err)
			}
		}
	}

	// A dry run changes nothing and says what a sweep would do.
	rep := run(t, Options{Scratch: scratch, Store: st, Idle: 24 * time.Hour, DryRun: true})
	items := byDir(rep)
	if it := items[legacy]; it.Decision != Kept || !strings.Contains(it.Reason, "confirmed by snapshot v1") || !strings.Contains(it.Reason, migrated) {
		t.Errorf("dry run, legacy: %+v", it)
	}
	if it := items[current]; it.Decision != WouldRemove {
		t.Errorf("dry run, app-bound: %+v", it)
	}
	if _, err := os.Lstat(filepath.Join(scratch, migrated)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dry run migrated: %v", err)
	}
	checkForged(items)
	if rep.Problems() != 2 {
		t.Errorf("dry run: %d problems, want the 2 forged", rep.Problems())
	}

	// A sweep removes the idle app-bound workspace and migrates the legacy
	// one.
	rep = run(t, Options{Scratch: scratch, Store: st, Idle: 24 * time.Hour})
	items = byDir(rep)
	if it := items[current]; it.Decision != Removed {
		t.Errorf("app-bound: %+v", it)
	}
	if it := items[legacy]; it.Decision != Kept || it.Scope == nil || *it.Scope != genuine || !strings.Contains(it.Reason, "moved to "+migrated) {
		t.Errorf("legacy: %+v", it)
	}
	if _, err := os.Lstat(filepath.Join(scratch, legacy)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the legacy name is still there: %v", err)
	}
	checkForged(items)

	// The next sweep removes the migrated workspace, its tree verified in
	// the store.
	rep = run(t, Options{Scratch: scratch, Store: st, Idle: 24 * time.Hour})
	items = byDir(rep)
	if it := items[migrated]; it.Decision != Removed || it.Scope == nil || *it.Scope != genuine {
		t.Errorf("migrated: %+v", it)
	}
	checkForged(items)
	if rep.Problems() != 2 {
		t.Errorf("%d problems, want the 2 forged", rep.Problems())
	}
}
