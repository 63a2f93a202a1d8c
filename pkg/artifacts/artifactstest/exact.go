package artifactstest

import (
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// testDeleteExact checks Store.DeleteExact: a ref whose size, digest or
// token no longer matches the version deletes nothing (CodeConflict), a
// ref of a version that is gone deletes nothing (CodeNotFound), and
// matching refs delete exactly their versions. It also checks that a
// driver's Token is stable: reading a version twice gives the same token.
func testDeleteExact(t *testing.T, s *suite) {
	st := s.newStore(t)
	ctx := t.Context()
	scope := anyScope(s)
	recs := putN(t, st, scope, "exact", 3, 40)
	for _, r := range recs {
		again, err := st.Stat(ctx, scope, "exact", r.Version)
		if err != nil {
			t.Fatal(err)
		}
		if again.Token != r.Token {
			t.Errorf("v%d: token %q from Put, %q from Stat", r.Version, r.Token, again.Token)
		}
	}
	stale := []struct {
		name string
		ref  func(artifacts.VersionRef) artifacts.VersionRef
		code artifacts.Code
	}{
		{"size", func(r artifacts.VersionRef) artifacts.VersionRef { r.Size++; return r }, artifacts.CodeConflict},
		{"digest", func(r artifacts.VersionRef) artifacts.VersionRef { r.Digest = "x" + r.Digest; return r }, artifacts.CodeConflict},
		{"token", func(r artifacts.VersionRef) artifacts.VersionRef { r.Token += "-other"; return r }, artifacts.CodeConflict},
		{"gone", func(r artifacts.VersionRef) artifacts.VersionRef { r.Version = recs[2].Version + 100; return r }, artifacts.CodeNotFound},
	}
	for _, tc := range stale {
		// The stale ref comes last, so a store that deleted before checking
		// every ref would lose v1.
		refs := []artifacts.VersionRef{recs[0].Ref(), tc.ref(recs[1].Ref())}
		got, err := st.DeleteExact(ctx, scope, "exact", refs)
		wantCode(t, err, tc.code, "DeleteExact with a changed %s", tc.name)
		if len(got) != 0 {
			t.Errorf("DeleteExact with a changed %s deleted %d versions", tc.name, len(got))
		}
		if n := len(listAll(t, st, scope, "exact")); n != 3 {
			t.Fatalf("after a refused DeleteExact (%s): %d versions listed, want 3", tc.name, n)
		}
	}
	got, err := st.DeleteExact(ctx, scope, "exact", []artifacts.VersionRef{recs[0].Ref(), recs[2].Ref()})
	if err != nil {
		t.Fatalf("DeleteExact: %v", err)
	}
	if len(got) != 2 || got[0].Version != recs[0].Version || got[1].Version != recs[2].Version {
		t.Fatalf("DeleteExact returned %+v", got)
	}
	left := listAll(t, st, scope, "exact")
	if len(left) != 1 || left[0].Version != recs[1].Version {
		t.Fatalf("left %+v, want only v%d", left, recs[1].Version)
	}
	wantCode(t, errOf(st.DeleteExact(ctx, scope, "exact", []artifacts.VersionRef{recs[0].Ref()})), artifacts.CodeNotFound, "DeleteExact of a deleted version")
}

// listAll lists every published version of name.
func listAll(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string) []artifacts.Record {
	t.Helper()
	var out []artifacts.Record
	cursor := ""
	for {
		page, err := st.ListVersions(t.Context(), scope, name, artifacts.ListOptions{Cursor: cursor})
		if err != nil {
			t.Fatalf("ListVersions(%q): %v", name, err)
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}
