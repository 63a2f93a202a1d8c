package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// mixed builds a scratch root with two idle workspaces, an active one, one
// whose last access is in the future, a forged one, an index-less
// directory, a symbolic link to an idle workspace, a regular file and a
// temporary entry of package workspace.
type mixed struct {
	scratch            string
	idle1, idle2       artifacts.Scope
	d1, d2, act, futur string
	trees              map[string]string
}

func newMixed(t *testing.T) *mixed {
	t.Helper()
	m := &mixed{scratch: t.TempDir(), trees: map[string]string{}}
	m.idle1, m.idle2 = scopeN(1), scopeN(2)
	m.d1 = makeWorkspace(t, m.scratch, m.idle1, t0.Add(-72*time.Hour), 5)
	m.d2 = makeWorkspace(t, m.scratch, m.idle2, t0.Add(-25*time.Hour), 1)
	m.act = makeWorkspace(t, m.scratch, scopeN(3), t0.Add(-time.Hour), 2)
	m.futur = makeWorkspace(t, m.scratch, scopeN(4), t0.Add(400*24*time.Hour), 2)
	for _, d := range []string{m.d1, m.d2} {
		m.trees[d] = treeOf(t, filepath.Join(m.scratch, d))
	}
	// forged: a copy of an idle workspace's index in a directory it does
	// not hash to.
	must(t, os.MkdirAll(filepath.Join(m.scratch, "forged"), 0o700))
	b, err := os.ReadFile(filepath.Join(m.scratch, m.d1, workspace.IndexName))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(m.scratch, "forged", workspace.IndexName), b, 0o600))
	// forged under a DirName-shaped name too.
	other := workspace.DirName("x", "y", "z")
	must(t, os.MkdirAll(filepath.Join(m.scratch, other), 0o700))
	must(t, os.WriteFile(filepath.Join(m.scratch, other, workspace.IndexName), b, 0o600))
	must(t, os.MkdirAll(filepath.Join(m.scratch, "bare", "sub"), 0o700))
	must(t, os.WriteFile(filepath.Join(m.scratch, "bare", "sub", "f"), []byte("x"), 0o600))
	must(t, os.Symlink(filepath.Join(m.scratch, m.d1), filepath.Join(m.scratch, "link")))
	must(t, os.WriteFile(filepath.Join(m.scratch, "plainfile"), []byte("x"), 0o600))
	must(t, os.WriteFile(filepath.Join(m.scratch, workspace.ReservedPrefix+"hydrate-0123.zip"), []byte("x"), 0o600))
	old := t0.Add(-1000 * time.Hour)
	for _, n := range []string{"forged", other, "bare", "plainfile"} {
		must(t, os.Chtimes(filepath.Join(m.scratch, n), old, old))
	}
	return m
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	m := newMixed(t)
	st := newStore(t)
	// idle2 already has a snapshot: the dry run expects about v2.
	if _, err := st.Put(context.Background(), m.idle2, workspace.SnapshotName, strings.NewReader("x"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, m.scratch)
	rep := run(t, Options{Scratch: m.scratch, Store: artifacts.NewStore(st), Idle: 24 * time.Hour, DryRun: true})
	if after := treeOf(t, m.scratch); after != before {
		t.Fatalf("a dry run changed the scratch root:\n%s\n---\n%s", before, after)
	}
	items := byDir(rep)
	want := map[string]Decision{
		m.d1: WouldRemove, m.d2: WouldRemove, m.act: Kept, m.futur: Kept,
		"forged": Skipped, workspace.DirName("x", "y", "z"): Skipped, "bare": Skipped, "link": Skipped, "plainfile": Skipped,
		workspace.ReservedPrefix + "hydrate-0123.zip": Kept,
	}
	for d, dec := range want {
		if got := items[d].Decision; got != dec {
			t.Errorf("%s: %s (%s), want %s", d, got, items[d].Reason, dec)
		}
	}
	if len(rep.Items) != len(want) {
		t.Errorf("%d items, want %d", len(rep.Items), len(want))
	}
	if v := items[m.d1].SnapshotVersion; v != 1 || !strings.Contains(items[m.d1].Reason, "would snapshot as about version 1") || !strings.Contains(items[m.d1].Reason, "idle for 3d0h") {
		t.Errorf("d1: v%d %q", v, items[m.d1].Reason)
	}
	if v := items[m.d2].SnapshotVersion; v != 2 {
		t.Errorf("d2: would snapshot v%d, want about v2", v)
	}
	if r := items["link"].Reason; !strings.Contains(r, "symbolic link") {
		t.Errorf("link: %q", r)
	}
	if r := items["forged"].Reason; !strings.Contains(r, "hashes to") {
		t.Errorf("forged: %q", r)
	}
	if rep.Removed != 2 || rep.Skipped != 5 || rep.Kept != 8 || rep.Problems() != 5 {
		t.Errorf("removed %d kept %d skipped %d", rep.Removed, rep.Kept, rep.Skipped)
	}
}

