package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return t0 }

func newStore(t testing.TB) *fsstore.Store {
	t.Helper()
	st, err := fsstore.Open(t.TempDir(), fsstore.Options{MaxScanEntries: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func scopeN(i int) artifacts.Scope {
	return artifacts.SessionScope("demo", fmt.Sprintf("user-%d", i%97), fmt.Sprintf("session-%d", i))
}

// writeIndex writes the index record of scope into dir with the given
// last access, as package workspace would (without fsync: tests only).
func writeIndex(t testing.TB, dir string, scope artifacts.Scope, last time.Time) {
	t.Helper()
	b, err := json.Marshal(workspace.Index{Format: workspace.IndexFormat, App: scope.App, User: scope.User, Session: scope.Session, Created: last, LastAccess: last})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, workspace.IndexName), append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
}

// makeWorkspace creates scope's directory under scratch with an index
// whose last access is last, and nfiles small files (in a subdirectory
// for every third one). It returns the directory's name.
func makeWorkspace(t testing.TB, scratch string, scope artifacts.Scope, last time.Time, nfiles int) string {
	t.Helper()
	name := workspace.DirName(scope.App, scope.User, scope.Session)
	dir := filepath.Join(scratch, name)
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeIndex(t, dir, scope, last)
	for i := range nfiles {
		p := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
		if i%3 == 2 {
			p = filepath.Join(dir, "sub", fmt.Sprintf("g%d.txt", i))
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(scope.Session+"\n", i+1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	backdate(t, dir, last)
	return name
}

// backdate sets the modification time of every entry below dir (symbolic
// links excepted) to when, so that the tree looks untouched since then.
func backdate(t testing.TB, dir string, when time.Time) {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != dir && d.Type()&fs.ModeSymlink == 0 {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(paths) // files before their directories
	for _, p := range paths {
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
	}
}

// treeOf lists the tree under dir (the index left out): every path with
// its type, permissions and the SHA-256 of its bytes.
func treeOf(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), workspace.ReservedPrefix) {
			// The index, and temporary files of the manager (a killed
			// sweep can leave the index's): never in a snapshot.
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			lines = append(lines, fmt.Sprintf("%s/ %v", rel, fi.Mode().Perm()))
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			lines = append(lines, fmt.Sprintf("%s -> %s", rel, target))
			return err
		}
		if !d.Type().IsRegular() {
			lines = append(lines, fmt.Sprintf("%s %v", rel, fi.Mode()))
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		lines = append(lines, fmt.Sprintf("%s %v %s", rel, fi.Mode().Perm(), hex.EncodeToString(sum[:8])))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// hydrateTree hydrates version of scope into a fresh scratch root through
// package workspace and returns its tree.
func hydrateTree(t testing.TB, st *artifacts.Store, scope artifacts.Scope, version int64) string {
	t.Helper()
	scratch := t.TempDir()
	m, err := workspace.New(workspace.Options{Scratch: scratch, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	res, err := m.Hydrate(context.Background(), scope, version, workspace.HydrateOptions{})
	if err != nil {
		t.Fatalf("hydrate %s v%d: %v", scope, version, err)
	}
	if res.Version != version {
		t.Fatalf("hydrated v%d, want v%d", res.Version, version)
	}
	return treeOf(t, filepath.Join(scratch, workspace.DirName(scope.App, scope.User, scope.Session)))
}

// readVersion reads a version through the verifying Reader to its end.
func readVersion(st *artifacts.Store, scope artifacts.Scope, version int64) error {
	rd, err := st.Get(context.Background(), scope, workspace.SnapshotName, version)
	if err != nil {
		return err
	}
	defer rd.Close()
	_, err = io.Copy(io.Discard, rd)
	return err
}

// byDir indexes a report's items.
func byDir(rep *Report) map[string]Item {
	m := map[string]Item{}
	for _, it := range rep.Items {
		m[it.Dir] = it
	}
	return m
}

func run(t testing.TB, opts Options) *Report {
	t.Helper()
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	rep, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	return rep
}

// entries lists the scratch root.
func entriesOf(t testing.TB, scratch string) []string {
	t.Helper()
	des, err := os.ReadDir(scratch)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range des {
		out = append(out, d.Name())
	}
	return out
}

func noLeftovers(t testing.TB, scratch string) {
	t.Helper()
	for _, n := range entriesOf(t, scratch) {
		if own(n) {
			t.Errorf("left over in the scratch root: %s", n)
		}
	}
}
