package adkfile_test

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
	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
	"github.com/agentstore/agentstore/pkg/artifacts/deletion"
)

// brokenADK makes, in ADK's file layout, a name "n" with seven versions:
// v0 healthy, v1 without metadata.json (a save killed mid-write), v2
// whose metadata.json does not parse, v3 whose metadata.json names
// version 9, v4 without its payload, v5 healthy, v6 an empty version
// directory. It returns the store, scope and the name's versions/.
func brokenADK(t *testing.T) (*artifacts.Store, artifacts.Scope, string) {
	t.Helper()
	root := t.TempDir()
	st := artifacts.NewStore(open(t, root, adkfile.Options{}))
	sc := artifacts.SessionScope("app", "u", "s")
	for i := range 6 {
		if _, err := st.Put(t.Context(), sc, "n", strings.NewReader(strings.Repeat("x", i+1)), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	vdir := filepath.Join(root, "apps", "app", "users", "u", "sessions", "s", "artifacts", "n", "versions")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Remove(filepath.Join(vdir, "1", "metadata.json")))
	must(os.WriteFile(filepath.Join(vdir, "2", "metadata.json"), []byte(`{"fileName": "n", "vers`), 0o600))
	meta, err := os.ReadFile(filepath.Join(vdir, "3", "metadata.json"))
	must(err)
	must(os.WriteFile(filepath.Join(vdir, "3", "metadata.json"), []byte(strings.Replace(string(meta), `"version": 3,`, `"version": 9,`, 1)), 0o600))
	must(os.Remove(filepath.Join(vdir, "4", "n")))
	must(os.Mkdir(filepath.Join(vdir, "6"), 0o755))
	return st, sc, vdir
}

func TestListVersionsIncludeBroken(t *testing.T) {
	st, sc, vdir := brokenADK(t)
	ctx := t.Context()
	if !st.CanListBroken() {
		t.Fatal("adkfile does not list broken versions")
	}
	if b, _ := os.ReadFile(filepath.Join(vdir, "3", "metadata.json")); !strings.Contains(string(b), `"version": 9,`) {
		t.Fatalf("test set-up: v3's metadata.json still names its own version: %s", b)
	}
	if _, err := st.ListVersions(ctx, sc, "n", artifacts.ListOptions{}); artifacts.CodeOf(err) != artifacts.CodeCorrupt {
		t.Fatalf("ListVersions without IncludeBroken = %v, want corrupt_artifact", err)
	}
	artifactstest.CheckBrokenPages(t, st, sc, "n", strings.Contains, []artifactstest.BrokenPage{
		{Name: "whole name", Opts: artifacts.ListOptions{}, Items: []int64{0, 5},
			Broken: map[int64]string{1: "payload without metadata.json", 2: "does not parse", 3: "says version 9", 4: "the payload", 6: "empty version directory"}, Next: ""},
		{Name: "page of 3", Opts: artifacts.ListOptions{Limit: 3}, Items: []int64{0},
			Broken: map[int64]string{1: "payload without metadata.json", 2: "does not parse"}, Next: "2"},
		{Name: "page after 2", Opts: artifacts.ListOptions{Limit: 3, Cursor: "2"}, Items: []int64{5},
			Broken: map[int64]string{3: "says version 9", 4: "the payload"}, Next: "5"},
	}, func(t *testing.T, b artifacts.BrokenVersion) {
		if b.Record != nil || !artifacts.IsBrokenRef(b.Ref) {
			t.Errorf("broken v%d: %+v, want no record and a broken ref", b.Problem.Version, b)
		}
	})
	// Unreadable is not corrupt: a metadata.json nobody may read stays an
	// error, even with IncludeBroken (as root, permissions do not apply).
	if os.Geteuid() != 0 {
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.Chmod(filepath.Join(vdir, "5", "metadata.json"), 0))
		_, err := st.ListVersions(ctx, sc, "n", artifacts.ListOptions{IncludeBroken: true})
		must(os.Chmod(filepath.Join(vdir, "5", "metadata.json"), 0o644))
		if code := artifacts.CodeOf(err); code != artifacts.CodePermission {
			t.Errorf("an unreadable metadata.json: %v, want permission_denied", err)
		}
	}
}

// tree returns every entry below dir with its kind, size and time.
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

