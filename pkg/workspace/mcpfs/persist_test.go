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

// TestNotPersistedStoreBytes: a write whose snapshot the session's
// store-bytes ceiling refuses answers NOT_PERSISTED with cause
// QUOTA_EXCEEDED, saying the ceiling and the bytes left; the change is
// in the workspace, and the next write stores the tree once it fits.
func TestNotPersistedStoreBytes(t *testing.T) {
	e := newEnv(t, func(o *envOpts) {
		o.ws.Policy = workspace.SnapshotOnWrite
		o.ws.SnapshotFormat = workspace.FormatAuto
		o.ws.MaxStoreBytes = 20_000
		o.server.Tools = []string{"write_file", "read_text_file", "delete_file", "end_turn"}
	})
	e.mustOK("write_file", map[string]any{"path": "a.txt", "content": "A"})
	big := noisy(40_000)
	res := e.call("write_file", map[string]any{"path": "big.txt", "content": big})
	sc := structured(t, res)
	if !res.IsError || sc["code"] != "NOT_PERSISTED" || sc["cause"] != "QUOTA_EXCEEDED" {
		t.Fatalf("result %v: want NOT_PERSISTED caused by QUOTA_EXCEEDED", sc)
	}
	msg, _ := sc["message"].(string)
	for _, s := range []string{"/workspace/big.txt", "ceiling of 20000", "end_turn"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q does not say %q", msg, s)
		}
	}
	if strings.Contains(msg, e.dir) {
		t.Errorf("message %q shows a host path", msg)
	}
	if r, ok := sc["remaining_store_bytes"].(float64); !ok || r <= 0 || r >= 20_000 {
		t.Errorf("remaining_store_bytes %v", sc["remaining_store_bytes"])
	}
	if got := e.mustOK("read_text_file", map[string]any{"path": "big.txt"}); got != big {
		t.Errorf("big.txt is not in the workspace")
	}
	e.mustFail("end_turn", nil, "NOT_PERSISTED")
	e.mustOK("delete_file", map[string]any{"path": "big.txt"})
	e.mustOK("end_turn", nil)
}

// noisy returns n characters of text that does not compress.
func noisy(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = alphabet[x%uint32(len(alphabet))]
	}
	return string(b)
}
