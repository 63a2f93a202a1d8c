package mcpfs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// The attack of issue 18.3 through MCP: the session of testScope (app
// "demo") writes its directory outside the confined API and names
// "victim-app" in its index. victim-app's MCP session of the same user and
// session id sees none of it and publishes none of it, whether the planted
// directory has its app-bound name or the legacy per-session one.
func TestCrossAppTakeoverThroughMCP(t *testing.T) {
	victim := artifacts.SessionScope("victim-app", testScope.User, testScope.Session)
	for _, legacy := range []bool{false, true} {
		name := "app-bound"
		if legacy {
			name = "legacy"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, nil)
			ctx := context.Background()
			e.mustOK("write_file", map[string]any{"path": "/workspace/planted.txt", "content": "evil\n"})
			if _, err := e.m.Snapshot(ctx, testScope, workspace.SnapshotOptions{}); err != nil {
				t.Fatal(err)
			}
			planted := e.wsDir()
			if legacy {
				p := filepath.Join(e.m.Scratch(), workspace.LegacyDirName(testScope.User, testScope.Session))
				if err := os.Rename(planted, p); err != nil {
					t.Fatal(err)
				}
				planted = p
			}
			ixPath := filepath.Join(planted, workspace.IndexName)
			b, err := os.ReadFile(ixPath)
			if err != nil {
				t.Fatal(err)
			}
			var ix map[string]any
			if err := json.Unmarshal(b, &ix); err != nil {
				t.Fatal(err)
			}
			ix["app"] = victim.App
			if b, err = json.Marshal(ix); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(ixPath, b, 0o600); err != nil {
				t.Fatal(err)
			}
			before := snapshotTree(t, planted)

			cs := e.connect(victim, nil)
			if res := callOn(t, cs, "read_text_file", map[string]any{"path": "/workspace/planted.txt"}); !res.IsError {
				t.Errorf("victim-app read the planted file: %s", text(res))
			}
			res := callOn(t, cs, "list_directory", map[string]any{"path": "/workspace"})
			if res.IsError || strings.Contains(text(res), "planted") {
				t.Errorf("victim-app's listing: %s", text(res))
			}
			if res := callOn(t, cs, "write_file", map[string]any{"path": "/workspace/own.txt", "content": "mine\n"}); res.IsError {
				t.Fatalf("victim-app's own write: %s", text(res))
			}
			snap, err := e.m.Snapshot(ctx, victim, workspace.SnapshotOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if snap.Files != 1 {
				t.Errorf("victim-app's snapshot holds %d files, want its own 1", snap.Files)
			}
			if _, err := os.Stat(filepath.Join(planted, "own.txt")); err == nil {
				t.Error("victim-app wrote into the planted directory")
			}
			if !sameTree(before, snapshotTree(t, planted)) {
				t.Error("the planted directory changed")
			}
		})
	}
}