func TestSweepRemovesIdleWithVerifiedSnapshots(t *testing.T) {
	m := newMixed(t)
	st := newStore(t)
	rep := run(t, Options{Scratch: m.scratch, Store: artifacts.NewStore(st), Idle: 24 * time.Hour})
	items := byDir(rep)
	for _, sc := range []artifacts.Scope{m.idle1, m.idle2} {
		d := workspace.DirName(sc.App, sc.User, sc.Session)
		it := items[d]
		if it.Decision != Removed || it.SnapshotVersion != 1 {
			t.Fatalf("%s: %s v%d (%s)", d, it.Decision, it.SnapshotVersion, it.Reason)
		}
		if _, err := os.Lstat(filepath.Join(m.scratch, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists: %v", d, err)
		}
		if err := readVersion(artifacts.NewStore(st), sc, 1); err != nil {
			t.Errorf("%s: %v", d, err)
		}
		if got := hydrateTree(t, artifacts.NewStore(st), sc, 1); got != m.trees[d] {
			t.Errorf("%s hydrates to\n%s\nwant\n%s", d, got, m.trees[d])
		}
	}
	for _, d := range []string{m.act, m.futur, "forged", "bare", "link", "plainfile"} {
		if _, err := os.Lstat(filepath.Join(m.scratch, d)); err != nil {
			t.Errorf("%s: %v", d, err)
		}
		if items[d].Decision == Removed {
			t.Errorf("%s removed", d)
		}
	}
	if rep.Removed != 2 || rep.Problems() != 5 {
		t.Errorf("removed %d, problems %d", rep.Removed, rep.Problems())
	}
	noLeftovers(t, m.scratch)
	// The link's target was removed; the link itself was never followed.
	if fi, err := os.Lstat(filepath.Join(m.scratch, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link: %v %v", fi, err)
	}
	// A second sweep finds nothing more to do.
	rep = run(t, Options{Scratch: m.scratch, Store: artifacts.NewStore(st), Idle: 24 * time.Hour})
	if rep.Removed != 0 {
		t.Errorf("second sweep removed %d", rep.Removed)
	}
}

func TestMaxRemovals(t *testing.T) {
	scratch := t.TempDir()
	st := newStore(t)
	for i := range 7 {
		makeWorkspace(t, scratch, scopeN(i), t0.Add(-48*time.Hour), 1)
	}
	rep := run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour, MaxRemovals: 3, DryRun: true})
	if rep.Removed != 3 || rep.Kept != 4 {
		t.Fatalf("dry run: would remove %d, keep %d", rep.Removed, rep.Kept)
	}
	rep = run(t, Options{Scratch: scratch, Store: artifacts.NewStore(st), Idle: time.Hour, MaxRemovals: 3, Workers: 3})
	if rep.Removed != 3 || rep.Kept != 4 || rep.Problems() != 0 {
		t.Fatalf("removed %d, kept %d", rep.Removed, rep.Kept)
	}
	for _, it := range rep.Items {
		if it.Decision == Kept && !strings.Contains(it.Reason, "--max-removals 3 reached") {
			t.Errorf("%s: %s", it.Dir, it.Reason)
		}
	}
	if n := len(entriesOf(t, scratch)); n != 4 {
		t.Errorf("%d entries left, want 4", n)
	}
}

// failingStore fails every Put, or returns corrupt bytes from Get.
type failingStore struct {
	artifacts.Driver
	failPut, corruptGet bool
}

