package shardedfs_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/shardedfs"
	"github.com/agentstore/agentstore/pkg/repair"
)

func fixture(t *testing.T) (*shardedfs.Store, string) {
	t.Helper()
	root, err := testfixtures.CopyShardedFSStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := shardedfs.Open(root, shardedfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, root
}

func scopeOf(e testfixtures.Expected) artifacts.Scope {
	return artifacts.Scope{Kind: artifacts.Kind(e.Kind), App: e.App, User: e.User, Session: e.Session}
}

func line(r artifacts.Record) string {
	keys := r.MetadataKeys()
	slices.Sort(keys)
	return strings.Join([]string{r.Scope.String(), r.Name, strconv.FormatInt(r.Version, 10), strconv.FormatInt(r.Size, 10), r.Digest, r.MIMEType, strconv.FormatInt(r.CreatedAt, 10), strings.Join(keys, ",")}, "|")
}

func expected(t *testing.T) ([]string, map[artifacts.Scope]bool) {
	t.Helper()
	exp, err := testfixtures.ExpectedShardedFS()
	if err != nil {
		t.Fatal(err)
	}
	if len(exp) != 66 {
		t.Fatalf("expected.tsv has %d lines, want 66", len(exp))
	}
	var want []string
	scopes := map[artifacts.Scope]bool{}
	for _, e := range exp {
		sc := scopeOf(e)
		if sc.Hash() != e.ScopeHash || artifacts.NameHash(e.Name) != e.NameHash {
			t.Errorf("hash of %s %q differs from the fixture's", sc, e.Name)
		}
		scopes[sc] = true
		keys := slices.Clone(e.MetadataKeys)
		slices.Sort(keys)
		want = append(want, strings.Join([]string{sc.String(), e.Name, strconv.FormatInt(e.Version, 10), strconv.FormatInt(e.Size, 10), e.Digest, e.MIMEType, strconv.FormatInt(e.CreatedAt, 10), strings.Join(keys, ",")}, "|"))
	}
	slices.Sort(want)
	return want, scopes
}

// TestFixtureListsAsExpected: per-scope ListNames and ListVersions, and the
// store-wide Walk, reproduce the Erlang fixture's expected.tsv exactly.
func TestFixtureListsAsExpected(t *testing.T) {
	s, _ := fixture(t)
	ctx := context.Background()
	want, scopes := expected(t)
	if len(scopes) != 27 {
		t.Fatalf("%d scopes in expected.tsv, want 27", len(scopes))
	}
	var got []string
	for sc := range scopes {
		cursor := ""
		for {
			page, err := s.ListNames(ctx, sc, artifacts.ListOptions{Limit: 1, Cursor: cursor})
			if err != nil {
				t.Fatalf("ListNames %s: %v", sc, err)
			}
			for _, it := range page.Items {
				vp, err := s.ListVersions(ctx, sc, it.Name, artifacts.ListOptions{})
				if err != nil {
					t.Fatalf("ListVersions %s %q: %v", sc, it.Name, err)
				}
				if it.Versions != len(vp.Items) || it.Latest.Version != vp.Items[len(vp.Items)-1].Version {
					t.Errorf("%s %q: ListNames says %d versions, latest v%d; ListVersions %d", sc, it.Name, it.Versions, it.Latest.Version, len(vp.Items))
				}
				for _, r := range vp.Items {
					got = append(got, line(r))
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("per-scope listing differs from expected.tsv:\ngot  %q\nwant %q", got, want)
	}

	var walked []string
	n := 0
	err := s.Walk(ctx, func(u artifacts.ScopeUsage) error {
		n++
		if !u.Known || u.Hash != u.Scope.Hash() {
			t.Errorf("walk: scope %s known %v hash %s", u.Scope, u.Known, u.Hash)
		}
		for _, nu := range u.Names {
			for _, r := range nu.Records {
				walked = append(walked, line(r))
			}
		}
		return nil
	})
	if err != nil || n != 27 {
		t.Fatalf("Walk: %d scopes, %v", n, err)
	}
	slices.Sort(walked)
	if !slices.Equal(walked, want) {
		t.Errorf("store-wide walk differs from expected.tsv")
	}
	listed, err := s.ListScopes(ctx)
	if err != nil || len(listed) != 27 {
		t.Fatalf("ListScopes: %d, %v", len(listed), err)
	}
}

// TestFixtureVerify: exactly the damaged version is corrupt.
func TestFixtureVerify(t *testing.T) {
	s, root := fixture(t)
	rep, err := repair.Verify(context.Background(), artifacts.NewStore(s), repair.VerifyOptions{StoreArg: root})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Scopes != 27 || rep.Versions != 66 || rep.Checked != 66 || rep.Corrupt != 1 {
		t.Fatalf("verify: %d scopes, %d versions, %d checked, %d corrupt", rep.Scopes, rep.Versions, rep.Checked, rep.Corrupt)
	}
	it := rep.CorruptItems[0]
	if it.Scope == nil || *it.Scope != artifacts.SessionScope("shard-a", "bulk", "s-2") || it.Name != "log.txt" || it.Version != 1 {
		t.Fatalf("corrupt item %+v", it)
	}
	want := "agentstore artifacts delete --store " + root + " --app shard-a --user bulk --session s-2 --name log.txt --version 1"
	if it.NextCommand != want {
		t.Errorf("next command %q, want %q", it.NextCommand, want)
	}
}

// ageOrphan ages the interrupted put's orphan payload past the grace
// period, as the fixture's README says.
func ageOrphan(t *testing.T, s *shardedfs.Store) string {
	t.Helper()
	sc := artifacts.SessionScope("shard-a", "bulk", "s-3")
	p := versionPath(t, artifacts.NewStore(s), sc, "log.txt", 9, "data")
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFixtureRepair: the counters the Erlang repair reports, summed over
// the shards; the dry run and the limit change nothing.
func TestFixtureRepair(t *testing.T) {
	s, root := fixture(t)
	orphan := ageOrphan(t, s)
	before := tree(t, root)
	ctx := context.Background()

	if _, err := repair.Run(ctx, artifacts.NewStore(s), repair.Options{Limit: 200}); err == nil {
		t.Fatal("limit 200 of 201 files: no error")
	} else if le, ok := err.(*repair.LimitError); !ok || le.Limit != 200 {
		t.Fatalf("limit: %v", err)
	}
	dry, err := repair.Run(ctx, artifacts.NewStore(s), repair.Options{DryRun: true, Limit: 201})
	if err != nil {
		t.Fatal(err)
	}
	if after := tree(t, root); after != before {
		t.Fatal("the limit or the dry run changed the store")
	}
	rep, err := repair.Run(ctx, artifacts.NewStore(s), repair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []repair.Report{dry, rep} {
		if r.Root != root || r.Scanned != 201 || r.Removed != 1 || r.ReservationsPreserved != 68 || r.Corrupt != 0 {
			t.Errorf("report %+v: want scanned 201, removed 1, reservations_preserved 68, corrupt 0", r)
		}
		if len(r.RemovedItems) != 1 || r.RemovedItems[0].Path != orphan || r.RemovedItems[0].Reason != repair.ReasonOrphan {
			t.Errorf("removed %+v, want the orphan %s", r.RemovedItems, orphan)
		}
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("orphan still there: %v", err)
	}
	if _, err := os.Stat(strings.TrimSuffix(orphan, ".data") + ".reserve"); err != nil {
		t.Errorf("reservation removed: %v", err)
	}
}

// TestFixtureDelete removes exactly one version, from its own shard.
func TestFixtureDelete(t *testing.T) {
	s, root := fixture(t)
	ctx := context.Background()
	sc := artifacts.SessionScope("shard-a", "alice", "sess 1")
	before := tree(t, root)
	recs, err := s.Delete(ctx, sc, "reports/q3.md", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 1})
	if err != nil || len(recs) != 1 || recs[0].Version != 1 {
		t.Fatalf("Delete: %v, %v", recs, err)
	}
	after := tree(t, root)
	var gone []string
	for _, l := range strings.Split(before, "\n") {
		if !strings.Contains(after, l+"\n") && l != "" {
			gone = append(gone, l)
		}
	}
	dir := filepath.Join("scope-shards", sc.Hash(), "v1", "scopes", sc.Hash(), "names", artifacts.NameHash("reports/q3.md"))
	want := []string{filepath.Join(dir, "v-1.data"), filepath.Join(dir, "v-1.meta")}
	if !slices.Equal(gone, want) {
		t.Errorf("delete removed %q, want %q", gone, want)
	}
	if strings.Count(after, "\n") != strings.Count(before, "\n")-2 {
		t.Errorf("delete added files")
	}
}

// tree lists every path below root with its size, one per line.
func tree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b.WriteString(rel + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPutNewScopeLayout: a put into a scope without a shard makes the
// shard and the files the Erlang router and adapter make, byte for byte
// in their names and in the slot files' contents.
func TestPutNewScopeLayout(t *testing.T) {
	s, root := fixture(t)
	ctx := context.Background()
	sc := artifacts.SessionScope("shard-a", "carol", "new session")
	before := tree(t, root)
	if _, err := s.Put(ctx, sc, "notes/today.md", strings.NewReader("hello"), artifacts.PutOptions{MIMEType: "text/markdown"}); err != nil {
		t.Fatal(err)
	}
	h, nh := sc.Hash(), artifacts.NameHash("notes/today.md")
	shard := filepath.Join("scope-shards", h)
	names := filepath.Join(shard, "v1", "scopes", h, "names")
	want := []string{
		shard,
		filepath.Join(shard, "v1"),
		filepath.Join(shard, "v1", "scopes"),
		filepath.Join(shard, "v1", "scopes", ".adk-scope-slot-1.reserve"),
		filepath.Join(shard, "v1", "scopes", h),
		names,
		filepath.Join(names, ".adk-name-slot-1.reserve"),
		filepath.Join(names, nh),
		filepath.Join(names, nh, "v-1.data"),
		filepath.Join(names, nh, "v-1.meta"),
		filepath.Join(names, nh, "v-1.reserve"),
	}
	var added []string
	for _, l := range strings.Split(tree(t, root), "\n") {
		if l != "" && !strings.Contains(before, l+"\n") {
			added = append(added, l)
		}
	}
	slices.Sort(added)
	slices.Sort(want)
	if !slices.Equal(added, want) {
		t.Fatalf("put added\n%q\nwant\n%q", added, want)
	}
	for p, content := range map[string]string{
		filepath.Join(shard, "v1", "scopes", ".adk-scope-slot-1.reserve"): h,
		filepath.Join(names, ".adk-name-slot-1.reserve"):                  nh,
		filepath.Join(names, nh, "v-1.data"):                              "hello",
		filepath.Join(names, nh, "v-1.reserve"):                           "",
	} {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil || !bytes.Equal(b, []byte(content)) {
			t.Errorf("%s holds %q (%v), want %q", p, b, err, content)
		}
	}
	// The shard is a v1 store of its own holding the one scope, readable
	// by the single-root driver as the Erlang adapter would read it.
	rec, err := s.Stat(ctx, sc, "notes/today.md", artifacts.Latest)
	if err != nil || rec.Version != 1 || rec.Size != 5 {
		t.Fatalf("Stat: %+v, %v", rec, err)
	}
	// A refused put makes no shard.
	bad := artifacts.SessionScope("shard-a", "carol", "refused")
	if _, err := s.Put(ctx, bad, "a//b", strings.NewReader("x"), artifacts.PutOptions{}); artifacts.CodeOf(err) != artifacts.CodeInvalidName {
		t.Fatalf("bad name: %v", err)
	}
	if _, err := os.Stat(s.ShardRoot(bad)); !os.IsNotExist(err) {
		t.Errorf("a refused put made the shard: %v", err)
	}
}

// TestMisplacedShard: a shard whose name is not its scope's hash is never
// trusted: not listed, each version a problem, no delete suggested.
func TestMisplacedShard(t *testing.T) {
	s, root := fixture(t)
	ctx := context.Background()
	sc := artifacts.UserScope("shard-a", "alice")
	wrong := strings.Repeat("ab", 32)
	if err := os.Rename(s.ShardRoot(sc), filepath.Join(root, "scope-shards", wrong)); err != nil {
		t.Fatal(err)
	}
	scopes, err := s.ListScopes(ctx)
	if err != nil || len(scopes) != 26 || slices.Contains(scopes, sc) {
		t.Fatalf("ListScopes: %d scopes, %v", len(scopes), err)
	}
	if _, err := s.ListNames(ctx, sc, artifacts.ListOptions{}); !artifacts.IsNotFound(err) {
		t.Fatalf("ListNames of the moved scope: %v", err)
	}
	rep, err := repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{StoreArg: root})
	if err != nil {
		t.Fatal(err)
	}
	var found *repair.CorruptItem
	for i, it := range rep.CorruptItems {
		if strings.Contains(it.Reason, "is not the hash of this version's scope") {
			found = &rep.CorruptItems[i]
		}
	}
	if found == nil || found.Name != "avatar.png" || found.Version != 1 || found.NextCommand != "" || !strings.Contains(found.Reason, wrong) || !strings.Contains(found.Reason, sc.Hash()) {
		t.Fatalf("verify items %+v: want the misplaced avatar.png v1 without a next command", rep.CorruptItems)
	}
}

// TestMissingScopeAndBadInput: reads of a scope without a shard are
// not_found and create nothing; invalid input is reported as such.
func TestMissingScopeAndBadInput(t *testing.T) {
	s, root := fixture(t)
	ctx := context.Background()
	before := tree(t, root)
	none := artifacts.AppScope("nobody")
	tests := []struct {
		name string
		call func() error
		want artifacts.Code
	}{
		{"list names", func() error { _, err := s.ListNames(ctx, none, artifacts.ListOptions{}); return err }, artifacts.CodeNotFound},
		{"list versions", func() error { _, err := s.ListVersions(ctx, none, "x", artifacts.ListOptions{}); return err }, artifacts.CodeNotFound},
		{"get", func() error { _, err := s.Get(ctx, none, "x", artifacts.Latest); return err }, artifacts.CodeNotFound},
		{"delete", func() error {
			_, err := s.Delete(ctx, none, "x", artifacts.Selector{Kind: artifacts.SelectAll})
			return err
		}, artifacts.CodeNotFound},
		{"bad name", func() error { _, err := s.Stat(ctx, none, "a//b", artifacts.Latest); return err }, artifacts.CodeInvalidName},
		{"bad scope", func() error {
			_, err := s.ListNames(ctx, artifacts.Scope{Kind: artifacts.KindApp}, artifacts.ListOptions{})
			return err
		}, artifacts.CodeInvalidScope},
	}
	for _, tt := range tests {
		if err := tt.call(); artifacts.CodeOf(err) != tt.want {
			t.Errorf("%s: %v (code %s), want %s", tt.name, err, artifacts.CodeOf(err), tt.want)
		}
	}
	if tree(t, root) != before {
		t.Error("reads changed the store")
	}
	// A stray file where a shard would be is refused, not followed.
	if err := os.WriteFile(filepath.Join(root, "scope-shards", strings.Repeat("cd", 32)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Walk(ctx, func(artifacts.ScopeUsage) error { return nil }); artifacts.CodeOf(err) != artifacts.CodeUnsafeStore {
		t.Errorf("walk over a file shard: %v", err)
	}
}
