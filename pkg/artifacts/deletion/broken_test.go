package deletion_test

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/deletion"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore/fsstoretest"
)

// tree returns every file below dir with its size and modification time.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// files returns the names of the files in dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

type planned struct {
	version int64
	corrupt bool
}

func summary(p deletion.Plan) (vs []planned, broken []int64) {
	for _, v := range p.Versions {
		vs = append(vs, planned{v.Version, v.State == deletion.StateCorrupt})
	}
	for _, b := range p.Broken {
		broken = append(broken, b.Version)
	}
	return vs, broken
}

// TestPlanBrokenSelectors plans each selector on a name with broken
// versions: every selector plans a broken version bound to its files,
// names the broken versions it targets, and executing the plan deletes
// them and only them.
func TestPlanBrokenSelectors(t *testing.T) {
	all := artifacts.Selector{Kind: artifacts.SelectAll}
	latest := artifacts.Selector{Kind: artifacts.SelectLatest}
	version := func(v int64) artifacts.Selector { return artifacts.Selector{Kind: artifacts.SelectVersion, Version: v} }
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, st *artifacts.Store, sc artifacts.Scope, dir string)
		sel    artifacts.Selector
		want   []planned
		broken []int64
		reason string   // start of the first broken version's reason
		left   []string // the name directory's files afterwards
	}{
		{"all versions: the broken ones beside the healthy", nil, all,
			[]planned{{1, true}, {2, false}, {3, false}, {4, false}, {5, true}}, []int64{1, 2, 3, 5}, "record does not decode",
			[]string{"v-1.reserve", "v-2.reserve", "v-3.reserve", "v-4.reserve", "v-5.reserve"}},
		{"latest: the highest number, whose record belongs to another name", nil, latest,
			[]planned{{5, true}}, []int64{5}, "record",
			[]string{"v-1.data", "v-1.meta", "v-1.reserve", "v-2.meta", "v-2.reserve", "v-3.data", "v-3.meta", "v-3.reserve", "v-4.data", "v-4.meta", "v-4.reserve", "v-5.reserve"}},
		{"latest: a healthy highest version", func(t *testing.T, st *artifacts.Store, sc artifacts.Scope, dir string) {
			if _, err := st.Put(t.Context(), sc, "n", strings.NewReader("six"), artifacts.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}, latest, []planned{{6, false}}, nil, "", nil},
		{"latest: the highest payload missing", func(t *testing.T, st *artifacts.Store, sc artifacts.Scope, dir string) {
			if _, err := st.Put(t.Context(), sc, "n", strings.NewReader("six"), artifacts.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, "v-6.data")); err != nil {
				t.Fatal(err)
			}
		}, latest, []planned{{6, false}}, []int64{6}, "payload is missing", nil},
		{"version: a payload a byte short", nil, version(3), []planned{{3, false}}, []int64{3}, "payload has 2 bytes", nil},
		{"version: a record that does not decode", nil, version(1), []planned{{1, true}}, []int64{1}, "record does not decode", nil},
		{"version: healthy", nil, version(4), []planned{{4, false}}, nil, "", nil},
		{"version: a payload with a flipped byte", func(t *testing.T, st *artifacts.Store, sc artifacts.Scope, dir string) {
			p := filepath.Join(dir, "v-4.data")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[0] ^= 0xff
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, version(4), []planned{{4, false}}, []int64{4}, "payload SHA-256", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _, sc, dir := fsstoretest.BrokenName(t)
			if tc.setup != nil {
				tc.setup(t, st, sc, dir)
			}
			before := tree(t, dir)
			p, err := deletion.ComputePlan(t.Context(), st, "file:///x", sc, "n", tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			if got := tree(t, dir); !maps.Equal(got, before) {
				t.Fatal("planning changed the store")
			}
			vs, broken := summary(p)
			if !slices.Equal(vs, tc.want) || !slices.Equal(broken, tc.broken) {
				t.Fatalf("planned %v broken %v, want %v %v", vs, broken, tc.want, tc.broken)
			}
			if len(p.Broken) > 0 && !strings.HasPrefix(p.Broken[0].Reason, tc.reason) {
				t.Errorf("reason %q, want %q", p.Broken[0].Reason, tc.reason)
			}
			if id, _ := p.PlanBody.ID(); id != p.PlanID {
				t.Errorf("plan_id %s, body hashes to %s", p.PlanID, id)
			}
			again, err := deletion.ComputePlan(t.Context(), st, "file:///x", sc, "n", tc.sel)
			if err != nil || again.PlanID != p.PlanID {
				t.Fatalf("the same store planned again: %v, id %s vs %s", err, again.PlanID, p.PlanID)
			}
			done, err := deletion.Execute(t.Context(), st, p, deletion.ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range done {
				got = append(got, r.Version)
			}
			var want []int64
			for _, v := range tc.want {
				want = append(want, v.version)
			}
			if !slices.Equal(got, want) {
				t.Errorf("deleted %v, want %v", got, want)
			}
			if tc.left != nil {
				if f := files(t, dir); !slices.Equal(f, tc.left) {
					t.Errorf("left %v, want %v", f, tc.left)
				}
			}
			for _, v := range want {
				for _, ext := range []string{"meta", "data"} {
					if _, err := os.Lstat(filepath.Join(dir, fmt.Sprintf("v-%d.%s", v, ext))); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("v%d.%s still there (%v)", v, ext, err)
					}
				}
			}
		})
	}
}

