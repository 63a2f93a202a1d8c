// Package fsstoretest makes erlang-fs stores in known states for the tests
// of the packages that read them.
package fsstoretest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// BrokenName makes, on a real erlang-fs store in a temporary directory, a
// name "n" of session scope app/u/s with five versions: v1 whose record
// does not decode, v2 without its payload, v3 whose payload is a byte
// short, v4 healthy and v5 whose record belongs to the scope's other name
// "other". It returns the portable store, the driver, the scope and the
// name's directory.
func BrokenName(t testing.TB) (*artifacts.Store, *fsstore.Store, artifacts.Scope, string) {
	t.Helper()
	fst, err := fsstore.Open(t.TempDir(), fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(fst)
	sc := artifacts.SessionScope("app", "u", "s")
	for i := range 5 {
		if _, err := st.Put(t.Context(), sc, "n", strings.NewReader(strings.Repeat("x", i+1)), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Put(t.Context(), sc, "other", strings.NewReader("o"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := fst.NameDir(sc, "n")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "v-1.meta"), []byte("not a record"), 0o600))
	must(os.Remove(filepath.Join(dir, "v-2.data")))
	must(os.Truncate(filepath.Join(dir, "v-3.data"), 2))
	other, err := os.ReadFile(filepath.Join(fst.NameDir(sc, "other"), "v-1.meta"))
	must(err)
	must(os.WriteFile(filepath.Join(dir, "v-5.meta"), other, 0o600))
	return st, fst, sc, dir
}
