package repair_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/repair"
)

func corruptNames(rep repair.VerifyReport) []string {
	var out []string
	for _, c := range rep.CorruptItems {
		out = append(out, c.Name)
	}
	return out
}

func TestVerifyFixture(t *testing.T) {
	root, _ := agedFixture(t)
	before := listing(t, root)
	s, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{StoreArg: "/x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := corruptNames(rep); !slices.Equal(got, []string{"flipped.bin", "lost-data.bin"}) {
		t.Fatalf("corrupt %q: %+v", got, rep.CorruptItems)
	}
	exp, _ := testfixtures.ExpectedFS()
	if rep.Versions != int64(len(exp)) || rep.Checked != rep.Versions-1 || rep.Scopes != 6 {
		t.Fatalf("versions %d (expected.tsv has %d), checked %d, scopes %d", rep.Versions, len(exp), rep.Checked, rep.Scopes)
	}
	var bytes int64
	for _, e := range exp {
		if e.Name != "lost-data.bin" && e.Name != "flipped.bin" {
			bytes += e.Size
		}
	}
	if rep.Bytes != bytes {
		t.Fatalf("bytes %d, want %d", rep.Bytes, bytes)
	}
	for _, c := range rep.CorruptItems {
		if c.Scope == nil || *c.Scope != damagedScope || c.Version != 1 {
			t.Errorf("%+v", c)
		}
		want := "agentstore artifacts delete --store /x --app demo-a --user user-42 --session session-damaged --name " + c.Name + " --version 1"
		if c.NextCommand != want {
			t.Errorf("next command %q", c.NextCommand)
		}
	}
	if !strings.Contains(rep.CorruptItems[0].Reason, "SHA-256") {
		t.Errorf("flipped.bin reason %q", rep.CorruptItems[0].Reason)
	}
	if listing(t, root) != before {
		t.Fatal("verify changed the store")
	}

	// One scope.
	other := artifacts.SessionScope("demo-a", "user-42", "session-7")
	rep, err = repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{Scope: &other})
	if err != nil || rep.Corrupt != 0 || rep.Scopes != 1 || rep.Versions != 3 {
		t.Fatalf("one scope: %+v %v", rep, err)
	}
	rep, err = repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{Scope: &damagedScope})
	if err != nil || !slices.Equal(corruptNames(rep), []string{"flipped.bin", "lost-data.bin"}) {
		t.Fatalf("damaged scope: %+v %v", rep, err)
	}
}

func TestVerifySample(t *testing.T) {
	root, _ := agedFixture(t)
	s, _ := fsstore.Open(root, fsstore.Options{})
	ctx := context.Background()
	a, err := repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{Sample: 30, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{Sample: 30, Seed: 42, Workers: 1})
	if a.Seed != 42 || a.SamplePercent != 30 || a.Checked != b.Checked || !slices.Equal(corruptNames(a), corruptNames(b)) {
		t.Fatalf("same seed, different samples: %d %d", a.Checked, b.Checked)
	}
	share := float64(a.Checked) / float64(a.Versions)
	if share < 0.2 || share > 0.4 {
		t.Fatalf("sampled %d of %d", a.Checked, a.Versions)
	}
	c, _ := repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{Sample: 30})
	if c.Seed == 0 {
		t.Fatal("no seed reported")
	}
	// lost-data.bin is found by the walk, whatever the sample.
	if !slices.Contains(corruptNames(c), "lost-data.bin") {
		t.Fatal("walk problems depend on the sample")
	}
	for _, bad := range []float64{-1, 101} {
		if _, err := repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{Sample: bad}); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
			t.Errorf("sample %v: %v", bad, err)
		}
	}
}

// onlyStore hides every method but those of artifacts.Driver.
type onlyStore struct{ artifacts.Driver }

// TestVerifyAnyWalker runs Verify over another adapter (the in-memory one):
// it needs nothing but *artifacts.Store and artifacts.Walker.
func TestVerifyAnyWalker(t *testing.T) {
	ctx := context.Background()
	m, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		for range 3 {
			if _, err := m.Put(ctx, damagedScope, name, strings.NewReader(name+" payload"), artifacts.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	m.CorruptPayload(damagedScope, "b", 2)
	m.CorruptRecord(damagedScope, "c", 3)
	rep, err := repair.Verify(ctx, artifacts.NewStore(m), repair.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := corruptNames(rep); !slices.Equal(got, []string{"b", "c"}) || rep.CorruptItems[0].Version != 2 || rep.CorruptItems[1].Version != 3 {
		t.Fatalf("%+v", rep.CorruptItems)
	}
	if _, err := repair.Verify(ctx, artifacts.NewStore(onlyStore{m}), repair.VerifyOptions{}); err != repair.ErrNotWalker {
		t.Fatalf("got %v, want ErrNotWalker", err)
	}
}
