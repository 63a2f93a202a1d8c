package mcpfs

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// memoryStores opens a memory store of each layout family: erlang-fs
// (names as given, a finite number per scope, maxScan as its
// MaxScanEntries) and google-adk-file (user-scope names behind "user:",
// no ceilings).
func memoryStores(t *testing.T, maxScan int) map[string]*artifacts.Store {
	t.Helper()
	fst, err := fsstore.Open(filepath.Join(t.TempDir()), fsstore.Options{MaxScanEntries: maxScan})
	if err != nil {
		t.Fatal(err)
	}
	ast, err := adkfile.Open(t.TempDir(), adkfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*artifacts.Store{"erlang-fs": artifacts.NewStore(fst), "google-adk-file": artifacts.NewStore(ast)}
}

// TestMemoryNames: /memory/notes.md is the same file on every layout;
// the route adds the layout's user-scope prefix to the artifact name
// and removes it from what the model sees.
func TestMemoryNames(t *testing.T) {
	ctx := context.Background()
	for layout, st := range memoryStores(t, 0) {
		t.Run(layout, func(t *testing.T) {
			e := newEnv(t, func(o *envOpts) { o.server.Memory = st })
			e.mustOK("write_file", map[string]any{"path": "/memory/notes.md", "content": "n"})
			e.mustOK("write_file", map[string]any{"path": "/memory/prefs/style.md", "content": "terse"})
			e.mustOK("append_file", map[string]any{"path": "/memory/notes.md", "content": "+"})
			if got := e.mustOK("read_text_file", map[string]any{"path": "/memory/notes.md"}); got != "n+" {
				t.Errorf("notes.md reads %q", got)
			}
			if got := e.mustOK("list_directory", map[string]any{"path": "/memory"}); got != "[FILE] notes.md\n[DIR] prefs" {
				t.Errorf("listing %q", got)
			}
			if got := e.mustOK("list_directory", map[string]any{"path": "/memory/prefs"}); got != "[FILE] style.md" {
				t.Errorf("sub listing %q", got)
			}
			if got := e.mustOK("search_files", map[string]any{"path": "/memory", "pattern": "**/style.md"}); got != "/memory/prefs/style.md" {
				t.Errorf("search %q", got)
			}
			user := artifacts.UserScope(e.scope.App, e.scope.User)
			stored := st.Capabilities().UserNamePrefix + "notes.md"
			if rec, err := st.Stat(ctx, user, stored, artifacts.Latest); err != nil || rec.Size != 2 {
				t.Errorf("artifact %q: %+v, %v", stored, rec, err)
			}
			e.mustOK("move_file", map[string]any{"source": "/memory/prefs/style.md", "destination": "/memory/style.md"})
			e.mustOK("delete_file", map[string]any{"path": "/memory/notes.md"})
			e.mustFail("read_text_file", map[string]any{"path": "/memory/notes.md"}, "NOT_FOUND")
			if got := e.mustOK("list_directory", map[string]any{"path": "/memory"}); got != "[FILE] style.md" {
				t.Errorf("listing after move and delete %q", got)
			}
		})
	}
}

// TestMemoryNameSlots: on a layout whose scopes hold a finite number of
// names in their lifetime, creating and deleting /memory files stops
// with NAME_CAPACITY (no host path shown) while the reserve is left: the
// runtime can still create a name in the user scope, and existing
// memory files can still be written. Layouts without ceilings never stop.
func TestMemoryNameSlots(t *testing.T) {
	ctx := context.Background()
	const maxScan = 40 // 20 names per scope, 2 of them kept back
	for layout, st := range memoryStores(t, maxScan) {
		t.Run(layout, func(t *testing.T) {
			e := newEnv(t, func(o *envOpts) { o.server.Memory = st })
			e.mustOK("write_file", map[string]any{"path": "/memory/keep.md", "content": "k"})
			refused := -1
			for i := range 25 {
				p := fmt.Sprintf("/memory/n%d.md", i)
				res := e.call("write_file", map[string]any{"path": p, "content": "x"})
				if res.IsError {
					if got := structured(t, res)["code"]; got != "NAME_CAPACITY" {
						t.Fatalf("%s: %v (%s)", p, got, text(res))
					}
					if msg := text(res); strings.Contains(msg, e.dir) || strings.Contains(msg, "user:") || !strings.Contains(msg, "18 of its 20 names") {
						t.Errorf("message %q", msg)
					}
					refused = i
					break
				}
				e.mustOK("delete_file", map[string]any{"path": p})
			}
			user := artifacts.UserScope(e.scope.App, e.scope.User)
			if st.Capabilities().NoCeilings {
				if refused >= 0 {
					t.Fatalf("refused new file %d on a layout without ceilings", refused)
				}
				return
			}
			if refused != 17 { // keep.md and n0..n16 use 18 names
				t.Fatalf("refused at new file %d, want 17", refused)
			}
			e.mustOK("write_file", map[string]any{"path": "/memory/keep.md", "content": "k2"})
			if _, err := st.Put(ctx, user, "profile.md", strings.NewReader("p"), artifacts.PutOptions{}); err != nil {
				t.Fatalf("the runtime could not create a name in the user scope: %v", err)
			}
		})
	}
}
