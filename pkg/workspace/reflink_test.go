package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// TestReferenceRefusesHardLinks: a reference file with a second hard
// link (here to a file outside the reference tree) is not read: Open and
// ReadLines refuse it; Stat and List still describe it.
func TestReferenceRefusesHardLinks(t *testing.T) {
	dir := t.TempDir()
	ref, outside := filepath.Join(dir, "ref"), filepath.Join(dir, "outside")
	for _, d := range []string{ref, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWriteFile(t, filepath.Join(outside, "secret.txt"), canary+"\n", 0o600)
	mustWriteFile(t, filepath.Join(ref, "plain.txt"), "plain\n", 0o600)
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(ref, "linked.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	r, err := OpenReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.ReadLines("plain.txt", 0, 10); err != nil {
		t.Fatal(err)
	}
	_, err = r.Open("linked.txt")
	wantCode(t, err, artifacts.CodePermission)
	lines, err := r.ReadLines("linked.txt", 0, 10)
	wantCode(t, err, artifacts.CodePermission)
	if slices.Contains(lines.Lines, canary) {
		t.Fatal("the linked file's content was returned")
	}
	if _, err := r.Stat("linked.txt"); err != nil {
		t.Fatal(err)
	}
}