func (f *failingStore) Put(ctx context.Context, scope artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions) (artifacts.Record, error) {
	if f.failPut {
		io.Copy(io.Discard, r)
		return artifacts.Record{}, artifacts.Errorf(artifacts.CodeIO, "put", nil, "the test store refuses writes")
	}
	return f.Driver.Put(ctx, scope, name, r, opts)
}

func (f *failingStore) Get(ctx context.Context, scope artifacts.Scope, name string, version int64) (*artifacts.Reader, error) {
	if !f.corruptGet {
		return f.Driver.Get(ctx, scope, name, version)
	}
	rec, err := f.Driver.Stat(ctx, scope, name, version)
	if err != nil {
		return nil, err
	}
	return artifacts.NewReader(rec, io.NopCloser(strings.NewReader(strings.Repeat("x", int(rec.Size)))), 0, -1, true)
}

func TestStoreFailureKeepsEverything(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T, scopes []artifacts.Scope) *artifacts.Store
	}{
		{"put fails", func(t *testing.T, _ []artifacts.Scope) *artifacts.Store {
			return artifacts.NewStore(&failingStore{Driver: newStore(t), failPut: true})
		}},
		{"get corrupt", func(t *testing.T, _ []artifacts.Scope) *artifacts.Store {
			return artifacts.NewStore(&failingStore{Driver: newStore(t), corruptGet: true})
		}},
		{"scope directory is a symlink", func(t *testing.T, scopes []artifacts.Scope) *artifacts.Store {
			st := newStore(t)
			elsewhere := t.TempDir()
			for _, sc := range scopes {
				p := st.ScopeDir(sc)
				must(t, os.MkdirAll(filepath.Dir(p), 0o700))
				must(t, os.Symlink(elsewhere, p))
			}
			return artifacts.NewStore(st)
		}},
		{"scopes is a file", func(t *testing.T, _ []artifacts.Scope) *artifacts.Store {
			st := newStore(t)
			must(t, os.MkdirAll(filepath.Dir(st.ScopesPath()), 0o700))
			must(t, os.WriteFile(st.ScopesPath(), []byte("not a directory"), 0o600))
			return artifacts.NewStore(st)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scratch := t.TempDir()
			var scopes []artifacts.Scope
			trees := map[string]string{}
			for i := range 4 {
				scopes = append(scopes, scopeN(i))
				d := makeWorkspace(t, scratch, scopeN(i), t0.Add(-48*time.Hour), 3)
				trees[d] = treeOf(t, filepath.Join(scratch, d))
			}
			rep := run(t, Options{Scratch: scratch, Store: tc.store(t, scopes), Idle: time.Hour})
			if rep.Removed != 0 || rep.Problems() != 4 {
				t.Fatalf("removed %d, problems %d", rep.Removed, rep.Problems())
			}
			for _, it := range rep.Items {
				if it.Decision != Skipped || !strings.Contains(it.Reason, "store failure") {
					t.Errorf("%s: %s %s", it.Dir, it.Decision, it.Reason)
				}
			}
			for d, tree := range trees {
				if got := treeOf(t, filepath.Join(scratch, d)); got != tree {
					t.Errorf("%s changed", d)
				}
			}
			noLeftovers(t, scratch)
		})
	}
}

