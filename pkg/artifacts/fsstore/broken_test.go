package fsstore_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore/fsstoretest"
)

func TestListVersionsIncludeBroken(t *testing.T) {
	st, _, sc, _ := fsstoretest.BrokenName(t)
	ctx := t.Context()
	// Without IncludeBroken the listing still fails on the first bad record.
	if _, err := st.ListVersions(ctx, sc, "n", artifacts.ListOptions{}); artifacts.CodeOf(err) != artifacts.CodeCorrupt {
		t.Fatalf("ListVersions without IncludeBroken = %v, want corrupt_artifact", err)
	}
	artifactstest.CheckBrokenPages(t, st, sc, "n", strings.HasPrefix, []artifactstest.BrokenPage{
		{Name: "whole name", Opts: artifacts.ListOptions{}, Items: []int64{2, 3, 4},
			Broken: map[int64]string{1: "record does not decode", 2: "payload is missing", 3: "payload has 2 bytes, record says 3", 5: "record"}, Next: ""},
		{Name: "page of 2", Opts: artifacts.ListOptions{Limit: 2}, Items: []int64{2},
			Broken: map[int64]string{1: "record does not decode", 2: "payload is missing"}, Next: "2"},
		{Name: "page after 2", Opts: artifacts.ListOptions{Limit: 2, Cursor: "2"}, Items: []int64{3, 4},
			Broken: map[int64]string{3: "payload has"}, Next: "4"},
	}, func(t *testing.T, b artifacts.BrokenVersion) {
		undecodable := b.Problem.Version == 1 || b.Problem.Version == 5
		if undecodable != (b.Record == nil) || undecodable != artifacts.IsBrokenRef(b.Ref) {
			t.Errorf("broken v%d: record %v, ref %+v", b.Problem.Version, b.Record, b.Ref)
		}
	})
	b, err := st.BrokenVersionAt(ctx, sc, "n", 1)
	if err != nil || b.Record != nil || b.Ref.Version != 1 || b.Ref.Size != int64(len("not a record")) || len(b.Ref.Digest) != 64 {
		t.Fatalf("BrokenVersionAt(1) = %+v, %v", b, err)
	}
	if _, err := st.BrokenVersionAt(ctx, sc, "n", 4); !artifacts.IsNotFound(err) {
		t.Errorf("BrokenVersionAt of a healthy version = %v, want not_found", err)
	}
}

func TestDeleteBroken(t *testing.T) {
	st, _, sc, dir := fsstoretest.BrokenName(t)
	ctx := t.Context()
	b, err := st.BrokenVersionAt(ctx, sc, "n", 1)
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := st.Stat(ctx, sc, "n", 4)
	if err != nil {
		t.Fatal(err)
	}
	exists := func(f string) bool { _, err := os.Lstat(filepath.Join(dir, f)); return err == nil }
	changedDigest := b.Ref
	changedDigest.Digest = strings.Repeat("0", 64)
	changedToken := b.Ref
	changedToken.Token += "x"
	for _, c := range []struct {
		name string
		ref  artifacts.VersionRef
		code artifacts.Code
	}{
		{"another digest", changedDigest, artifacts.CodeConflict},
		{"another token", changedToken, artifacts.CodeConflict},
		{"a healthy version's ref", healthy.Ref(), artifacts.CodeInvalidArgument},
		{"a version that does not exist", artifacts.VersionRef{Version: 9, Token: artifacts.BrokenTokenPrefix}, artifacts.CodeNotFound},
	} {
		if err := st.DeleteBroken(ctx, sc, "n", c.ref); artifacts.CodeOf(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
		if !exists("v-1.meta") || !exists("v-1.data") || !exists("v-4.meta") {
			t.Fatalf("%s: files removed", c.name)
		}
	}
	// The payload rewritten (a restore from backup) makes the ref stale.
	if err := os.WriteFile(filepath.Join(dir, "v-1.data"), []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); artifacts.CodeOf(err) != artifacts.CodeConflict || !exists("v-1.meta") {
		t.Fatalf("after the payload changed: %v", err)
	}
	b, err = st.BrokenVersionAt(ctx, sc, "n", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); err != nil {
		t.Fatal(err)
	}
	if exists("v-1.meta") || exists("v-1.data") || !exists("v-1.reserve") {
		t.Error("DeleteBroken left the record or payload, or removed the reservation")
	}
	if err := st.DeleteBroken(ctx, sc, "n", b.Ref); !artifacts.IsNotFound(err) {
		t.Errorf("second DeleteBroken = %v, want not_found", err)
	}
}
