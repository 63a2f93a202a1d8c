package mcpfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/workspace"
)

// wantQuota checks a QUOTA_EXCEEDED result: the limit that bound, the
// structured fields that must be there and those that must not (a limit
// that is not set has no remaining_ field).
func wantQuota(t *testing.T, e *env, tool string, args map[string]any, limit string, has map[string]float64, hasNot ...string) {
	t.Helper()
	res := e.call(tool, args)
	sc := structured(t, res)
	if !res.IsError || sc["code"] != "QUOTA_EXCEEDED" || sc["limit"] != limit {
		t.Fatalf("%s %v: %v, want QUOTA_EXCEEDED by %s", tool, args, sc, limit)
	}
	for k, v := range has {
		if sc[k] != v {
			t.Errorf("%s: %s = %v, want %v", tool, k, sc[k], v)
		}
	}
	for _, k := range hasNot {
		if _, ok := sc[k]; ok {
			t.Errorf("%s: %s = %v given, although its limit is not set", tool, k, sc[k])
		}
	}
	if !strings.Contains(text(res), "limit: "+limit) {
		t.Errorf("text %q does not name the limit", text(res))
	}
}

// TestQuotaDeepFiles: with --ws-max-files 5, files 34 levels deep are
// counted as they are written, after end_turn and by a new server (a new
// process) alike: the sixth is refused each time, with limit: files,
// remaining_files: 0 and no remaining_bytes (bytes are not limited).
func TestQuotaDeepFiles(t *testing.T) {
	deep := "/workspace/" + strings.Repeat("d/", 34)
	e := newEnv(t, func(o *envOpts) {
		o.ws.Quota = workspace.Quota{MaxFiles: 5}
		o.server.Tools = []string{"write_file", "end_turn"}
	})
	for i := range 5 {
		e.mustOK("write_file", map[string]any{"path": fmt.Sprintf("%sf%d", deep, i), "content": "x"})
	}
	sixth := map[string]any{"path": deep + "f5", "content": "x"}
	wantQuota(t, e, "write_file", sixth, "files", map[string]float64{"remaining_files": 0, "max_files": 5}, "remaining_bytes", "remaining_entries")
	e.mustOK("end_turn", nil)
	wantQuota(t, e, "write_file", sixth, "files", map[string]float64{"remaining_files": 0}, "remaining_bytes")

	e2 := e.newServer(workspace.Options{Scratch: e.m.Scratch(), Quota: workspace.Quota{MaxFiles: 5}, Policy: workspace.SnapshotManual})
	wantQuota(t, e2, "write_file", sixth, "files", map[string]float64{"remaining_files": 0}, "remaining_bytes")
}

// TestQuotaDirectories: directories are entries and cost 4096 bytes
// each: create_directory (which the loop would call 25,000 times) stops
// at the limit on entries or on bytes, and the tree holds no more.
func TestQuotaDirectories(t *testing.T) {
	for _, c := range []struct {
		name   string
		q      workspace.Quota
		limit  string
		has    map[string]float64
		hasNot []string
	}{
		{"entries", workspace.Quota{MaxEntries: 60}, "entries", map[string]float64{"max_entries": 60}, []string{"remaining_bytes", "remaining_files"}},
		{"bytes", workspace.Quota{TotalBytes: 60 * workspace.DirBytes}, "bytes", map[string]float64{"total_limit_bytes": 60 * workspace.DirBytes}, []string{"remaining_files", "remaining_entries"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(o *envOpts) { o.ws.Quota = c.q })
			calls := 0
			for i := range 25_000 {
				res := e.call("create_directory", map[string]any{"path": fmt.Sprintf("/workspace/n%05d/a/b", i)})
				if res.IsError {
					break
				}
				calls++
			}
			wantQuota(t, e, "create_directory", map[string]any{"path": "/workspace/x/y"}, c.limit, c.has, c.hasNot...)
			dirs := 0
			filepath.WalkDir(e.wsDir(), func(_ string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs++
				}
				return nil
			})
			dirs-- // the workspace itself
			if calls != 20 || dirs > 60 {
				t.Fatalf("%d create_directory calls made %d directories; want 20 calls and at most 60", calls, dirs)
			}
		})
	}
}
