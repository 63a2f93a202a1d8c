package mcpfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferenceHardLink: a /reference file hard-linked to a file outside
// the reference tree is refused by the reading tools, and grep never
// returns its content.
func TestReferenceHardLink(t *testing.T) {
	e := newEnv(t, nil)
	if err := os.Link(filepath.Join(e.outside, "secret.txt"), filepath.Join(e.dir, "ref", "linked.txt")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	e.mustFail("read_text_file", map[string]any{"path": "/reference/linked.txt"}, "PERMISSION_DENIED")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_text_file", map[string]any{"path": "/reference/linked.txt"}},
		{"read_multiple_files", map[string]any{"paths": []string{"/reference/linked.txt"}}},
		{"grep", map[string]any{"path": "/reference", "pattern": "SECRET"}},
	} {
		if got := allText(e.call(c.tool, c.args)); strings.Contains(got, "TOP SECRET") {
			t.Errorf("%s returned the linked file's content: %s", c.tool, got)
		}
	}
	if got := e.mustOK("read_text_file", map[string]any{"path": "/reference/guide.md"}); !strings.Contains(got, "# Guide") {
		t.Errorf("guide.md %q", got)
	}
}
