package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

var (
	evilScope   = artifacts.SessionScope("evil-app", "user-42", "s-1")
	victimScope = artifacts.SessionScope("victim-app", "user-42", "s-1")
)

// rawTree reads every regular file under dir, the index included, and
// records every directory: what "nothing changed" compares.
func rawTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t testing.TB, what string, a, b map[string]string) {
	t.Helper()
	if len(a) != len(b) {
		t.Errorf("%s changed: %d entries, then %d", what, len(a), len(b))
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			t.Errorf("%s changed at %s", what, k)
		}
	}
}

// editIndex rewrites the index under dir as an agent writing outside the
// confined API would.
func editIndex(t testing.TB, dir string, edit func(ix *Index)) {
	t.Helper()
	p := filepath.Join(dir, IndexName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var ix Index
	if err := json.Unmarshal(b, &ix); err != nil {
		t.Fatal(err)
	}
	edit(&ix)
	if b, err = json.Marshal(ix); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// makeSession opens scope on m, writes files, snapshots when snap is set,
// then writes unsaved (never snapshotted) and closes the workspace. It
// returns the directory's path.
func makeSession(t testing.TB, m *Manager, scope artifacts.Scope, files map[string]string, snap bool, unsaved map[string]string) string {
	t.Helper()
	ctx := context.Background()
	w := mustOpen(t, m, scope)
	for n, d := range files {
		if err := w.Write(ctx, n, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	if snap {
		if _, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for n, d := range unsaved {
		if err := w.Write(ctx, n, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	p := w.Path()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// toLegacy renames a session's directory to the name earlier versions
// gave it (the index's content is the same in both versions).
func toLegacy(t testing.TB, m *Manager, scope artifacts.Scope) string {
	t.Helper()
	legacy := filepath.Join(m.Scratch(), LegacyDirName(scope.User, scope.Session))
	if err := os.Rename(filepath.Join(m.Scratch(), DirName(scope.App, scope.User, scope.Session)), legacy); err != nil {
		t.Fatal(err)
	}
	return legacy
}

func versions(t testing.TB, st *artifacts.Store, scope artifacts.Scope) int {
	t.Helper()
	page, err := st.ListVersions(context.Background(), scope, SnapshotName, artifacts.ListOptions{})
	if artifacts.IsNotFound(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Items)
}

// The attack of issue 18.3: an agent of evil-app writes its own directory
// outside the confined API and sets "app":"victim-app" in its index.
// victim-app's session of the same user and session id must never read or
// publish the planted tree, whether the planted directory has the
// app-bound name or the legacy per-session one, through any entry point.
func TestCrossAppTakeoverRefused(t *testing.T) {
	ctx := context.Background()
	type env struct {
		m       *Manager
		st      *artifacts.Store
		planted string // the forged directory
	}
	setup := func(t *testing.T, legacy bool) env {
		st := artifacts.NewStore(newStore(t, fsstore.Options{}))
		m := newManager(t, st, Options{Policy: SnapshotManual})
		// victim-app's session was saved by another pod: snapshot v1.
		vdir := makeSession(t, m, victimScope, map[string]string{"victim.txt": "victim's own\n"}, true, nil)
		if err := os.RemoveAll(vdir); err != nil {
			t.Fatal(err)
		}
		planted := makeSession(t, m, evilScope, map[string]string{"planted.txt": "evil\n"}, true, map[string]string{"later.txt": "evil too\n"})
		if legacy {
			planted = toLegacy(t, m, evilScope)
		}
		editIndex(t, planted, func(ix *Index) { ix.App = victimScope.App })
		return env{m: m, st: st, planted: planted}
	}
	for _, legacy := range []bool{false, true} {
		for _, c := range []struct {
			name string
			run  func(t *testing.T, e env)
		}{
			{"open", func(t *testing.T, e env) {
				w, err := e.m.Open(ctx, victimScope)
				if err != nil {
					t.Fatal(err)
				}
				if w.Path() == e.planted {
					t.Fatal("victim-app adopted the planted directory")
				}
				if _, err := w.Stat("planted.txt"); !artifacts.IsNotFound(err) {
					t.Errorf("planted.txt in victim-app's workspace: %v", err)
				}
				if _, err := w.Stat("victim.txt"); err != nil {
					t.Errorf("victim-app's own snapshot was not hydrated: %v", err)
				}
			}},
			{"open existing", func(t *testing.T, e env) {
				_, err := e.m.OpenExisting(ctx, victimScope)
				wantCode(t, err, artifacts.CodeNotFound)
			}},
			{"hydrate", func(t *testing.T, e env) {
				res, err := e.m.Hydrate(ctx, victimScope, artifacts.Latest, HydrateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if res.Dir == e.planted {
					t.Fatal("hydrated into the planted directory")
				}
				if _, err := os.Stat(filepath.Join(res.Dir, "planted.txt")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("planted.txt after hydration: %v", err)
				}
			}},
			{"snapshot", func(t *testing.T, e env) {
				_, err := e.m.Snapshot(ctx, victimScope, SnapshotOptions{})
				wantCode(t, err, artifacts.CodeNotFound)
				if n := versions(t, e.st, victimScope); n != 1 {
					t.Errorf("victim-app has %d snapshots, want its own 1", n)
				}
			}},
			{"list", func(t *testing.T, e env) {
				info, err := e.m.Inspect(ctx, filepath.Base(e.planted))
				if err != nil {
					t.Fatal(err)
				}
				want := StateBadIndex
				if legacy {
					want = StateLegacy
					if info.Claimed == nil || info.Claimed.App != victimScope.App || info.LegacyConfirmed != 0 {
						t.Errorf("claimed %+v confirmed v%d", info.Claimed, info.LegacyConfirmed)
					}
				}
				if _, ok := info.Scope(); info.State != want || ok || info.Index != nil {
					t.Errorf("state %s (want %s), index %v: %s", info.State, want, info.Index, info.Problem)
				}
			}},
			{"migrate", func(t *testing.T, e env) {
				_, err := e.m.Migrate(ctx, filepath.Base(e.planted))
				if legacy {
					wantCode(t, err, artifacts.CodePermission)
				} else {
					wantCode(t, err, artifacts.CodeInvalidArgument)
				}
			}},
		} {
			name := c.name
			if legacy {
				name = "legacy " + name
			}
			t.Run(name, func(t *testing.T) {
				e := setup(t, legacy)
				before := rawTree(t, e.planted)
				c.run(t, e)
				sameTree(t, "the planted directory", before, rawTree(t, e.planted))
			})
		}
	}
}

// A legacy index that names the version and digest of victim-app's empty
// snapshot (whose digest anyone can compute) does not confirm the app.
func TestLegacyEmptySnapshotConfirmsNothing(t *testing.T) {
	ctx := context.Background()
	st := artifacts.NewStore(newStore(t, fsstore.Options{}))
	m := newManager(t, st, Options{Policy: SnapshotManual})
	vdir := makeSession(t, m, victimScope, nil, true, nil)
	rec, err := st.Stat(ctx, victimScope, SnapshotName, artifacts.Latest)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Size != emptyZipSize {
		t.Fatalf("an empty snapshot has %d bytes, want %d", rec.Size, emptyZipSize)
	}
	if err := os.RemoveAll(vdir); err != nil {
		t.Fatal(err)
	}
	makeSession(t, m, evilScope, map[string]string{"planted.txt": "evil\n"}, false, nil)
	planted := toLegacy(t, m, evilScope)
	editIndex(t, planted, func(ix *Index) {
		ix.App, ix.SnapshotVersion, ix.SnapshotDigest = victimScope.App, rec.Version, rec.Digest
	})
	before := rawTree(t, planted)
	w := mustOpen(t, m, victimScope)
	if _, err := w.Stat("planted.txt"); !artifacts.IsNotFound(err) {
		t.Errorf("planted.txt: %v", err)
	}
	_, err = m.Migrate(ctx, filepath.Base(planted))
	wantCode(t, err, artifacts.CodePermission)
	if !strings.Contains(err.Error(), "empty") {
		t.Errorf("error %q does not say why", err)
	}
	sameTree(t, "the planted directory", before, rawTree(t, planted))
}

// A workspace left by an earlier version under its per-session name keeps
// working: every entry point migrates it to its app-bound name when the
// store confirms the app, unsaved work included.
func TestLegacyMigration(t *testing.T) {
	ctx := context.Background()
	scope := sessionScope("s-legacy")
	for _, c := range []struct {
		name string
		run  func(t *testing.T, m *Manager, st *artifacts.Store) error
	}{
		{"open", func(t *testing.T, m *Manager, st *artifacts.Store) error {
			w, err := m.Open(ctx, scope)
			if err == nil {
				_, err = w.Stat("unsaved.txt")
			}
			return err
		}},
		{"open existing", func(t *testing.T, m *Manager, st *artifacts.Store) error {
			_, err := m.OpenExisting(ctx, scope)
			return err
		}},
		{"snapshot", func(t *testing.T, m *Manager, st *artifacts.Store) error {
			res, err := m.Snapshot(ctx, scope, SnapshotOptions{})
			if err == nil && (res.Version != 2 || res.Files != 2) {
				t.Errorf("snapshot v%d with %d files, want v2 with 2", res.Version, res.Files)
			}
			return err
		}},
		{"hydrate", func(t *testing.T, m *Manager, st *artifacts.Store) error {
			// The migrated directory holds unsaved work: hydrating over it
			// is refused, as for any workspace.
			_, err := m.Hydrate(ctx, scope, artifacts.Latest, HydrateOptions{})
			if oe := (*OverwriteError)(nil); !errors.As(err, &oe) {
				t.Errorf("hydrate: %v, want %s", err, CodeWouldOverwrite)
			}
			return nil
		}},
		{"migrate", func(t *testing.T, m *Manager, st *artifacts.Store) error {
			res, err := m.Migrate(ctx, LegacyDirName(scope.User, scope.Session))
			if err == nil && (res.Scope != scope || res.Version != 1 || res.To != DirName(scope.App, scope.User, scope.Session)) {
				t.Errorf("result %+v", res)
			}
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := artifacts.NewStore(newStore(t, fsstore.Options{}))
			m := newManager(t, st, Options{Policy: SnapshotManual})
			makeSession(t, m, scope, map[string]string{"saved.txt": "in v1\n"}, true, map[string]string{"unsaved.txt": "not in any snapshot\n"})
			legacy := toLegacy(t, m, scope)
			before := rawTree(t, legacy)
			info, err := m.Inspect(ctx, filepath.Base(legacy))
			if err != nil || info.State != StateLegacy || info.LegacyConfirmed != 1 {
				t.Fatalf("before: %+v %v", info, err)
			}
			if err := c.run(t, m, st); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(legacy); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the legacy directory is still there: %v", err)
			}
			after := rawTree(t, filepath.Join(m.Scratch(), DirName(scope.App, scope.User, scope.Session)))
			for _, n := range []string{"saved.txt", "unsaved.txt"} {
				if after[n] != before[n] {
					t.Errorf("%s: %q, want %q", n, after[n], before[n])
				}
			}
			info, err = m.Inspect(ctx, DirName(scope.App, scope.User, scope.Session))
			if err != nil || info.State != StateOK || info.Index.Scope() != scope {
				t.Errorf("after: %+v %v", info, err)
			}
		})
	}
}

// Migration refuses, changing nothing, while a session or sweep holds the
// legacy directory's lock, and when the app-bound directory exists too.
func TestLegacyMigrationRefusals(t *testing.T) {
	ctx := context.Background()
	scope := sessionScope("s-legacy")
	setup := func(t *testing.T) (*Manager, string) {
		st := artifacts.NewStore(newStore(t, fsstore.Options{}))
		m := newManager(t, st, Options{Policy: SnapshotManual})
		makeSession(t, m, scope, map[string]string{"saved.txt": "in v1\n"}, true, nil)
		return m, toLegacy(t, m, scope)
	}
	t.Run("locked", func(t *testing.T) {
		m, legacy := setup(t)
		f, err := os.Open(legacy)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := osutil.LockShared(f); err != nil {
			t.Fatal(err)
		}
		before := rawTree(t, legacy)
		_, err = m.Open(ctx, scope)
		wantCode(t, err, artifacts.CodeConflict)
		_, err = m.Migrate(ctx, filepath.Base(legacy))
		wantCode(t, err, artifacts.CodeConflict)
		sameTree(t, "the legacy directory", before, rawTree(t, legacy))
		if _, err := os.Lstat(filepath.Join(m.Scratch(), DirName(scope.App, scope.User, scope.Session))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("an app-bound directory was made: %v", err)
		}
	})
	t.Run("both exist", func(t *testing.T) {
		m, legacy := setup(t)
		if err := os.Mkdir(filepath.Join(m.Scratch(), DirName(scope.App, scope.User, scope.Session)), 0o700); err != nil {
			t.Fatal(err)
		}
		before := rawTree(t, legacy)
		_, err := m.Migrate(ctx, filepath.Base(legacy))
		wantCode(t, err, artifacts.CodeConflict)
		// Open and Hydrate use the app-bound directory and leave the legacy
		// one.
		w := mustOpen(t, m, scope)
		if _, err := w.Stat("saved.txt"); !artifacts.IsNotFound(err) {
			t.Errorf("saved.txt: %v", err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if res, err := m.Hydrate(ctx, scope, artifacts.Latest, HydrateOptions{}); err != nil || filepath.Base(res.Dir) != DirName(scope.App, scope.User, scope.Session) {
			t.Errorf("hydrate: %+v %v", res, err)
		}
		sameTree(t, "the legacy directory", before, rawTree(t, legacy))
	})
	t.Run("no store", func(t *testing.T) {
		m, legacy := setup(t)
		bare, err := New(Options{Scratch: m.Scratch()})
		if err != nil {
			t.Fatal(err)
		}
		defer bare.Close()
		before := rawTree(t, legacy)
		info, err := bare.Inspect(ctx, filepath.Base(legacy))
		if err != nil || info.State != StateLegacy || info.LegacyConfirmed != 0 || !strings.Contains(info.Problem, "no store") {
			t.Errorf("%+v %v", info, err)
		}
		_, err = bare.Migrate(ctx, filepath.Base(legacy))
		wantCode(t, err, artifacts.CodePermission)
		sameTree(t, "the legacy directory", before, rawTree(t, legacy))
	})
	t.Run("not legacy", func(t *testing.T) {
		m, _ := setup(t)
		for _, name := range []string{"..", "x", DirName("a", "b", "c"), "0123456789abcdef0123456789abcdef"} {
			if _, err := m.Migrate(ctx, name); err == nil {
				t.Errorf("%s migrated", name)
			}
		}
	})
}
