package repair_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/repair"
)

// damagedScope holds ok.bin, flipped.bin and lost-data.bin in the fixture.
var damagedScope = artifacts.SessionScope("demo-a", "user-42", "session-damaged")

// agedFixture copies the Erlang fixture and ages, as its README says, the
// crashed staging files and the orphan payload of ok.bin past the grace
// period, leaving the in-flight v-5.data.tmp-* fresh.
func agedFixture(t testing.TB) (root, okDir string) {
	t.Helper()
	root, err := testfixtures.CopyFSStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	okDir = filepath.Join(root, "v1", "scopes", damagedScope.Hash(), "names", artifacts.NameHash("ok.bin"))
	old := time.Now().Add(-time.Hour)
	aged := 0
	for _, pattern := range []string{"v-3.data.tmp-*", "v-4.data", "v-4.meta.tmp-*"} {
		m, _ := filepath.Glob(filepath.Join(okDir, pattern))
		for _, p := range m {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
			aged++
		}
	}
	if aged != 3 {
		t.Fatalf("aged %d files, want 3", aged)
	}
	return root, okDir
}

// listing describes every file and directory below root with its size and
// modification time.
func listing(t testing.TB, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestFixture(t *testing.T) {
	root, okDir := agedFixture(t)
	ctx := context.Background()
	rep, err := repair.Repair(ctx, root, repair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Scanned != 1243 || rep.Removed != 3 || rep.ReservationsPreserved != 416 || rep.Corrupt != 1 || rep.Young != 1 {
		t.Fatalf("first run: scanned %d removed %d reservations %d corrupt %d young %d; want 1243 3 416 1 1",
			rep.Scanned, rep.Removed, rep.ReservationsPreserved, rep.Corrupt, rep.Young)
	}
	var removed []string
	for _, it := range rep.RemovedItems {
		if filepath.Dir(it.Path) != okDir || it.Age < 59*time.Minute {
			t.Errorf("removed %+v", it)
		}
		removed = append(removed, filepath.Base(it.Path)[:min(len(filepath.Base(it.Path)), 13)]+":"+it.Reason)
	}
	want := []string{"v-3.data.tmp-:" + repair.ReasonStaged, "v-4.data:" + repair.ReasonOrphan, "v-4.meta.tmp-:" + repair.ReasonStaged}
	if !slices.Equal(removed, want) {
		t.Fatalf("removed %q, want %q", removed, want)
	}
	c := rep.CorruptItems[0]
	if c.Name != "lost-data.bin" || c.Version != 1 || c.Scope == nil || *c.Scope != damagedScope || c.Reason != "payload is missing" {
		t.Fatalf("corrupt item %+v", c)
	}
	wantCmd := "agentstore artifacts delete --store " + root + " --app demo-a --user user-42 --session session-damaged --name lost-data.bin --version 1"
	if c.NextCommand != wantCmd {
		t.Fatalf("next command %q, want %q", c.NextCommand, wantCmd)
	}
	if _, err := os.Stat(c.Path); err != nil {
		t.Fatalf("the corrupt record was touched: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(okDir, "*"))
	var names []string
	for _, p := range left {
		names = append(names, strings.TrimSuffix(filepath.Base(p), strings.Repeat("ef", 32)))
	}
	wantLeft := []string{"v-1.data", "v-1.meta", "v-1.reserve", "v-2.data", "v-2.meta", "v-2.reserve", "v-3.reserve", "v-4.reserve", "v-5.data.tmp-", "v-5.reserve"}
	if !slices.Equal(names, wantLeft) {
		t.Fatalf("ok.bin holds %q, want %q", names, wantLeft)
	}

	rep, err = repair.Repair(ctx, root, repair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Scanned != 1240 || rep.Removed != 0 || rep.ReservationsPreserved != 416 || rep.Corrupt != 1 {
		t.Fatalf("second run: scanned %d removed %d reservations %d corrupt %d", rep.Scanned, rep.Removed, rep.ReservationsPreserved, rep.Corrupt)
	}

	rep, err = repair.Repair(ctx, root, repair.Options{Grace: repair.NoGrace})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 1 || !strings.Contains(rep.RemovedItems[0].Path, "v-5.data.tmp-") {
		t.Fatalf("grace 0: %+v", rep)
	}
	// The next put of ok.bin still gets version 6: reservations stay.
	s, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.Put(ctx, damagedScope, "ok.bin", strings.NewReader("x"), artifacts.PutOptions{})
	if err != nil || rec.Version != 6 {
		t.Fatalf("put after repair: v%d, %v", rec.Version, err)
	}
}

func TestDryRun(t *testing.T) {
	root, _ := agedFixture(t)
	before := listing(t, root)
	dry, err := repair.Repair(context.Background(), root, repair.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if after := listing(t, root); after != before {
		t.Fatal("a dry run changed the store")
	}
	if !dry.DryRun || dry.Scanned != 1243 || dry.Removed != 3 || dry.ReservationsPreserved != 416 || dry.Corrupt != 1 || len(dry.RemovedItems) != 3 {
		t.Fatalf("dry run: %+v", dry)
	}
	real, err := repair.Repair(context.Background(), root, repair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(itemPaths(dry.RemovedItems), itemPaths(real.RemovedItems)) || real.Removed != dry.Removed {
		t.Fatal("the dry run did not predict the run")
	}
}

func itemPaths(items []repair.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Path+" "+it.Reason)
	}
	return out
}

func TestLimit(t *testing.T) {
	root, _ := agedFixture(t)
	before := listing(t, root)
	_, err := repair.Repair(context.Background(), root, repair.Options{Limit: 1000, Grace: repair.NoGrace})
	var le *repair.LimitError
	if !errors.As(err, &le) || le.ErrorCode() != "limit_exceeded" {
		t.Fatalf("got %v, want a limit error", err)
	}
	if listing(t, root) != before {
		t.Fatal("a run past its limit removed files")
	}
	rep, err := repair.Repair(context.Background(), root, repair.Options{Limit: 1243, DryRun: true})
	if err != nil || rep.Scanned != 1243 {
		t.Fatalf("limit equal to the file count: %v %d", err, rep.Scanned)
	}
}

func TestRefusesSymlinks(t *testing.T) {
	root, okDir := agedFixture(t)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "v-1.data.tmp-x"), []byte("x"), 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(outside, "v-1.data.tmp-x"), old, old)
	// A name directory replaced by a link to somewhere else.
	victim := filepath.Join(filepath.Dir(okDir), strings.Repeat("a", 64))
	if err := os.Symlink(outside, victim); err != nil {
		t.Fatal(err)
	}
	before := listing(t, root)
	_, err := repair.Repair(context.Background(), root, repair.Options{Grace: repair.NoGrace})
	if artifacts.CodeOf(err) != artifacts.CodeUnsafeStore {
		t.Fatalf("got %v, want unsafe_store", err)
	}
	if listing(t, root) != before {
		t.Fatal("files removed")
	}
	if _, err := os.Stat(filepath.Join(outside, "v-1.data.tmp-x")); err != nil {
		t.Fatal("followed the link")
	}
}

func TestEmptyAndMissing(t *testing.T) {
	rep, err := repair.Repair(context.Background(), t.TempDir(), repair.Options{})
	if err != nil || rep.Scanned != 0 {
		t.Fatalf("empty root: %+v %v", rep, err)
	}
	_, err = repair.Repair(context.Background(), filepath.Join(t.TempDir(), "nope"), repair.Options{})
	if !artifacts.IsNotFound(err) {
		t.Fatalf("missing root: %v", err)
	}
}

// TestRecheckBeforeRemoval changes planned files between the plan and its
// execution: each is skipped, not removed.
func TestRecheckBeforeRemoval(t *testing.T) {
	root, okDir := agedFixture(t)
	tmp3, _ := filepath.Glob(filepath.Join(okDir, "v-3.data.tmp-*"))
	tmp4, _ := filepath.Glob(filepath.Join(okDir, "v-4.meta.tmp-*"))
	rep, err := repair.Repair(context.Background(), root, repair.Options{BeforeExecute: func() error {
		// A writer appends to a staged file, another publishes v4, and a
		// third staged file disappears.
		f, _ := os.OpenFile(tmp3[0], os.O_WRONLY|os.O_APPEND, 0)
		f.Write([]byte("more"))
		f.Close()
		os.WriteFile(filepath.Join(okDir, "v-4.meta"), []byte("record"), 0o600)
		os.Remove(tmp4[0])
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 0 || len(rep.SkippedItems) != 3 {
		t.Fatalf("removed %d, skipped %+v", rep.Removed, rep.SkippedItems)
	}
	for _, p := range []string{tmp3[0], filepath.Join(okDir, "v-4.data")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s removed", p)
		}
	}
	reasons := map[string]bool{}
	for _, it := range rep.SkippedItems {
		reasons[it.Reason] = true
	}
	for _, r := range []string{"changed since it was classified", "its record was published meanwhile", "vanished before removal"} {
		if !reasons[r] {
			t.Errorf("no item skipped because %s: %+v", r, rep.SkippedItems)
		}
	}
	// A failing hook (a lost lock) stops the run before any removal.
	before := listing(t, root)
	_, err = repair.Repair(context.Background(), root, repair.Options{Grace: repair.NoGrace, BeforeExecute: func() error { return errors.New("lock lost") }})
	if err == nil || listing(t, root) != before {
		t.Fatal("ran on without the lock")
	}
}

func TestCorruptRecordWithoutPayload(t *testing.T) {
	root, okDir := agedFixture(t)
	// A record without payload that does not decode: reported, no command.
	os.WriteFile(filepath.Join(okDir, "v-9.meta"), []byte("garbage"), 0o600)
	// A decodable record in the wrong directory: no command either (it
	// would delete another artifact).
	b, _ := os.ReadFile(filepath.Join(okDir, "v-1.meta"))
	os.WriteFile(filepath.Join(okDir, "v-8.meta"), b, 0o600)
	rep, err := repair.Repair(context.Background(), root, repair.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Corrupt != 3 {
		t.Fatalf("corrupt %d: %+v", rep.Corrupt, rep.CorruptItems)
	}
	for _, c := range rep.CorruptItems {
		if c.Name == "lost-data.bin" {
			continue
		}
		if c.NextCommand != "" || c.Scope != nil || !strings.Contains(c.Reason, "does not say which artifact") {
			t.Errorf("%+v", c)
		}
	}
}

func TestDeleteCommand(t *testing.T) {
	got := repair.DeleteCommand("/s", artifacts.UserScope("a b", "u"), "n", 3)
	if got != "agentstore artifacts delete --store /s --app 'a b' --user u --name n --version 3" {
		t.Fatal(got)
	}
	if got := repair.DeleteCommand("/s", artifacts.AppScope("a"), "n", 1); strings.Contains(got, "--user") {
		t.Fatal(got)
	}
}