func TestDiscardNeedsConfirmation(t *testing.T) {
	scratch := t.TempDir()
	var dirs []string
	for i := range 3 {
		dirs = append(dirs, makeWorkspace(t, scratch, scopeN(i), t0.Add(-48*time.Hour), 2))
	}
	makeWorkspace(t, scratch, scopeN(9), t0, 1)
	before := treeOf(t, scratch)

	// No store: a plan is returned, nothing changes.
	rep, err := Run(context.Background(), Options{Scratch: scratch, Idle: time.Hour, Now: fixedNow})
	var ce *ConfirmationError
	if !errors.As(err, &ce) || ce.Stale || ce.ErrorCode() != "confirmation_required" {
		t.Fatalf("err %v", err)
	}
	if rep.Plan == nil || len(rep.Plan.Items) != 3 || rep.Removed != 3 {
		t.Fatalf("plan %+v", rep.Plan)
	}
	if after := treeOf(t, scratch); after != before {
		t.Fatal("an unconfirmed discard changed the scratch root")
	}
	plan := *rep.Plan
	for _, it := range plan.Items {
		if it.Scope.Kind != artifacts.KindSession || it.Files != 2 || it.Bytes == 0 || it.LastAccess == "" || it.Fingerprint == "" {
			t.Errorf("plan item %+v", it)
		}
	}
	// The plan_id is the SHA-256 of the canonical JSON.
	if id, _ := plan.PlanBody.ID(); id != plan.PlanID || len(id) != 64 {
		t.Fatalf("plan_id %s, body hashes to %s", plan.PlanID, id)
	}

	// A tampered plan is refused.
	bad := plan
	bad.Items = plan.Items[:2]
	_, err = Run(context.Background(), Options{Scratch: scratch, Idle: time.Hour, Now: fixedNow, Confirm: &Confirmation{PlanID: bad.PlanID, Plan: &bad}})
	if !errors.As(err, &ce) || ce.Stale {
		t.Fatalf("tampered plan: %v", err)
	}
	// A plan for another --idle is refused.
	_, err = Run(context.Background(), Options{Scratch: scratch, Idle: 2 * time.Hour, Now: fixedNow, Confirm: &Confirmation{PlanID: plan.PlanID, Plan: &plan}})
	if !errors.As(err, &ce) || ce.Stale {
		t.Fatalf("other idle: %v", err)
	}

	// A workspace touched since the plan makes it stale (a file planted
	// with an old modification time: still idle, but changed).
	must(t, os.WriteFile(filepath.Join(scratch, dirs[0], "new.txt"), []byte("new"), 0o600))
	backdate(t, filepath.Join(scratch, dirs[0]), t0.Add(-72*time.Hour))
	_, err = Run(context.Background(), Options{Scratch: scratch, Idle: time.Hour, Now: fixedNow, Confirm: &Confirmation{PlanID: plan.PlanID}})
	if !errors.As(err, &ce) || !ce.Stale {
		t.Fatalf("stale: %v", err)
	}
	conf, err := ParseConfirmation(mustJSON(t, plan))
	must(t, err)
	_, err = Run(context.Background(), Options{Scratch: scratch, Idle: time.Hour, Now: fixedNow, Confirm: &conf})
	if !errors.As(err, &ce) || !ce.Stale || !strings.Contains(ce.Msg, "touched: "+dirs[0]) {
		t.Fatalf("stale plan: %v", err)
	}
	if n := len(entriesOf(t, scratch)); n != 4 {
		t.Fatalf("%d entries", n)
	}

	// A fresh plan, confirmed, is executed.
	rep, err = Run(context.Background(), Options{Scratch: scratch, Idle: time.Hour, Now: fixedNow})
	if !errors.As(err, &ce) {
		t.Fatal(err)
	}
	conf, err = ParseConfirmation(rep.Plan.PlanID)
	must(t, err)
	rep = run(t, Options{Scratch: scratch, Idle: time.Hour, Confirm: &conf})
	if rep.Removed != 3 || rep.Problems() != 0 {
		t.Fatalf("removed %d", rep.Removed)
	}
	for _, it := range rep.Items {
		if it.Decision == Removed && !strings.Contains(it.Reason, "discarded without a snapshot under plan "+conf.PlanID) {
			t.Errorf("%s: %s", it.Dir, it.Reason)
		}
	}
	if n := len(entriesOf(t, scratch)); n != 1 {
		t.Fatalf("%d entries left", n)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return string(b)
}

func TestParseConfirmation(t *testing.T) {
	for _, s := range []string{"", "abc", "{", `{"action":"discard","x":1}`, `{"action":"discard"} {}`, strings.Repeat("A", 64)} {
		if _, err := ParseConfirmation(s); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
			t.Errorf("%q: %v", s, err)
		}
	}
	if c, err := ParseConfirmation(" " + strings.Repeat("a", 64) + "\n"); err != nil || c.Plan != nil {
		t.Errorf("plan_id: %v", err)
	}
}

func TestFutureLastAccessCountsAsNow(t *testing.T) {
	scratch := t.TempDir()
	d := makeWorkspace(t, scratch, scopeN(1), t0.Add(time.Hour), 1)
	rep := run(t, Options{Scratch: scratch, Store: artifacts.NewStore(newStore(t)), Idle: 0})
	it := byDir(rep)[d]
	if it.Decision != Kept || it.Idle != 0 {
		t.Fatalf("%s %s idle %s", it.Decision, it.Reason, it.Idle)
	}
}
