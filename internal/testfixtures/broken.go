package testfixtures

import (
	"os"
	"path/filepath"
	"testing"
)

// BreakFSStore makes every Put of the erlang-fs store rooted at dir fail
// (unsafe_store): its v1 directory is moved aside and a regular file takes
// its place. It returns the function that mends the store; the test
// fails if either step does.
func BreakFSStore(t testing.TB, dir string) (mend func()) {
	t.Helper()
	v1 := filepath.Join(dir, "v1")
	if err := os.Rename(v1, v1+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v1, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.Remove(v1); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(v1+".aside", v1); err != nil {
			t.Fatal(err)
		}
	}
}
