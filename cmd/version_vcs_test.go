//go:build integration

package cmd_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionPrintsRevision builds the binary as `go install .` does (with
// VCS stamping on, whatever GOFLAGS says) from this checkout and checks
// that `agentstore version` names the commit it was built from.
func TestVersionPrintsRevision(t *testing.T) {
	root := repoRoot(t)
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI runs in a git checkout, but git rev-parse failed: %v", err)
		}
		t.Skipf("not a git checkout: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(root, ".git")); err == nil && !fi.IsDir() {
		// The go command stamps VCS information only where .git is a
		// directory; in a linked worktree (.git a file) the revision is
		// empty, whatever the code does.
		t.Skipf("%s is a git worktree (.git is a file): go build does not stamp VCS information there", root)
	}
	bin := filepath.Join(t.TempDir(), "agentstore")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Version, Revision, Time string
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := strings.TrimSpace(string(head)); v.Revision != want {
		t.Fatalf("version says revision %q, HEAD is %q", v.Revision, want)
	}
	if v.Time == "" || v.Version == "" {
		t.Fatalf("version lacks a time or version: %s", out)
	}
	text, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.Contains(string(text), v.Revision[:12]) {
		t.Fatalf("text version does not show the revision: %s %v", text, err)
	}
}
