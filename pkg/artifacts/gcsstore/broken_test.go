package gcsstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
	"github.com/agentstore/agentstore/pkg/artifacts/deletion"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// brokenGCS makes, on the emulator, a name "n" with five versions: v1
// whose record object does not decode, v2 without its payload object, v3
// whose payload is a byte short, v4 healthy, v5 whose record belongs to
// another name.
func brokenGCS(t *testing.T) (*gcsstore.Store, *artifacts.Store, artifacts.Scope) {
	t.Helper()
	s, _ := newStore(t, gcsstore.Options{})
	st := artifacts.NewStore(s)
	ctx := context.Background()
	sc := artifacts.SessionScope("app", "u", "s")
	for i := range 5 {
		if _, err := st.Put(ctx, sc, "n", strings.NewReader(strings.Repeat("x", i+1)), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Put(ctx, sc, "other", strings.NewReader("o"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	overwrite(t, s, s.ObjectName(sc, "n", 1, gcsstore.SuffixMeta), []byte("not a record"))
	if err := s.Client().Bucket(s.Bucket()).Object(s.ObjectName(sc, "n", 2, gcsstore.SuffixData)).Delete(ctx); err != nil {
		t.Fatal(err)
	}
	overwrite(t, s, s.ObjectName(sc, "n", 3, gcsstore.SuffixData), []byte("xx"))
	overwrite(t, s, s.ObjectName(sc, "n", 5, gcsstore.SuffixMeta), readObject(t, s, s.ObjectName(sc, "other", 1, gcsstore.SuffixMeta)))
	return s, st, sc
}

func TestListVersionsIncludeBroken(t *testing.T) {
	_, st, sc := brokenGCS(t)
	ctx := context.Background()
	if !st.CanListBroken() {
		t.Fatal("gcsstore does not list broken versions")
	}
	if _, err := st.ListVersions(ctx, sc, "n", artifacts.ListOptions{}); artifacts.CodeOf(err) != artifacts.CodeCorrupt {
		t.Fatalf("ListVersions without IncludeBroken = %v, want corrupt_artifact", err)
	}
	artifactstest.CheckBrokenPages(t, st, sc, "n", strings.HasPrefix, []artifactstest.BrokenPage{
		{Name: "whole name", Opts: artifacts.ListOptions{}, Items: []int64{2, 3, 4},
			Broken: map[int64]string{1: "record does not decode", 2: "payload ", 3: "payload has 2 bytes, record says 3", 5: "record"}, Next: ""},
		{Name: "page of 2", Opts: artifacts.ListOptions{Limit: 2}, Items: []int64{2},
			Broken: map[int64]string{1: "record does not decode", 2: "payload "}, Next: "2"},
		{Name: "page after 2", Opts: artifacts.ListOptions{Limit: 2, Cursor: "2"}, Items: []int64{3, 4},
			Broken: map[int64]string{3: "payload has"}, Next: "4"},
	}, func(t *testing.T, b artifacts.BrokenVersion) {
		if !strings.HasPrefix(b.Problem.Path, "gs://") {
			t.Errorf("broken v%d: path %q, want a gs:// object", b.Problem.Version, b.Problem.Path)
		}
		undecodable := b.Problem.Version == 1 || b.Problem.Version == 5
		if undecodable != (b.Record == nil) || undecodable != artifacts.IsBrokenRef(b.Ref) {
			t.Errorf("broken v%d: record %v, ref %+v", b.Problem.Version, b.Record, b.Ref)
		}
	})
	b, err := st.BrokenVersionAt(ctx, sc, "n", 1)
	if err != nil || b.Record != nil || b.Ref.Size != int64(len("not a record")) || len(b.Ref.Digest) != 64 || !strings.Contains(b.Ref.Token, "meta=") {
		t.Fatalf("BrokenVersionAt(1) = %+v, %v", b, err)
	}
	if _, err := st.BrokenVersionAt(ctx, sc, "n", 4); !artifacts.IsNotFound(err) {
		t.Errorf("BrokenVersionAt of a healthy version = %v, want not_found", err)
	}
}

func TestDeleteBroken(t *testing.T) {
	s, st, sc := brokenGCS(t)
	ctx := context.Background()
	b, err := st.BrokenVersionAt(ctx, sc, "n", 1)
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := st.Stat(ctx, sc, "n", 4)
	if err != nil {
		t.Fatal(err)
	}
	meta, data := s.ObjectName(sc, "n", 1, gcsstore.SuffixMeta), s.ObjectName(sc, "n", 1, gcsstore.SuffixData)
	otherDigest := b.Ref
	otherDigest.Digest = strings.Repeat("0", 64)
	otherToken := b.Ref
	otherToken.Token += "x"
	for _, c := range []struct {
		name string
		ref  artifacts.VersionRef
		code artifacts.Code
	}{
		{"another digest", otherDigest, artifacts.CodeConflict},
		{"another token", otherToken, artifacts.CodeConflict},
		{"a healthy version's ref", healthy.Ref(), artifacts.CodeInvalidArgument},
		{"a version that does not exist", artifacts.VersionRef{Version: 9, Token: artifacts.BrokenTokenPrefix}, artifacts.CodeNotFound},
	} {
		if err := st.DeleteBroken(ctx, sc, "n", c.ref); artifacts.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
		if !objectExists(t, s, meta) || !objectExists(t, s, data) {
			t.Fatalf("%s: objects removed", c.name)
		}
	}
	// The payload rewritten (same bytes, a new generation) makes the ref
	// stale: the plan bound the generation.
	overwrite(t, s, data, readObject(t, s, data))
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); artifacts.CodeOf(err) != artifacts.CodeConflict || !objectExists(t, s, meta) {
		t.Fatalf("after the payload was rewritten: %v", err)
	}
	if b, err = st.BrokenVersionAt(ctx, sc, "n", 1); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); err != nil {
		t.Fatal(err)
	}
	if objectExists(t, s, meta) || objectExists(t, s, data) || !objectExists(t, s, s.ObjectName(sc, "n", 1, gcsstore.SuffixReserve)) {
		t.Error("DeleteBroken left the record or payload, or removed the reservation")
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); !artifacts.IsNotFound(err) {
		t.Errorf("second DeleteBroken = %v, want not_found", err)
	}
}

// TestPlanBrokenGCS plans --all-versions and --latest through package
// deletion: the broken versions are planned bound to their objects and
// deleted, the reservations stay.
func TestPlanBrokenGCS(t *testing.T) {
	s, st, sc := brokenGCS(t)
	ctx := context.Background()
	latest, err := deletion.ComputePlan(ctx, st, "gs://b", sc, "n", artifacts.Selector{Kind: artifacts.SelectLatest})
	if err != nil {
		t.Fatal(err)
	}
	if len(latest.Versions) != 1 || latest.Versions[0].Version != 5 || latest.Versions[0].State != deletion.StateCorrupt || len(latest.Broken) != 1 {
		t.Fatalf("latest plan %+v", latest)
	}
	all, err := deletion.ComputePlan(ctx, st, "gs://b", sc, "n", artifacts.Selector{Kind: artifacts.SelectAll})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, v := range all.Versions {
		got = append(got, v.Version)
	}
	if !slices.Equal(got, []int64{1, 2, 3, 4, 5}) || len(all.Broken) != 4 {
		t.Fatalf("all-versions plan %+v", all)
	}
	done, err := deletion.Execute(ctx, st, all, deletion.ExecOptions{})
	if err != nil || len(done) != 5 {
		t.Fatalf("Execute = %d deleted, %v", len(done), err)
	}
	for v := int64(1); v <= 5; v++ {
		if objectExists(t, s, s.ObjectName(sc, "n", v, gcsstore.SuffixMeta)) || objectExists(t, s, s.ObjectName(sc, "n", v, gcsstore.SuffixData)) {
			t.Errorf("v%d left", v)
		}
		if !objectExists(t, s, s.ObjectName(sc, "n", v, gcsstore.SuffixReserve)) {
			t.Errorf("v%d's reservation removed", v)
		}
	}
	if _, err := deletion.Execute(ctx, st, latest, deletion.ExecOptions{}); err == nil {
		t.Error("a plan of a version deleted since executed")
	}
}
