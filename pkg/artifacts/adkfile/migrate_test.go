package adkfile_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
)

const (
	legacySession = "users/u1/sessions/s1/artifacts"
	legacyUser    = "users/u1/artifacts"
	appsSession   = "apps/default/users/u1/sessions/s1/artifacts"
	appsUser      = "apps/default/users/u1/artifacts"
)

// version writes a published version of name (the path below artifacts/)
// as ADK writes it: payload and metadata.json.
func version(t *testing.T, root, scopeDir, rel string, v int, data, fileName string) {
	t.Helper()
	dir := filepath.Join(scopeDir, rel, "versions", fmt.Sprint(v))
	write(t, root, filepath.Join(dir, filepath.Base(rel)), data)
	write(t, root, filepath.Join(dir, "metadata.json"), fmt.Sprintf(`{"fileName": %q, "mimeType": "text/plain", "version": %d, "canonicalUri": "file:///old/%s"}`, fileName, v, rel))
}

// planMigration plans with the default app.
func planMigration(t *testing.T, st *adkfile.Store) *adkfile.Migration {
	t.Helper()
	m, err := st.PlanMigration(t.Context(), adkfile.MigrateOptions{Store: "file://" + st.Root(), From: adkfile.FromLegacy})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// steps formats each name's step: "SCOPE NAME STEP".
func steps(m *adkfile.Migration) []string {
	var out []string
	for _, n := range m.Names {
		s := fmt.Sprintf("%s %s %s", n.Scope.Kind, n.Name, n.Step)
		if len(n.Clash) > 0 {
			s += fmt.Sprint(" clash", n.Clash)
		}
		if n.Code != "" {
			s += " " + string(n.Code)
		}
		out = append(out, s)
	}
	return out
}

// versionsOf lists the published versions of name, and the versions a
// listing with IncludeBroken calls broken, as "v0 v1 broken:v2".
func versionsOf(t *testing.T, st *adkfile.Store, scope artifacts.Scope, name string) string {
	t.Helper()
	page, err := st.ListVersions(t.Context(), scope, name, artifacts.ListOptions{Limit: 1000, IncludeBroken: true})
	if artifacts.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range page.Items {
		out = append(out, fmt.Sprintf("v%d", r.Version))
	}
	for _, b := range page.Broken {
		out = append(out, fmt.Sprintf("broken:v%d", b.Problem.Version))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// foreignPaths lists the paths (relative to root) Walk reports as
// foreign, with the next command when there is one.
func foreignPaths(t *testing.T, st *adkfile.Store) []string {
	t.Helper()
	var out []string
	err := st.Walk(t.Context(), func(u artifacts.ScopeUsage) error {
		for _, n := range u.Names {
			for _, p := range n.Problems {
				if p.Code == artifacts.CodeForeign {
					s := strings.TrimPrefix(p.Path, st.Root()+"/")
					if p.NextCommand != "" {
						s += " next: " + p.NextCommand
					}
					out = append(out, s)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigrate: the old tree's user and session names move to
// apps/default/users/…: whole when the name is new there, version by
// version beside its versions there, never onto a number either tree
// has (conflict), never with a pending save or a symbolic link in its
// versions/ (held); half-written versions move and are fs repair's; what
// is left keeps users/ and its finding, and an emptied users/ goes.
func TestMigrate(t *testing.T) {
	type check struct {
		scope    artifacts.Scope
		name     string
		versions string // after the migration, in the apps/ tree
	}
	for _, tc := range []struct {
		name      string
		plant     func(t *testing.T, root string)
		steps     []string
		left      int  // entries that are no name's
		moved     int  // versions moved
		treeGone  bool // users/ removed
		after     []check
		wantFiles map[string]string // path -> content, after
		keep      []string          // directories that must still exist
	}{
		{
			name: "user and session names move whole",
			plant: func(t *testing.T, root string) {
				version(t, root, legacyUser, "prefs.json", 0, "p0", "user:prefs.json")
				version(t, root, legacyUser, "prefs.json", 1, "p1", "user:prefs.json")
				version(t, root, legacySession, "deep/report.txt", 0, "r0", "deep/report.txt")
				version(t, root, legacySession, "deep", 0, "d0", "deep")
				mkdir(t, root, "apps/default/users")
			},
			steps:    []string{"user user:prefs.json move-name", "session deep move-name", "session deep/report.txt move-name"},
			moved:    4,
			treeGone: true,
			after: []check{
				{user, "user:prefs.json", "v0 v1"},
				{session, "deep/report.txt", "v0"},
				{session, "deep", "v0"},
			},
			wantFiles: map[string]string{appsUser + "/prefs.json/versions/1/prefs.json": "p1", appsSession + "/deep/versions/0/deep": "d0"},
		},
		{
			name: "versions join an existing name",
			plant: func(t *testing.T, root string) {
				version(t, root, legacySession, "x.txt", 0, "old0", "x.txt")
				version(t, root, legacySession, "x.txt", 1, "old1", "x.txt")
				version(t, root, appsSession, "x.txt", 4, "new4", "x.txt")
			},
			steps:    []string{"session x.txt move-versions"},
			moved:    2,
			treeGone: true,
			after:    []check{{session, "x.txt", "v0 v1 v4"}},
			wantFiles: map[string]string{
				appsSession + "/x.txt/versions/0/x.txt": "old0",
				appsSession + "/x.txt/versions/4/x.txt": "new4",
			},
		},
		{
			name: "a number in both trees is a conflict and nothing of the name moves",
			plant: func(t *testing.T, root string) {
				version(t, root, legacySession, "x.txt", 0, "old0", "x.txt")
				version(t, root, legacySession, "x.txt", 1, "old1", "x.txt")
				version(t, root, appsSession, "x.txt", 1, "new1", "x.txt")
				mkdir(t, root, legacySession+"/x.txt/versions/2") // a killed save, left with its name
				version(t, root, legacyUser, "u.txt", 0, "u0", "user:u.txt")
			},
			steps: []string{"user user:u.txt move-name", "session x.txt conflict clash[1] conflict"},
			moved: 1,
			keep:  []string{legacySession + "/x.txt/versions/2"},
			after: []check{{session, "x.txt", "v1"}, {user, "user:u.txt", "v0"}},
			wantFiles: map[string]string{
				legacySession + "/x.txt/versions/0/x.txt": "old0",
				legacySession + "/x.txt/versions/1/x.txt": "old1",
				appsSession + "/x.txt/versions/1/x.txt":   "new1",
			},
		},
		{
			name: "a number reserved in apps/ is a conflict too",
			plant: func(t *testing.T, root string) {
				version(t, root, legacySession, "x.txt", 0, "old0", "x.txt")
				version(t, root, appsSession, "x.txt", 3, "new3", "x.txt")
				mkdir(t, root, appsSession+"/x.txt/versions/.0.pending")
			},
			steps: []string{"session x.txt conflict clash[0] conflict"},
			after: []check{{session, "x.txt", "v3"}},
		},
		{
			name: "a pending save in the old tree holds the name",
			plant: func(t *testing.T, root string) {
				version(t, root, legacySession, "x.txt", 0, "old0", "x.txt")
				mkdir(t, root, legacySession+"/x.txt/versions/.1.pending")
				mkdir(t, root, "apps")
			},
			steps:     []string{"session x.txt held conflict"},
			wantFiles: map[string]string{legacySession + "/x.txt/versions/0/x.txt": "old0"},
			keep:      []string{legacySession + "/x.txt/versions/.1.pending"},
		},
		{
			name: "half-written versions move with their name",
			plant: func(t *testing.T, root string) {
				version(t, root, legacySession, "x.txt", 0, "old0", "x.txt")
				mkdir(t, root, legacySession+"/x.txt/versions/1")
				write(t, root, legacySession+"/x.txt/versions/2/x.txt", "cut")
				mkdir(t, root, "apps")
			},
			steps:     []string{"session x.txt move-name"},
			moved:     3,
			treeGone:  true,
			after:     []check{{session, "x.txt", "broken:v1 broken:v2 v0"}},
			wantFiles: map[string]string{appsSession + "/x.txt/versions/2/x.txt": "cut"},
		},
		{
			name: "symbolic links are never followed or moved",
			plant: func(t *testing.T, root string) {
				outside := t.TempDir()
				write(t, outside, "secret/versions/0/secret", "secret")
				write(t, outside, "secret/versions/0/metadata.json", `{"fileName": "secret", "version": 0}`)
				symlink(t, outside, root, "users/evil")
				symlink(t, outside, root, legacySession+"/linked")
				version(t, root, legacySession, "x.txt", 0, "old0", "x.txt")
				symlink(t, filepath.Join(outside, "secret/versions/0/secret"), root, legacySession+"/x.txt/versions/0/x.txt.link")
				write(t, root, legacySession+"/y.txt/versions/0/metadata.json", `{"fileName": "y.txt", "version": 0}`)
				symlink(t, filepath.Join(outside, "secret/versions/0/secret"), root, legacySession+"/y.txt/versions/0/y.txt")
				mkdir(t, root, "apps")
			},
			steps: []string{"session x.txt move-name", "session y.txt held unsafe_store"},
			left:  2,
			moved: 1,
			// x.txt moved with the link inside its version directory (a
			// directory rename moves the link, never what it points to).
			wantFiles: map[string]string{appsSession + "/x.txt/versions/0/x.txt": "old0"},
		},
		{
			name: "a foreign file stays, and so does users/",
			plant: func(t *testing.T, root string) {
				version(t, root, legacySession, "x.txt", 0, "old0", "x.txt")
				write(t, root, "users/u1/notes.txt", "mine")
				mkdir(t, root, "apps")
			},
			steps:     []string{"session x.txt move-name"},
			left:      1,
			moved:     1,
			after:     []check{{session, "x.txt", "v0"}},
			wantFiles: map[string]string{"users/u1/notes.txt": "mine"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			tc.plant(t, root)
			st := open(t, root, adkfile.Options{})
			if !st.HasLegacyTree() {
				t.Fatal("no legacy tree")
			}
			before := tree(t, root)
			m := planMigration(t, st)
			if got := steps(m); !slices.Equal(got, tc.steps) {
				t.Errorf("steps %q, want %q", got, tc.steps)
			}
			if len(m.Left) != tc.left {
				t.Errorf("left %+v, want %d", m.Left, tc.left)
			}
			if !maps.Equal(before, tree(t, root)) {
				t.Fatal("planning changed the tree")
			}
			res, err := st.ExecuteMigration(t.Context(), m)
			if err != nil {
				t.Fatal(err)
			}
			if res.MovedVersions != tc.moved || res.TreeRemoved != tc.treeGone {
				t.Errorf("moved %d versions, tree removed %v; want %d, %v", res.MovedVersions, res.TreeRemoved, tc.moved, tc.treeGone)
			}
			_, err = os.Lstat(filepath.Join(root, "users"))
			if gone := errors.Is(err, os.ErrNotExist); gone != tc.treeGone {
				t.Errorf("users/ gone %v, want %v", gone, tc.treeGone)
			}
			again := open(t, root, adkfile.Options{})
			for _, c := range tc.after {
				if got := versionsOf(t, again, c.scope, c.name); got != c.versions {
					t.Errorf("%s %q: versions %q, want %q", c.scope, c.name, got, c.versions)
				}
			}
			for p, want := range tc.wantFiles {
				b, err := os.ReadFile(filepath.Join(root, p))
				if err != nil || string(b) != want {
					t.Errorf("%s: %q %v, want %q", p, b, err, want)
				}
			}
			for _, p := range tc.keep {
				if fi, err := os.Lstat(filepath.Join(root, p)); err != nil || !fi.IsDir() {
					t.Errorf("%s: %v", p, err)
				}
			}
			// fs verify's finding: gone with users/, else still there and
			// naming the migrate command.
			legacy := false
			for _, f := range foreignPaths(t, again) {
				if strings.HasPrefix(f, "users next: ") {
					legacy = true
					if want := "users next: " + adkfile.MigrateCommand(root, "default"); f != want {
						t.Errorf("finding %q, want %q", f, want)
					}
				}
			}
			if legacy == tc.treeGone {
				t.Errorf("legacy finding %v with users/ removed %v", legacy, tc.treeGone)
			}
			// A rerun plans nothing more to move.
			m2 := planMigration(t, again)
			if m2.MoveNames != 0 || m2.NothingToDo != tc.treeGone {
				t.Errorf("rerun: %d names to move, nothing to do %v", m2.MoveNames, m2.NothingToDo)
			}
		})
	}
}

// TestMigrateStale: a plan confirmed after a payload changed in place,
// a version was added, or by a plan_id of another plan is stale; a plan
// edited after it was made, or made for another app, is refused; in every
// case nothing moved.
func TestMigrateStale(t *testing.T) {
	plant := func(t *testing.T) (string, *adkfile.Store, *adkfile.Migration) {
		root := t.TempDir()
		version(t, root, legacySession, "x.txt", 0, "old0", "x.txt")
		version(t, root, legacyUser, "u.txt", 0, "u0", "user:u.txt")
		mkdir(t, root, "apps")
		st := open(t, root, adkfile.Options{})
		return root, st, planMigration(t, st)
	}
	later := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root string, m *adkfile.Migration) adkfile.MigrationConfirmation
		stale  bool
		want   string
	}{
		{"payload touched", func(t *testing.T, root string, m *adkfile.Migration) adkfile.MigrationConfirmation {
			if err := os.Chtimes(filepath.Join(root, legacySession, "x.txt/versions/0/x.txt"), later, later); err != nil {
				t.Fatal(err)
			}
			return adkfile.MigrationConfirmation{PlanID: m.PlanID, Plan: m}
		}, true, `changed: "x.txt" in session("default","u1","s1")`},
		{"version added, by plan_id", func(t *testing.T, root string, m *adkfile.Migration) adkfile.MigrationConfirmation {
			version(t, root, legacyUser, "u.txt", 1, "u1", "user:u.txt")
			return adkfile.MigrationConfirmation{PlanID: m.PlanID}
		}, true, "does not match the current plan"},
		{"target appeared", func(t *testing.T, root string, m *adkfile.Migration) adkfile.MigrationConfirmation {
			version(t, root, appsSession, "x.txt", 0, "new0", "x.txt")
			return adkfile.MigrationConfirmation{PlanID: m.PlanID, Plan: m}
		}, true, "the trees changed"},
		{"plan edited", func(t *testing.T, root string, m *adkfile.Migration) adkfile.MigrationConfirmation {
			c := *m
			c.Names = slices.Clone(m.Names)
			c.Names[0].Step = adkfile.StepConflict
			return adkfile.MigrationConfirmation{PlanID: c.PlanID, Plan: &c}
		}, false, "modified after it was made"},
		{"another app", func(t *testing.T, root string, m *adkfile.Migration) adkfile.MigrationConfirmation {
			st := open(t, root, adkfile.Options{})
			other, err := st.PlanMigration(t.Context(), adkfile.MigrateOptions{Store: m.Store, From: adkfile.FromLegacy, App: "other"})
			if err != nil {
				t.Fatal(err)
			}
			return adkfile.MigrationConfirmation{PlanID: other.PlanID, Plan: other}
		}, false, "not for this command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, st, m := plant(t)
			conf := tc.change(t, root, m)
			before := tree(t, root)
			cur := planMigration(t, st)
			err := conf.Match(cur)
			var ce *plan.ConfirmationError
			if !errors.As(err, &ce) || ce.Stale != tc.stale || !strings.Contains(ce.Msg, tc.want) || !strings.Contains(ce.Msg, "nothing was moved") {
				t.Fatalf("match: %v, want stale %v with %q", err, tc.stale, tc.want)
			}
			if !maps.Equal(before, tree(t, root)) {
				t.Error("a refused confirmation changed the tree")
			}
		})
	}
	// The plan, as printed in JSON, confirms itself.
	_, st, m := plant(t)
	b, err := plan.Canonical(m)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := adkfile.ParseMigrationConfirmation(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := conf.Match(planMigration(t, st)); err != nil {
		t.Fatalf("the plan does not confirm itself: %v", err)
	}
	if _, err := adkfile.ParseMigrationConfirmation(`{"action": "migrate", "extra": 1}`); err == nil {
		t.Error("a plan with an unknown field parsed")
	}
}

// TestMigrateInterrupted: a migration that fails at its N-th rename (as a
// crash there would leave it) leaves every version in exactly one tree,
// readable; planning again plans the rest, and the end is the tree an
// uninterrupted migration makes.
func TestMigrateInterrupted(t *testing.T) {
	plant := func(t *testing.T, root string) {
		for v := range 3 {
			version(t, root, legacySession, "x.txt", v, fmt.Sprint("x", v), "x.txt")
			version(t, root, legacySession, "y/z.txt", v, fmt.Sprint("z", v), "y/z.txt")
		}
		version(t, root, appsSession, "x.txt", 7, "x7", "x.txt")
		version(t, root, legacyUser, "u.txt", 0, "u0", "user:u.txt")
	}
	// The uninterrupted migration: 3 renames for x.txt, 1 for user:u.txt,
	// 1 for y/z.txt.
	want := migratedContents(t, plant)
	const renames = 5
	for n := 1; n <= renames; n++ {
		t.Run(fmt.Sprint("stop at ", n), func(t *testing.T) {
			root := t.TempDir()
			plant(t, root)
			st := open(t, root, adkfile.Options{})
			m := planMigration(t, st)
			crash := errors.New("killed")
			restore := adkfile.SetMigrateStepHook(func(step int) error {
				if step == n {
					return crash
				}
				return nil
			})
			res, err := st.ExecuteMigration(t.Context(), m)
			restore()
			if !errors.Is(err, crash) {
				t.Fatalf("execute: %v", err)
			}
			if res.MovedVersions >= 7 {
				t.Errorf("moved %d versions before the failure", res.MovedVersions)
			}
			// Every version in exactly one tree, and readable there.
			again := open(t, root, adkfile.Options{})
			for v := range 3 {
				in := 0
				for _, dir := range []string{legacySession, appsSession} {
					if _, err := os.Stat(filepath.Join(root, dir, "x.txt/versions", fmt.Sprint(v), "metadata.json")); err == nil {
						in++
					}
				}
				if in != 1 {
					t.Errorf("x.txt v%d is in %d trees", v, in)
				}
			}
			if got := read(t, again, session, "x.txt", 7); got != "x7" {
				t.Errorf("apps/ x.txt v7 reads %q", got)
			}
			rest := planMigration(t, again)
			if rest.MoveNames == 0 {
				t.Fatal("the rerun plans nothing")
			}
			if _, err := again.ExecuteMigration(t.Context(), rest); err != nil {
				t.Fatal(err)
			}
			if got := contents(t, root); !maps.Equal(got, want) {
				t.Errorf("after the rerun the tree differs from an uninterrupted migration:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// migratedContents plants a store with plant, migrates it without
// interruption and returns the tree's contents afterwards: what an
// interrupted migration and its rerun must end with.
func migratedContents(t *testing.T, plant func(*testing.T, string)) map[string]string {
	t.Helper()
	ref := t.TempDir()
	plant(t, ref)
	st := open(t, ref, adkfile.Options{})
	if _, err := st.ExecuteMigration(t.Context(), planMigration(t, st)); err != nil {
		t.Fatal(err)
	}
	return contents(t, ref)
}

// contents maps every regular file below root (relative path) to its
// content.
func contents(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigrateRefuses: a users/-only store is refused (ADK JS reads that
// tree), a store without users/ has nothing to do, an unknown tree or an
// app that is no directory name is invalid; nothing changes.
func TestMigrateRefuses(t *testing.T) {
	jsOnly := t.TempDir()
	version(t, jsOnly, legacySession, "x.txt", 0, "old0", "x.txt")
	appsOnly := t.TempDir()
	version(t, appsOnly, appsSession, "x.txt", 0, "new0", "x.txt")
	both := t.TempDir()
	version(t, both, legacySession, "x.txt", 0, "old0", "x.txt")
	mkdir(t, both, "apps")
	for _, tc := range []struct {
		name string
		root string
		opts adkfile.MigrateOptions
		code artifacts.Code
		want string
	}{
		{"users only", jsOnly, adkfile.MigrateOptions{From: adkfile.FromLegacy}, artifacts.CodeUnsupported, "would hide every artifact from ADK JS"},
		{"unknown tree", both, adkfile.MigrateOptions{From: "apps"}, artifacts.CodeInvalidArgument, `unknown tree "apps"`},
		{"bad app", both, adkfile.MigrateOptions{From: adkfile.FromLegacy, App: "a/b"}, artifacts.CodeInvalidArgument, "slash"},
		{"no users/", appsOnly, adkfile.MigrateOptions{From: adkfile.FromLegacy}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tree(t, tc.root)
			st := open(t, tc.root, adkfile.Options{})
			m, err := st.PlanMigration(t.Context(), tc.opts)
			if tc.code == "" {
				if err != nil || !m.NothingToDo || m.NeedsConfirmation() {
					t.Fatalf("%+v %v, want nothing to do", m, err)
				}
				if _, err := st.ExecuteMigration(t.Context(), m); err != nil {
					t.Fatal(err)
				}
			} else {
				wantCode(t, err, tc.code, tc.name)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want %q", err, tc.want)
				}
			}
			if !maps.Equal(before, tree(t, tc.root)) {
				t.Error("the tree changed")
			}
		})
	}
}

// TestMigrateEmptyTree: an old tree of empty directories (what a
// migration killed before its cleanup leaves) is planned as their removal,
// which needs a confirmation, and removed.
func TestMigrateEmptyTree(t *testing.T) {
	root := t.TempDir()
	mkdir(t, root, legacySession+"/a/b")
	mkdir(t, root, "apps")
	st := open(t, root, adkfile.Options{})
	m := planMigration(t, st)
	if !m.EmptyOnly || !m.NeedsConfirmation() || m.NothingToDo {
		t.Fatalf("plan %+v", m)
	}
	res, err := st.ExecuteMigration(t.Context(), m)
	if err != nil || !res.TreeRemoved || res.RemovedDirs != 7 {
		t.Fatalf("%+v %v", res, err)
	}
}

// BenchmarkMigrate plans and executes the migration of an old tree of 50
// session names with 4 versions each (the plan reads every metadata.json
// and stats every payload; no payload is read): ns/op and allocations
// per migration, for small and for large (sparse) payloads, which must
// cost the same.
func BenchmarkMigrate(b *testing.B) {
	for _, size := range []int64{1 << 10, 1 << 30} {
		b.Run(fmt.Sprintf("payload=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				root := b.TempDir()
				for n := range 50 {
					name := fmt.Sprintf("n%02d.bin", n)
					for v := range 4 {
						dir := filepath.Join(root, legacySession, name, "versions", fmt.Sprint(v))
						if err := os.MkdirAll(dir, 0o755); err != nil {
							b.Fatal(err)
						}
						if err := os.WriteFile(filepath.Join(dir, "metadata.json"), fmt.Appendf(nil, `{"fileName": %q, "version": %d}`, name, v), 0o644); err != nil {
							b.Fatal(err)
						}
						f, err := os.Create(filepath.Join(dir, name))
						if err == nil {
							err = errors.Join(f.Truncate(size), f.Close())
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := os.Mkdir(filepath.Join(root, "apps"), 0o755); err != nil {
					b.Fatal(err)
				}
				st, err := adkfile.Open(root, adkfile.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				m, err := st.PlanMigration(b.Context(), adkfile.MigrateOptions{From: adkfile.FromLegacy})
				if err != nil {
					b.Fatal(err)
				}
				res, err := st.ExecuteMigration(b.Context(), m)
				if err != nil || res.MovedVersions != 200 || !res.TreeRemoved {
					b.Fatalf("%+v %v", res, err)
				}
				b.StopTimer()
				st.Close()
				b.StartTimer()
			}
		})
	}
}

// TestMigrateNeverReplaces: a version that appears in apps/ between the
// plan and its execution (a writer that ignores the lock) is never
// replaced: the migration stops there with conflict, both versions intact,
// and a new plan reports the clash.
func TestMigrateNeverReplaces(t *testing.T) {
	root := t.TempDir()
	version(t, root, legacySession, "x.txt", 0, "old0", "x.txt")
	version(t, root, legacySession, "x.txt", 1, "old1", "x.txt")
	version(t, root, appsSession, "x.txt", 5, "new5", "x.txt")
	st := open(t, root, adkfile.Options{})
	m := planMigration(t, st)
	version(t, root, appsSession, "x.txt", 1, "new1", "x.txt")
	res, err := st.ExecuteMigration(t.Context(), m)
	wantCode(t, err, artifacts.CodeConflict, "execute")
	if res.MovedVersions != 1 || res.TreeRemoved {
		t.Errorf("%+v", res)
	}
	for p, want := range map[string]string{
		appsSession + "/x.txt/versions/0/x.txt":   "old0",
		appsSession + "/x.txt/versions/1/x.txt":   "new1",
		legacySession + "/x.txt/versions/1/x.txt": "old1",
	} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", p, b, err, want)
		}
	}
	if got := steps(planMigration(t, st)); !slices.Equal(got, []string{"session x.txt conflict clash[1] conflict"}) {
		t.Errorf("replan: %q", got)
	}
}
