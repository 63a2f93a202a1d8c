package shardedfs_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// TestLocate: the files of a version lie in its scope's shard, as the
// fixture's expected.tsv places them; in a scope without a shard every
// file is reported missing, at the path a restore would put it.
func TestLocate(t *testing.T) {
	s, root := fixture(t)
	st := artifacts.NewStore(s)
	exp, err := testfixtures.ExpectedShardedFS()
	if err != nil {
		t.Fatal(err)
	}
	e := exp[0]
	sc := scopeOf(e)
	files, err := st.Locate(t.Context(), sc, e.Name, e.Version)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "scope-shards", e.ScopeHash, "v1", "scopes", e.ScopeHash, "names", e.NameHash)
	if len(files) != 3 {
		t.Fatalf("got %d files, want 3", len(files))
	}
	for i, want := range []struct {
		role, base string
		exists     bool
		size       int64
	}{
		{"record", "meta", true, -1}, {"payload", "data", true, e.Size}, {"reservation", "reserve", true, -1},
	} {
		f := files[i]
		path := filepath.Join(dir, "v-"+strconv.FormatInt(e.Version, 10)+"."+want.base)
		if f.Role != want.role || f.Location != path || f.Exists != want.exists || (want.size >= 0 && f.Size != want.size) {
			t.Errorf("file %d = %+v, want %s %s exists=%v", i, f, want.role, path, want.exists)
		}
	}

	other := artifacts.AppScope("no-shard-here")
	files, err = st.Locate(t.Context(), other, "x", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Exists || filepath.Dir(f.Location) != filepath.Join(root, "scope-shards", other.Hash(), "v1", "scopes", other.Hash(), "names", artifacts.NameHash("x")) {
			t.Errorf("scope without a shard: %+v", f)
		}
	}
}
