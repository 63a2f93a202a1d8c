package gcsstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// TestDeleteExactGenerations checks that a version's ref binds the
// generations of its record and payload objects: a payload put back with
// the same bytes makes the ref stale (nothing deleted), in the check
// before any delete and in the driver's own delete, which puts the record
// back when the payload changed after the record went.
func TestDeleteExactGenerations(t *testing.T) {
	s, _ := newStore(t, gcsstore.Options{})
	st := artifacts.NewStore(s)
	ctx := context.Background()
	sc := artifacts.SessionScope("app", "u", "s")
	for _, body := range []string{"one", "two"} {
		if _, err := st.Put(ctx, sc, "n", strings.NewReader(body), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	meta, data := s.ObjectName(sc, "n", 1, gcsstore.SuffixMeta), s.ObjectName(sc, "n", 1, gcsstore.SuffixData)
	planned, err := st.Stat(ctx, sc, "n", 1)
	if err != nil {
		t.Fatal(err)
	}
	page, err := st.ListVersions(ctx, sc, "n", artifacts.ListOptions{})
	if err != nil || len(page.Items) != 2 || page.Items[0].Ref() != planned.Ref() {
		t.Fatalf("ListVersions = %+v, %v; want v1 bound as Stat binds it (%+v)", page.Items, err, planned.Ref())
	}
	if !strings.HasPrefix(planned.Token, "gen:meta=") {
		t.Fatalf("token %q binds no generations", planned.Token)
	}

	// The same bytes put back: a new generation, so the ref is stale.
	overwrite(t, s, data, readObject(t, s, data))
	if _, err := st.DeleteExact(ctx, sc, "n", []artifacts.VersionRef{planned.Ref()}); artifacts.CodeOf(err) != artifacts.CodeConflict {
		t.Fatalf("DeleteExact after the payload was put back = %v, want conflict", err)
	}
	if !objectExists(t, s, meta) || !objectExists(t, s, data) {
		t.Fatal("a stale DeleteExact removed an object")
	}

	// The driver alone (the payload rewritten between the check and the
	// delete): the record goes first, then the payload's precondition
	// fails, and the record is put back.
	planned, err = st.Stat(ctx, sc, "n", 1)
	if err != nil {
		t.Fatal(err)
	}
	overwrite(t, s, data, readObject(t, s, data))
	_, err = s.DeleteExact(ctx, sc, "n", planned.Ref())
	if artifacts.CodeOf(err) != artifacts.CodeConflict || !strings.Contains(err.Error(), "was put back") {
		t.Fatalf("driver DeleteExact after the payload was rewritten = %v, want conflict saying the record was put back", err)
	}
	got, err := st.Stat(ctx, sc, "n", 1)
	if err != nil || got.Digest != planned.Digest || got.Size != planned.Size {
		t.Fatalf("after the record was put back: Stat = %+v, %v", got, err)
	}
	r, err := st.Get(ctx, sc, "n", 1)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()

	// Another record generation, an invalid token, a missing version.
	if _, err := s.DeleteExact(ctx, sc, "n", planned.Ref()); artifacts.CodeOf(err) != artifacts.CodeConflict {
		t.Errorf("driver DeleteExact of the old record generation = %v, want conflict", err)
	}
	bad := got.Ref()
	bad.Token = "gen:nothing"
	if _, err := s.DeleteExact(ctx, sc, "n", bad); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Errorf("driver DeleteExact with token %q = %v, want invalid_argument", bad.Token, err)
	}

	// The current ref deletes the record and payload; the reservation and
	// v2 stay; a second delete finds nothing.
	if _, err := st.DeleteExact(ctx, sc, "n", []artifacts.VersionRef{got.Ref()}); err != nil {
		t.Fatal(err)
	}
	if objectExists(t, s, meta) || objectExists(t, s, data) || !objectExists(t, s, s.ObjectName(sc, "n", 1, gcsstore.SuffixReserve)) {
		t.Error("DeleteExact left the record or payload, or removed the reservation")
	}
	if _, err := st.Stat(ctx, sc, "n", 2); err != nil {
		t.Errorf("v2 after deleting v1: %v", err)
	}
	if _, err := s.DeleteExact(ctx, sc, "n", got.Ref()); !artifacts.IsNotFound(err) {
		t.Errorf("second DeleteExact = %v, want not_found", err)
	}
}
