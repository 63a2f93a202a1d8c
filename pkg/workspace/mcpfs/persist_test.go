package mcpfs

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// TestNotPersisted: under --snapshot on-write a write whose snapshot
// fails answers NOT_PERSISTED (not PERMISSION_DENIED, the code of a
// refusal), naming the path and the retry and no host path; the file is
// in the workspace, and the next write (or end_turn) stores both.
func TestNotPersisted(t *testing.T) {
	e := newEnv(t, func(o *envOpts) {
		o.ws.Policy = workspace.SnapshotOnWrite
		o.server.Tools = []string{"write_file", "read_text_file", "delete_file", "end_turn"}
	})
	e.mustOK("write_file", map[string]any{"path": "a.txt", "content": "A"})
	mend := testfixtures.BreakFSStore(t, filepath.Join(e.dir, "store"))
	msg := e.mustFail("write_file", map[string]any{"path": "b.txt", "content": "B"}, "NOT_PERSISTED")
	for _, s := range []string{"/workspace/b.txt", "end_turn", "retries"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q does not say %q", msg, s)
		}
	}
	if strings.Contains(msg, e.dir) {
		t.Errorf("message %q shows a host path", msg)
	}
	if got := e.mustOK("read_text_file", map[string]any{"path": "b.txt"}); got != "B" {
		t.Errorf("b.txt reads %q", got)
	}
	e.mustFail("delete_file", map[string]any{"path": "a.txt"}, "NOT_PERSISTED")
	e.mustFail("end_turn", nil, "NOT_PERSISTED")
	mend()
	e.mustOK("write_file", map[string]any{"path": "c.txt", "content": "C"})
	dir := filepath.Join(t.TempDir(), "x")
	if _, err := e.m.HydrateTo(context.Background(), e.scope, artifacts.Latest, dir, workspace.HydrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := snapshotTree(t, dir); !sameTree(got, map[string]string{"b.txt": "B", "c.txt": "C"}) {
		t.Errorf("the next write's snapshot holds %v", got)
	}
	if got := e.mustOK("end_turn", nil); !strings.Contains(got, "no snapshot was needed") {
		t.Errorf("end_turn with everything stored: %q", got)
	}
}
