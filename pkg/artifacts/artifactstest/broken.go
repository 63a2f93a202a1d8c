package artifactstest

import (
	"slices"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// testBrokenVersions checks artifacts.BrokenLister. A driver that
// implements it lists a version whose record no longer decodes beside the
// healthy ones (VersionPage.Broken, bound to its files or objects), finds
// it by number, and deletes it only while it is exactly as listed; one
// that does not says so (CodeUnsupported) and never lists around a
// damaged record.
func testBrokenVersions(t *testing.T, s *suite) {
	st := s.newStore(t)
	ctx := t.Context()
	// Session scopes are the ones every layout holds.
	scope := artifacts.SessionScope("conformance-app", "user-1", "broken-versions")
	recs := putN(t, st, scope, "broken", 3, 70)
	bad := recs[1].Version
	s.corruptRecord(t, st, scope, "broken", bad)
	if !st.CanListBroken() {
		wantCode(t, st.DeleteBroken(ctx, scope, "broken", artifacts.VersionRef{Version: bad, Token: artifacts.BrokenTokenPrefix}), artifacts.CodeUnsupported, "DeleteBroken of a driver that cannot")
		wantCode(t, errOf(st.BrokenVersionAt(ctx, scope, "broken", bad)), artifacts.CodeUnsupported, "BrokenVersionAt of a driver that cannot")
		// IncludeBroken changes nothing: the same answer as without.
		plain, perr := st.ListVersions(ctx, scope, "broken", artifacts.ListOptions{})
		page, err := st.ListVersions(ctx, scope, "broken", artifacts.ListOptions{IncludeBroken: true})
		if artifacts.CodeOf(err) != artifacts.CodeOf(perr) || len(page.Broken) != 0 || len(page.Items) != len(plain.Items) {
			t.Errorf("ListVersions with IncludeBroken of a driver that cannot = %d items, %d broken, %v; without: %d items, %v", len(page.Items), len(page.Broken), err, len(plain.Items), perr)
		}
		return
	}
	wantCode(t, errOf(st.ListVersions(ctx, scope, "broken", artifacts.ListOptions{})), artifacts.CodeCorrupt, "ListVersions without IncludeBroken over a damaged record")
	listed := func(what string) ([]int64, []artifacts.BrokenVersion) {
		t.Helper()
		page, err := st.ListVersions(ctx, scope, "broken", artifacts.ListOptions{IncludeBroken: true})
		if err != nil {
			t.Fatalf("ListVersions with IncludeBroken %s: %v", what, err)
		}
		var items []int64
		for _, r := range page.Items {
			items = append(items, r.Version)
		}
		return items, page.Broken
	}
	items, broken := listed("over a damaged record")
	if want := []int64{recs[0].Version, recs[2].Version}; !slices.Equal(items, want) {
		t.Errorf("healthy versions listed %v, want %v", items, want)
	}
	if len(broken) != 1 {
		t.Fatalf("broken versions listed: %+v, want v%d", broken, bad)
	}
	b := broken[0]
	if b.Problem.Version != bad || b.Problem.Code != artifacts.CodeCorrupt || b.Problem.Reason == "" || b.Record != nil || !artifacts.IsBrokenRef(b.Ref) || b.Ref.Version != bad {
		t.Errorf("broken version %+v", b)
	}
	// A page of one version after the one before it holds just the
	// damaged version.
	at, err := st.BrokenVersionAt(ctx, scope, "broken", bad)
	if err != nil || at.Ref != b.Ref {
		t.Errorf("BrokenVersionAt(%d) = %+v, %v; want the listed %+v", bad, at, err, b.Ref)
	}
	wantCode(t, errOf(st.BrokenVersionAt(ctx, scope, "broken", recs[0].Version)), artifacts.CodeNotFound, "BrokenVersionAt of a healthy version")

	// Refused, deleting nothing: a healthy version's ref, a ref whose
	// binding differs, a version that does not exist.
	other := b.Ref
	other.Token += "-changed"
	wantCode(t, st.DeleteBroken(ctx, scope, "broken", recs[0].Ref()), artifacts.CodeInvalidArgument, "DeleteBroken of a healthy version's ref")
	wantCode(t, st.DeleteBroken(ctx, scope, "broken", other), artifacts.CodeConflict, "DeleteBroken of a changed binding")
	wantCode(t, st.DeleteBroken(ctx, scope, "broken", artifacts.VersionRef{Version: recs[2].Version + 5, Token: artifacts.BrokenTokenPrefix}), artifacts.CodeNotFound, "DeleteBroken of a version that does not exist")
	if items2, broken2 := listed("after refused deletes"); !slices.Equal(items2, items) || len(broken2) != 1 || broken2[0].Ref != b.Ref {
		t.Fatalf("refused deletes changed the name: %v %+v", items2, broken2)
	}

	if err := st.DeleteBroken(ctx, scope, "broken", b.Ref); err != nil {
		t.Fatalf("DeleteBroken of the listed ref: %v", err)
	}
	items, broken = listed("after the delete")
	if want := []int64{recs[0].Version, recs[2].Version}; !slices.Equal(items, want) || len(broken) != 0 {
		t.Errorf("after DeleteBroken: %v %+v, want %v and nothing broken", items, broken, want)
	}
	if _, err := st.ListVersions(ctx, scope, "broken", artifacts.ListOptions{}); err != nil {
		t.Errorf("ListVersions without IncludeBroken after the delete: %v", err)
	}
	for _, i := range []int{0, 2} {
		mustGet(t, st, scope, "broken", recs[i].Version, data(100+i, 70+uint64(i)))
	}
	wantCode(t, st.DeleteBroken(ctx, scope, "broken", b.Ref), artifacts.CodeNotFound, "a second DeleteBroken")
}
