package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// snapshotVersions lists the published versions of the scope's snapshot.
func snapshotVersions(t testing.TB, st *artifacts.Store, scope artifacts.Scope) []int64 {
	t.Helper()
	var out []int64
	opts := artifacts.ListOptions{}
	for {
		page, err := st.ListVersions(context.Background(), scope, SnapshotName, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Items {
			out = append(out, r.Version)
		}
		if page.NextCursor == "" {
			return out
		}
		opts.Cursor = page.NextCursor
	}
}

// snapshotTree extracts a version of the scope's snapshot and reads it.
func snapshotTree(t testing.TB, m *Manager, scope artifacts.Scope, version int64) map[string]treeEntry {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "x")
	if _, err := m.HydrateTo(context.Background(), scope, version, dir, HydrateOptions{}); err != nil {
		t.Fatal(err)
	}
	return readTree(t, dir)
}

// TestGroupCommit: writes that arrive while no snapshot can start (the
// commit queue is held) apply their changes, then all of them are
// published by one snapshot, and every write returns success. The
// integration tier runs it with 1,000 writes (TestGroupCommit1000).
func TestGroupCommit(t *testing.T) { groupCommit(t, 200) }

func groupCommit(t *testing.T, n int) {
	ctx := context.Background()
	st := artifacts.NewStore(newStore(t, fsstore.Options{}))
	m := newManager(t, st, Options{Policy: SnapshotOnWrite})
	scope := sessionScope("group")
	w := mustOpen(t, m, scope)
	w.commits.mu.Lock()
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- w.Write(ctx, fmt.Sprintf("f%04d", i), []byte{byte(i)}) }()
	}
	// Wait (a hang guard, not a timing assertion) until every change is
	// in the workspace; the writes then wait for their snapshot.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ents, err := os.ReadDir(w.Path())
		if err != nil {
			w.commits.mu.Unlock()
			t.Fatal(err)
		}
		if len(ents) == n+1 { // the files and the index
			break
		}
		if time.Now().After(deadline) {
			w.commits.mu.Unlock()
			t.Fatalf("after 30 s, %d entries in the workspace", len(ents))
		}
	}
	w.commits.mu.Unlock()
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	vs := snapshotVersions(t, st, scope)
	if len(vs) != 1 {
		t.Fatalf("%d writes made %d snapshots %v, want 1", n, len(vs), vs)
	}
	if got := snapshotTree(t, m, scope, vs[0]); len(got) != n {
		t.Fatalf("the snapshot holds %d files, want %d", len(got), n)
	}
}

// TestGroupCommitConcurrent: concurrent writes each return only once a
// snapshot holding their file is published (the latest version when the
// write returned holds it), and share snapshots.
func TestGroupCommitConcurrent(t *testing.T) {
	ctx := context.Background()
	st := artifacts.NewStore(newStore(t, fsstore.Options{}))
	m := newManager(t, st, Options{Policy: SnapshotOnWrite})
	scope := sessionScope("group-concurrent")
	w := mustOpen(t, m, scope)
	const n = 200
	seen := make([]int64, n) // the latest version when write i returned
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := w.Write(ctx, fmt.Sprintf("f%03d", i), []byte{byte(i)}); err != nil {
				t.Error(err)
				return
			}
			rec, err := st.Stat(ctx, scope, SnapshotName, artifacts.Latest)
			if err != nil {
				t.Error(err)
				return
			}
			seen[i] = rec.Version
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	vs := snapshotVersions(t, st, scope)
	t.Logf("%d concurrent writes, %d snapshots", n, len(vs))
	if len(vs) > n {
		t.Fatalf("%d snapshots for %d writes", len(vs), n)
	}
	trees := map[int64]map[string]treeEntry{}
	for i, v := range seen {
		if trees[v] == nil {
			trees[v] = snapshotTree(t, m, scope, v)
		}
		if _, ok := trees[v][fmt.Sprintf("f%03d", i)]; !ok {
			t.Errorf("write %d returned success, but version %d (the latest then) does not hold its file", i, v)
		}
	}
}