func TestDeleteBroken(t *testing.T) {
	st, sc, vdir := brokenADK(t)
	ctx := t.Context()
	b, err := st.BrokenVersionAt(ctx, sc, "n", 2)
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := st.Stat(ctx, sc, "n", 5)
	if err != nil {
		t.Fatal(err)
	}
	other := b.Ref
	other.Token += "x"
	before := tree(t, vdir)
	for _, c := range []struct {
		name string
		ref  artifacts.VersionRef
		code artifacts.Code
	}{
		{"another token", other, artifacts.CodeConflict},
		{"a healthy version's ref", healthy.Ref(), artifacts.CodeInvalidArgument},
		{"a version that does not exist", artifacts.VersionRef{Version: 9, Token: artifacts.BrokenTokenPrefix}, artifacts.CodeNotFound},
	} {
		if err := st.DeleteBroken(ctx, sc, "n", c.ref); artifacts.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
		if !maps.Equal(tree(t, vdir), before) {
			t.Fatalf("%s: the store changed", c.name)
		}
	}
	// A file added to the directory (a save finishing) makes the ref stale.
	if err := os.WriteFile(filepath.Join(vdir, "2", "n"), []byte("yy"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); artifacts.CodeOf(err) != artifacts.CodeConflict {
		t.Fatalf("after the payload changed: %v, want conflict", err)
	}
	if b, err = st.BrokenVersionAt(ctx, sc, "n", 2); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(vdir, "2")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("version directory 2 left: %v", err)
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); !artifacts.IsNotFound(err) {
		t.Errorf("second DeleteBroken = %v, want not_found", err)
	}
	if _, err := st.Stat(ctx, sc, "n", 5); err != nil {
		t.Errorf("the healthy v5 after deleting v2: %v", err)
	}
}

// TestPlanBrokenADK plans deletes through package deletion on ADK's file
// layout, which hands numbers out again: latest is the highest number
// (an empty version directory), all-versions takes every version
// directory, and the number the next save takes counts broken versions
// as ADK does.
func TestPlanBrokenADK(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sel    artifacts.Selector
		want   []int64
		reused int64 // -1: none
		left   []string
	}{
		{"latest", artifacts.Selector{Kind: artifacts.SelectLatest}, []int64{6}, 6, []string{"0", "1", "2", "3", "4", "5"}},
		{"a middle broken version", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 3}, []int64{3}, -1, []string{"0", "1", "2", "4", "5", "6"}},
		{"all versions", artifacts.Selector{Kind: artifacts.SelectAll}, []int64{0, 1, 2, 3, 4, 5, 6}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, sc, vdir := brokenADK(t)
			p, err := deletion.ComputePlan(t.Context(), st, "file:///x", sc, "n", tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, v := range p.Versions {
				got = append(got, v.Version)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("planned %v, want %v", got, tc.want)
			}
			if reused := int64(-1); p.ReusedNumber != nil && *p.ReusedNumber != tc.reused || p.ReusedNumber == nil && tc.reused != reused {
				t.Errorf("reused number %v, want %d", p.ReusedNumber, tc.reused)
			}
			before := tree(t, vdir)
			_, err = deletion.Execute(t.Context(), st, p, deletion.ExecOptions{})
			var ce *plan.ConfirmationError
			switch {
			case tc.reused < 0 && err != nil:
				t.Fatal(err)
			case tc.reused >= 0 && (!errors.As(err, &ce) || !maps.Equal(tree(t, vdir), before)):
				t.Fatalf("without --allow-number-reuse: %v, want refused, nothing changed", err)
			case tc.reused >= 0:
				if _, err := deletion.Execute(t.Context(), st, p, deletion.ExecOptions{AllowNumberReuse: true}); err != nil {
					t.Fatal(err)
				}
			}
			es, err := os.ReadDir(vdir)
			if tc.left == nil {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("versions/ left after deleting every version: %v %v", es, err)
				}
				return
			}
			var left []string
			for _, e := range es {
				left = append(left, e.Name())
			}
			slices.Sort(left)
			if !slices.Equal(left, tc.left) {
				t.Errorf("left %v, want %v", left, tc.left)
			}
		})
	}
}

// TestInterruptedFixtureBroken lists the version ADK JS left without
// metadata.json in the fixture's store-interrupted/ as broken, and
// deletes it bound to its files.
func TestInterruptedFixtureBroken(t *testing.T) {
	root, err := testfixtures.CopyADKFileInterrupted(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(open(t, root, adkfile.Options{App: "adk-js-file"}))
	sc := artifacts.SessionScope("adk-js-file", "gina", "n-01")
	if _, err := st.ListVersions(t.Context(), sc, "upload.bin", artifacts.ListOptions{}); !artifacts.IsNotFound(err) {
		t.Errorf("without IncludeBroken: %v, want not_found (nothing published)", err)
	}
	page, err := st.ListVersions(t.Context(), sc, "upload.bin", artifacts.ListOptions{IncludeBroken: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 || len(page.Broken) != 1 || page.Broken[0].Problem.Version != 0 || !strings.HasPrefix(page.Broken[0].Problem.Reason, adkfile.ReasonNoMetadata) {
		t.Fatalf("page %+v", page)
	}
	p, err := deletion.ComputePlan(t.Context(), st, "file:///x", sc, "upload.bin", artifacts.Selector{Kind: artifacts.SelectAll})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deletion.Execute(t.Context(), st, p, deletion.ExecOptions{AllowNumberReuse: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "users", "gina", "sessions", "n-01", "artifacts", "upload.bin")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("upload.bin left: %v", err)
	}
	if _, err := st.Stat(t.Context(), sc, "summary.txt", artifacts.Latest); err != nil {
		t.Errorf("another name after the delete: %v", err)
	}
}
