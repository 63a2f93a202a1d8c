package sweep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// sessionFixture is a scratch root with two workspaces (one just used)
// and a store holding artifacts of both sessions.
type sessionFixture struct {
	scratch, storeRoot string
	st                 *artifacts.Store
	scope, other       artifacts.Scope
	dir, otherDir      string
}

func newSessionFixture(t *testing.T) *sessionFixture {
	t.Helper()
	f := &sessionFixture{scratch: t.TempDir(), scope: scopeN(1), other: scopeN(2)}
	d := newStore(t)
	f.st = artifacts.NewStore(d)
	f.storeRoot = d.Root()
	// Used a second ago: ws delete does not wait for idleness.
	f.dir = makeWorkspace(t, f.scratch, f.scope, t0, 5)
	f.otherDir = makeWorkspace(t, f.scratch, f.other, t0, 3)
	ctx := context.Background()
	for _, sc := range []artifacts.Scope{f.scope, f.other} {
		for _, n := range []string{"notes.txt", "out/report.md"} {
			for range 2 {
				if _, err := f.st.Put(ctx, sc, n, strings.NewReader("x "+n), artifacts.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return f
}

func (f *sessionFixture) opts() SessionOptions {
	return SessionOptions{Scratch: f.scratch, Store: f.st, StoreURI: "file://" + f.storeRoot, Scope: f.scope, Now: fixedNow}
}

// state is the scratch root's and the store's trees.
func (f *sessionFixture) state(t *testing.T) string {
	return treeOf(t, f.scratch) + "\n--\n" + treeOf(t, f.storeRoot)
}

func TestDeleteSessionSnapshotsThenRemoves(t *testing.T) {
	f := newSessionFixture(t)
	want := treeOf(t, filepath.Join(f.scratch, f.dir))
	other := treeOf(t, filepath.Join(f.scratch, f.otherDir))
	rep, err := DeleteSession(context.Background(), f.opts())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Workspace == nil || rep.Workspace.Decision != Removed || rep.Problems() != 0 {
		t.Fatalf("workspace %+v", rep.Workspace)
	}
	if _, err := os.Lstat(filepath.Join(f.scratch, f.dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory is still there: %v", err)
	}
	if got := hydrateTree(t, f.st, f.scope, rep.Workspace.SnapshotVersion); got != want {
		t.Fatalf("the snapshot holds\n%s\nwant\n%s", got, want)
	}
	if got := treeOf(t, filepath.Join(f.scratch, f.otherDir)); got != other {
		t.Fatal("the other session's workspace changed")
	}
	noLeftovers(t, f.scratch)
	// The artifacts stay without --with-artifacts.
	if _, err := f.st.Stat(context.Background(), f.scope, "notes.txt", 2); err != nil {
		t.Fatal(err)
	}
	// Again: nothing left to delete.
	_, err = DeleteSession(context.Background(), f.opts())
	if !artifacts.IsNotFound(err) || !strings.Contains(err.Error(), "has no workspace") {
		t.Fatalf("second delete: %v, want not_found", err)
	}
}

func TestDeleteSessionRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, f *sessionFixture) SessionOptions
		code   artifacts.Code
		reason string // the workspace item's, when the error is nil
	}{
		{"no such session", func(t *testing.T, f *sessionFixture) SessionOptions {
			o := f.opts()
			o.Scope = scopeN(77)
			return o
		}, artifacts.CodeNotFound, ""},
		{"not a session scope", func(t *testing.T, f *sessionFixture) SessionOptions {
			o := f.opts()
			o.Scope = artifacts.UserScope("demo", "user-1")
			return o
		}, artifacts.CodeInvalidScope, ""},
		{"no store to snapshot into", func(t *testing.T, f *sessionFixture) SessionOptions {
			o := f.opts()
			o.Store = nil
			return o
		}, artifacts.CodeInvalidArgument, ""},
		{"forged index", func(t *testing.T, f *sessionFixture) SessionOptions {
			writeIndex(t, filepath.Join(f.scratch, f.dir), scopeN(5), t0)
			return f.opts()
		}, "", "bad index"},
		{"unsnapshottable", func(t *testing.T, f *sessionFixture) SessionOptions {
			if err := os.Symlink("/etc/passwd", filepath.Join(f.scratch, f.dir, "link")); err != nil {
				t.Fatal(err)
			}
			return f.opts()
		}, "", "unsnapshottable"},
		{"live session", func(t *testing.T, f *sessionFixture) SessionOptions {
			d, err := os.Open(filepath.Join(f.scratch, f.dir))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			if err := syscall.Flock(int(d.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
				t.Fatalf("lock: %v", err)
			}
			return f.opts()
		}, "", "live session holds its lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSessionFixture(t)
			o := tc.setup(t, f)
			before := f.state(t)
			rep, err := DeleteSession(context.Background(), o)
			if tc.code != "" {
				if artifacts.CodeOf(err) != tc.code {
					t.Fatalf("err %v, want %s", err, tc.code)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if rep.Problems() != 1 || !strings.Contains(rep.Workspace.Reason, tc.reason) {
					t.Fatalf("workspace %+v, want a problem saying %q", rep.Workspace, tc.reason)
				}
			}
			if tc.name != "unsnapshottable" && f.state(t) != before {
				t.Fatal("the scratch root or the store changed")
			}
			if _, err := os.Lstat(filepath.Join(f.scratch, f.dir)); err != nil {
				t.Fatalf("the workspace is gone: %v", err)
			}
		})
	}
}

func TestDeleteSessionDiscardAndArtifactsNeedOnePlan(t *testing.T) {
	for _, withArtifacts := range []bool{false, true} {
		t.Run(map[bool]string{false: "discard", true: "with-artifacts"}[withArtifacts], func(t *testing.T) {
			ctx := context.Background()
			f := newSessionFixture(t)
			o := f.opts()
			o.Discard = !withArtifacts
			o.WithArtifacts = withArtifacts
			before := f.state(t)
			rep, err := DeleteSession(ctx, o)
			var ce *ConfirmationError
			if !errors.As(err, &ce) || ce.Stale || rep == nil || rep.Plan == nil {
				t.Fatalf("unconfirmed: %v, %+v", err, rep)
			}
			if f.state(t) != before {
				t.Fatal("an unconfirmed plan changed something")
			}
			p := rep.Plan
			n, _ := p.Versions()
			if p.Workspace == nil || p.Workspace.Dir != f.dir || (n == 4) != withArtifacts || (n == 0) == withArtifacts {
				t.Fatalf("plan %+v: workspace and %d versions", p, n)
			}
			// A stale plan: the workspace was touched, or an artifact
			// added, since.
			if withArtifacts {
				if _, err := f.st.Put(ctx, f.scope, "late.txt", strings.NewReader("late"), artifacts.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := os.WriteFile(filepath.Join(f.scratch, f.dir, "late.txt"), []byte("late"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			mid := f.state(t)
			o.Confirm = &SessionConfirmation{PlanID: p.PlanID}
			_, err = DeleteSession(ctx, o)
			if !errors.As(err, &ce) || !ce.Stale {
				t.Fatalf("stale: %v", err)
			}
			if f.state(t) != mid {
				t.Fatal("a stale confirmation changed something")
			}
			// An edited plan is refused.
			o.Confirm = nil
			rep, err = DeleteSession(ctx, o)
			if !errors.As(err, &ce) {
				t.Fatal(err)
			}
			edited := *rep.Plan
			edited.Scratch = "/elsewhere"
			o.Confirm = &SessionConfirmation{PlanID: edited.PlanID, Plan: &edited}
			if _, err := DeleteSession(ctx, o); !errors.As(err, &ce) || ce.Stale || !strings.Contains(ce.Msg, "modified") {
				t.Fatalf("edited: %v", err)
			}
			// The current plan, confirmed whole.
			o.Confirm = &SessionConfirmation{PlanID: rep.Plan.PlanID, Plan: rep.Plan}
			done, err := DeleteSession(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if done.Workspace.Decision != Removed || !strings.Contains(done.Workspace.Reason, rep.Plan.PlanID) {
				t.Fatalf("workspace %+v", done.Workspace)
			}
			if _, err := os.Lstat(filepath.Join(f.scratch, f.dir)); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("the directory is still there")
			}
			_, err = f.st.ListNames(ctx, f.scope, artifacts.ListOptions{})
			if withArtifacts != artifacts.IsNotFound(err) {
				t.Fatalf("the scope's artifacts after: %v", err)
			}
			if withArtifacts && len(done.Deleted) != 5 {
				t.Fatalf("deleted %d versions, want 5", len(done.Deleted))
			}
			if _, err := f.st.Stat(ctx, f.other, "notes.txt", 2); err != nil {
				t.Fatalf("the other session's artifacts: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(f.scratch, f.otherDir)); err != nil {
				t.Fatalf("the other workspace: %v", err)
			}
			noLeftovers(t, f.scratch)
		})
	}
}

// TestDeleteSessionArtifactsWithoutWorkspace: a session whose directory
// is already gone can still have its artifacts deleted.
func TestDeleteSessionArtifactsWithoutWorkspace(t *testing.T) {
	ctx := context.Background()
	f := newSessionFixture(t)
	if err := os.RemoveAll(filepath.Join(f.scratch, f.dir)); err != nil {
		t.Fatal(err)
	}
	o := f.opts()
	o.WithArtifacts = true
	rep, err := DeleteSession(ctx, o)
	var ce *ConfirmationError
	if !errors.As(err, &ce) || rep.Plan.Workspace != nil || len(rep.Plan.Artifacts) != 2 {
		t.Fatalf("%v %+v", err, rep)
	}
	o.Confirm = &SessionConfirmation{PlanID: rep.Plan.PlanID}
	if _, err := DeleteSession(ctx, o); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.ListNames(ctx, f.scope, artifacts.ListOptions{}); !artifacts.IsNotFound(err) {
		t.Fatalf("artifacts left: %v", err)
	}
	if _, err := DeleteSession(ctx, o); !artifacts.IsNotFound(err) {
		t.Fatalf("nothing left: %v, want not_found", err)
	}
}

func TestDeleteSessionFinishesItsTombstone(t *testing.T) {
	f := newSessionFixture(t)
	o := f.opts()
	o.hook = func(step, dir string) error {
		if step == "renamed" {
			return errHook
		}
		return nil
	}
	if _, err := DeleteSession(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var tomb bool
	for _, n := range entriesOf(t, f.scratch) {
		tomb = tomb || strings.HasPrefix(n, TombstonePrefix+f.dir)
	}
	if !tomb {
		t.Fatal("the interrupted delete left no tombstone")
	}
	o.hook = nil
	rep, err := DeleteSession(context.Background(), o)
	if err != nil || rep.Workspace != nil || len(rep.Recovered) != 1 || rep.Recovered[0].Decision != Removed {
		t.Fatalf("%v %+v", err, rep)
	}
	noLeftovers(t, f.scratch)
	if _, err := os.Lstat(filepath.Join(f.scratch, f.dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the workspace came back")
	}
	if _, err := DeleteSession(context.Background(), o); !artifacts.IsNotFound(err) {
		t.Fatalf("third delete: %v, want not_found", err)
	}
}

// reusing declares that its layout hands deleted numbers out again; the
// plan, not the driver's numbering, is under test.
type reusing struct{ artifacts.Driver }

func (r reusing) Capabilities() artifacts.Capabilities {
	c := r.Driver.Capabilities()
	c.ReusesVersions, c.Layout = true, "google-adk-file"
	return c
}

// TestDeleteSessionNumberReuse: in a layout that reuses numbers, deleting a
// name's every version lets the next save take its first number again; the
// plan says so for each name and is executed only with AllowNumberReuse.
func TestDeleteSessionNumberReuse(t *testing.T) {
	ctx := context.Background()
	f := newSessionFixture(t)
	var d artifacts.Driver
	if !f.st.As(&d) {
		t.Fatal("no driver")
	}
	f.st = artifacts.NewStore(reusing{d})
	o := f.opts()
	o.WithArtifacts = true
	rep, err := DeleteSession(ctx, o)
	var ce *ConfirmationError
	if !errors.As(err, &ce) || rep == nil || rep.Plan == nil || len(rep.Plan.Artifacts) == 0 {
		t.Fatalf("plan: %v %+v", err, rep)
	}
	for _, a := range rep.Plan.Artifacts {
		if a.ReusedNumber == nil || *a.ReusedNumber != f.st.Capabilities().FirstVersion || !strings.Contains(a.Note, "ADK will hand out") {
			t.Fatalf("%q: reused %v, note %q", a.Name, a.ReusedNumber, a.Note)
		}
	}
	before := treeHash(t, f.scratch)
	o.Confirm = &SessionConfirmation{PlanID: rep.Plan.PlanID}
	_, err = DeleteSession(ctx, o)
	if !errors.As(err, &ce) || ce.Stale || !strings.Contains(err.Error(), "--allow-number-reuse") {
		t.Fatalf("confirmed without AllowNumberReuse: %v", err)
	}
	if after := treeHash(t, f.scratch); after != before {
		t.Fatal("a refused plan changed the scratch root")
	}
	if _, err := f.st.ListNames(ctx, f.scope, artifacts.ListOptions{}); err != nil {
		t.Fatalf("a refused plan deleted artifacts: %v", err)
	}
	o.AllowNumberReuse = true
	if _, err := DeleteSession(ctx, o); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.ListNames(ctx, f.scope, artifacts.ListOptions{}); !artifacts.IsNotFound(err) {
		t.Fatalf("artifacts left: %v", err)
	}
}

// treeHash describes every entry under dir: path, type, size and
// modification time.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
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
