//go:build unix

package fsstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// TestPlantedFilesRefused replaces a version's record or payload with a
// named pipe, a symbolic link to a file outside the store, or a directory:
// every reader refuses it at once with unsafe_store (no read blocks on the
// pipe, no byte from outside is served), and Walk reports it as a problem
// with that code. Nothing in the store changes.
func TestPlantedFilesRefused(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("hello"), 0o600); err != nil { // same size as the payload
		t.Fatal(err)
	}
	plants := map[string]func(path string) error{
		"fifo":    func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"symlink": func(p string) error { return os.Symlink(outside, p) },
		"dir":     func(p string) error { return os.Mkdir(p, 0o700) },
	}
	for _, kind := range []string{"meta", "data"} {
		for plant, plantFn := range plants {
			t.Run(kind+"/"+plant, func(t *testing.T) {
				ctx := context.Background()
				st, err := fsstore.Open(t.TempDir(), fsstore.Options{})
				if err != nil {
					t.Fatal(err)
				}
				scope := artifacts.SessionScope("a", "u", "s")
				if _, err := st.Put(ctx, scope, "n", strings.NewReader("hello"), artifacts.PutOptions{}); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(st.NameDir(scope, "n"), fsstore.VersionFile(1, kind))
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				if err := plantFn(path); err != nil {
					t.Fatal(err)
				}
				check := func(what string, err error) {
					t.Helper()
					if artifacts.CodeOf(err) != artifacts.CodeUnsafeStore || !strings.Contains(err.Error(), "not a regular file") {
						t.Errorf("%s: %v, want unsafe_store", what, err)
					}
				}
				if kind == "meta" {
					_, err := st.Stat(ctx, scope, "n", 1)
					check("Stat", err)
					_, err = st.ListVersions(ctx, scope, "n", artifacts.ListOptions{})
					check("ListVersions", err)
				}
				r, err := st.Get(ctx, scope, "n", 1)
				if err == nil {
					r.Close()
				}
				check("Get", err)
				var problems []artifacts.Problem
				err = st.Walk(ctx, func(u artifacts.ScopeUsage) error {
					for _, n := range u.Names {
						problems = append(problems, n.Problems...)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if kind == "meta" {
					if len(problems) != 1 || problems[0].Code != artifacts.CodeUnsafeStore || problems[0].Unreadable() {
						t.Errorf("Walk problems %+v", problems)
					}
				}
				if fi, err := os.Lstat(path); err != nil || fi.Mode().IsRegular() {
					t.Errorf("the planted file changed: %v %v", fi, err)
				}
			})
		}
	}
}