// TestExecuteBrokenStale checks that a plan with broken versions deletes
// nothing when any of its versions changed or went since it was made.
func TestExecuteBrokenStale(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, st *artifacts.Store, sc artifacts.Scope, dir string)
	}{
		{"the undecodable record rewritten", func(t *testing.T, _ *artifacts.Store, _ artifacts.Scope, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "v-1.meta"), []byte("not a record either"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"the broken version's payload restored", func(t *testing.T, _ *artifacts.Store, _ artifacts.Scope, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "v-5.data"), []byte("restored"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a broken version deleted since", func(t *testing.T, _ *artifacts.Store, _ artifacts.Scope, dir string) {
			if err := os.Remove(filepath.Join(dir, "v-5.meta")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a healthy version deleted since", func(t *testing.T, st *artifacts.Store, sc artifacts.Scope, _ string) {
			if _, err := st.Delete(t.Context(), sc, "n", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 4}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _, sc, dir := fsstoretest.BrokenName(t)
			p, err := deletion.ComputePlan(t.Context(), st, "file:///x", sc, "n", artifacts.Selector{Kind: artifacts.SelectAll})
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t, st, sc, dir)
			before := tree(t, dir)
			done, err := deletion.Execute(t.Context(), st, p, deletion.ExecOptions{})
			var ce *plan.ConfirmationError
			if !errors.As(err, &ce) || !ce.Stale || len(done) != 0 {
				t.Fatalf("Execute = %v, %v; want a stale confirmation, nothing deleted", done, err)
			}
			if got := tree(t, dir); !maps.Equal(got, before) {
				t.Error("a stale plan changed the store")
			}
		})
	}
}

// TestPlanBrokenNotFound checks that a name with nothing left is
// not_found for every selector.
func TestPlanBrokenNotFound(t *testing.T) {
	st, _, sc, _ := fsstoretest.BrokenName(t)
	p, err := deletion.ComputePlan(t.Context(), st, "file:///x", sc, "n", artifacts.Selector{Kind: artifacts.SelectAll})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deletion.Execute(t.Context(), st, p, deletion.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sel := range []artifacts.Selector{{Kind: artifacts.SelectAll}, {Kind: artifacts.SelectLatest}, {Kind: artifacts.SelectVersion, Version: 1}} {
		if _, err := deletion.ComputePlan(t.Context(), st, "file:///x", sc, "n", sel); !artifacts.IsNotFound(err) {
			t.Errorf("%+v after everything was deleted: %v, want not_found", sel, err)
		}
	}
}

// TestPlanReadBudget checks that a plan reads payloads only within its
// budget: the versions past it are named unread, not ok, and a flipped
// byte past the budget is not claimed either way.
func TestPlanReadBudget(t *testing.T) {
	st, _, sc, dir := fsstoretest.BrokenName(t)
	for i := range 4 {
		if _, err := st.Put(t.Context(), sc, "n", strings.NewReader(fmt.Sprint("payload ", i)), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "v-9.data"))
	if err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if err := os.WriteFile(filepath.Join(dir, "v-9.data"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	all := artifacts.Selector{Kind: artifacts.SelectAll}
	for _, tc := range []struct {
		name     string
		versions int
		bytes    int64
		unread   []int64
		broken   []int64
	}{
		{"everything read", 100, 1 << 20, nil, []int64{1, 2, 3, 5, 9}},
		{"two versions read", 2, 1 << 20, []int64{7, 8, 9}, []int64{1, 2, 3, 5}},
		{"nine bytes read", 100, 9, []int64{6, 7, 8, 9}, []int64{1, 2, 3, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer deletion.SetReadBudget(tc.versions, tc.bytes)()
			p, err := deletion.ComputePlan(t.Context(), st, "file:///x", sc, "n", all)
			if err != nil {
				t.Fatal(err)
			}
			_, broken := summary(p)
			if !slices.Equal(p.Unread, tc.unread) || !slices.Equal(broken, tc.broken) {
				t.Fatalf("unread %v broken %v, want %v %v", p.Unread, broken, tc.unread, tc.broken)
			}
		})
	}
}