// TestNotPersisted: under SnapshotOnWrite a change whose snapshot fails
// stays in the workspace and returns CodeNotPersisted naming it (never a
// refusal's code), and the next write, or EndTurn, publishes it.
func TestNotPersisted(t *testing.T) {
	tests := []struct {
		name   string
		change func(ctx context.Context, w *Workspace) error
		named  string
		want   map[string]string // files after the change
	}{
		{"write", func(ctx context.Context, w *Workspace) error { return w.Write(ctx, "b.txt", []byte("B")) }, "b.txt", map[string]string{"a.txt": "A", "b.txt": "B"}},
		{"write from", func(ctx context.Context, w *Workspace) error {
			_, err := w.WriteFrom(ctx, "d/b.txt", strings.NewReader("B"))
			return err
		}, "d/b.txt", map[string]string{"a.txt": "A", "d/": "", "d/b.txt": "B"}},
		{"append", func(ctx context.Context, w *Workspace) error { return w.Append(ctx, "a.txt", []byte("+")) }, "a.txt", map[string]string{"a.txt": "A+"}},
		{"remove", func(ctx context.Context, w *Workspace) error { return w.Remove(ctx, "a.txt") }, "a.txt", map[string]string{}},
		{"remove all", func(ctx context.Context, w *Workspace) error { return w.RemoveAll(ctx, "a.txt") }, "a.txt", map[string]string{}},
		{"rename", func(ctx context.Context, w *Workspace) error { return w.Rename(ctx, "a.txt", "z.txt") }, "z.txt", map[string]string{"z.txt": "A"}},
		{"mkdir", func(ctx context.Context, w *Workspace) error { return w.Mkdir(ctx, "e") }, "e", map[string]string{"a.txt": "A", "e/": ""}},
	}
	for _, tt := range tests {
		for _, retry := range []string{"write", "end turn"} {
			t.Run(tt.name+", retried by "+retry, func(t *testing.T) {
				ctx := context.Background()
				dir := t.TempDir()
				fst, err := fsstore.Open(dir, fsstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				st := artifacts.NewStore(fst)
				m := newManager(t, st, Options{Policy: SnapshotOnWrite})
				scope := sessionScope("not-persisted")
				w := mustOpen(t, m, scope)
				if err := w.Write(ctx, "a.txt", []byte("A")); err != nil {
					t.Fatal(err)
				}
				mend := testfixtures.BreakFSStore(t, dir)
				err = tt.change(ctx, w)
				wantCode(t, err, artifacts.CodeNotPersisted)
				if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%q", tt.named)) || !strings.Contains(msg, "retries") {
					t.Errorf("message %q does not name %q and the retry", msg, tt.named)
				}
				var ae *artifacts.Error
				if !errors.As(err, &ae) || ae.Err == nil {
					t.Errorf("no cause in %v", err)
				}
				if got := files(readTree(t, w.Path())); !maps.Equal(got, tt.want) {
					t.Fatalf("workspace %v, want %v", got, tt.want)
				}
				// Still broken: EndTurn fails too, and changes nothing.
				_, err = w.EndTurn(ctx)
				wantCode(t, err, artifacts.CodeNotPersisted)
				mend()
				want := tt.want
				if retry == "write" {
					if err := w.Write(ctx, "c.txt", []byte("C")); err != nil {
						t.Fatal(err)
					}
					want = map[string]string{"c.txt": "C"}
					for k, v := range tt.want {
						want[k] = v
					}
				} else {
					res, err := w.EndTurn(ctx)
					if err != nil || res == nil {
						t.Fatalf("EndTurn: %+v, %v", res, err)
					}
				}
				vs := snapshotVersions(t, st, scope)
				if len(vs) != 2 {
					t.Fatalf("versions %v, want the first write's and the retry's", vs)
				}
				if got := files(snapshotTree(t, m, scope, vs[1])); !maps.Equal(got, want) {
					t.Fatalf("the retry's snapshot holds %v, want %v", got, want)
				}
				if res, err := w.EndTurn(ctx); err != nil || res != nil {
					t.Fatalf("EndTurn with nothing left to store: %+v, %v", res, err)
				}
			})
		}
	}
}

// files maps a tree's paths to their contents ("" for directories).
func files(tr map[string]treeEntry) map[string]string {
	out := map[string]string{}
	for k, e := range tr {
		out[k] = e.Data
	}
	return out
}

// TestSnapshotTooLarge: a snapshot whose archive would exceed the
// store's largest payload is refused with CodeTooLarge naming the limit
// and the incremental format, before a version number is reserved: the
// next snapshot that fits gets the first number. Its temporary archive
// is removed, and a tree near the limit whose archive fits is stored.
func TestSnapshotTooLarge(t *testing.T) {
	ctx := context.Background()
	const limit = 64 << 10
	st := artifacts.NewStore(newStore(t, fsstore.Options{MaxArtifactBytes: limit}))
	m := newManager(t, st, Options{})
	scope := sessionScope("too-large")
	w := mustOpen(t, m, scope)
	big := make([]byte, 100<<10)
	rand.Read(big)
	if err := w.Write(ctx, "big.bin", big); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, err := w.Snapshot(ctx, SnapshotOptions{})
		wantCode(t, err, artifacts.CodeTooLarge)
		for _, s := range []string{"65536 bytes", "--snapshot-format incremental", "no version was used"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("message %q does not say %q", err, s)
			}
		}
	}
	ents, err := os.ReadDir(m.Scratch())
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != w.Dir() {
		t.Errorf("scratch root holds %v, want only the workspace", ents)
	}
	// The archive of a tree just under the limit fits once compressed.
	if err := w.Remove(ctx, "big.bin"); err != nil {
		t.Fatal(err)
	}
	small := bytes.Repeat([]byte("a"), 60<<10)
	if err := w.Write(ctx, "small.txt", small); err != nil {
		t.Fatal(err)
	}
	res, err := w.Snapshot(ctx, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if first := st.Capabilities().FirstVersion; res.Version != first {
		t.Errorf("the first snapshot that fits is version %d, want %d: a refused one used a number", res.Version, first)
	}
	if got := files(snapshotTree(t, m, scope, res.Version)); !maps.Equal(got, map[string]string{"small.txt": string(small)}) {
		t.Errorf("snapshot holds %d files", len(got))
	}
	if ents, _ := os.ReadDir(m.Scratch()); len(ents) != 1 {
		t.Errorf("scratch root holds %v after a spooled snapshot", ents)
	}
	if vs := snapshotVersions(t, st, scope); !slices.Equal(vs, []int64{res.Version}) {
		t.Errorf("versions %v", vs)
	}
}
