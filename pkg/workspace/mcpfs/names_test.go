package mcpfs

import (
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/workspace"
)

// TestAgentstoreNamesListed: a file named .agentstore-notes.txt, at the
// top or below, is listed by every listing tool and found by grep.
func TestAgentstoreNamesListed(t *testing.T) {
	e := newEnv(t, nil)
	for _, p := range []string{"/workspace/.agentstore-notes.txt", "/workspace/d/.agentstore-notes.txt"} {
		e.mustOK("write_file", map[string]any{"path": p, "content": "marker-7f3a\n"})
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		want int // times .agentstore-notes.txt appears
	}{
		{"list_directory", map[string]any{"path": "/workspace"}, 1},
		{"list_directory", map[string]any{"path": "/workspace/d"}, 1},
		{"list_directory_with_sizes", map[string]any{"path": "/workspace/d"}, 1},
		{"directory_tree", map[string]any{"path": "/workspace"}, 2},
		{"search_files", map[string]any{"path": "/workspace", "pattern": "**/*notes*"}, 2},
		{"grep", map[string]any{"path": "/workspace", "pattern": "marker-7f3a"}, 2},
	} {
		got := e.mustOK(c.tool, c.args)
		if n := strings.Count(got, ".agentstore-notes.txt"); n != c.want {
			t.Errorf("%s %v names it %d times, want %d:\n%s", c.tool, c.args, n, c.want, got)
		}
	}
	if got := e.mustOK("list_directory", map[string]any{"path": "/workspace"}); strings.Contains(got, workspace.IndexName) {
		t.Errorf("the index is listed:\n%s", got)
	}
}
