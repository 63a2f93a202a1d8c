//go:build !unix

package mcpfs

import (
	"os"
	"testing"
)

// stdinPair returns the two ends of a pipe.
func stdinPair(t testing.TB) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}
