package mcpfs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentstore/agentstore/pkg/workspace"
)

// checkUntouched fails when the outside directory, the reference tree or
// the workspace changed since before.
type untouched struct {
	e                   *env
	outside, ref, space map[string]string
}

func (e *env) untouched() *untouched {
	e.t.Helper()
	return &untouched{e: e, outside: snapshotTree(e.t, e.outside), ref: snapshotTree(e.t, filepath.Join(e.dir, "ref")), space: snapshotTree(e.t, e.wsDir())}
}

func (u *untouched) check(what string) {
	u.e.t.Helper()
	if got := snapshotTree(u.e.t, u.e.outside); !sameTree(got, u.outside) {
		u.e.t.Errorf("%s changed the outside directory: %v", what, got)
	}
	if got := snapshotTree(u.e.t, filepath.Join(u.e.dir, "ref")); !sameTree(got, u.ref) {
		u.e.t.Errorf("%s changed the reference tree: %v", what, got)
	}
	if got := snapshotTree(u.e.t, u.e.wsDir()); !sameTree(got, u.space) {
		u.e.t.Errorf("%s changed the workspace: %v", what, got)
	}
}

// TestAttackPaths: the CVE-2025-53110 shape (a sibling sharing the
// route's prefix), "..", absolute host paths and other hostile names are
// refused by every tool, and nothing is written.
func TestAttackPaths(t *testing.T) {
	e := newEnv(t, nil)
	e.wsFile("a.txt", "mine")
	secret := filepath.Join(e.outside, "secret.txt")
	paths := []string{
		"/workspace_evil/x.txt",
		"/workspaceX",
		"/workspace/../workspace_evil/x.txt",
		"/reference_evil/x",
		"/memoryx/y",
		"../outside/secret.txt",
		"../../outside/secret.txt",
		"/workspace/../../etc/passwd",
		"/workspace/a/../../../etc/passwd",
		"/etc/passwd",
		secret,
		filepath.Join(e.wsDir(), "a.txt"),
		"~/secret.txt",
		"a\x00b",
		"/",
		"file:///etc/passwd",
		"/workspace/" + workspace.IndexName,
		strings.Repeat("a/", 3000),
	}
	tools := []struct {
		tool string
		args func(p string) map[string]any
	}{
		{"read_text_file", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"read_media_file", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"write_file", func(p string) map[string]any { return map[string]any{"path": p, "content": "pwned"} }},
		{"append_file", func(p string) map[string]any { return map[string]any{"path": p, "content": "pwned"} }},
		{"edit_file", func(p string) map[string]any {
			return map[string]any{"path": p, "edits": []map[string]any{{"oldText": "root", "newText": "pwned"}}}
		}},
		{"create_directory", func(p string) map[string]any { return map[string]any{"path": p + "/d"} }},
		{"delete_file", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"move_file", func(p string) map[string]any { return map[string]any{"source": "a.txt", "destination": p} }},
		{"copy_file", func(p string) map[string]any { return map[string]any{"source": p, "destination": "stolen.txt"} }},
		{"list_directory", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"directory_tree", func(p string) map[string]any { return map[string]any{"path": p} }},
		{"search_files", func(p string) map[string]any { return map[string]any{"path": p, "pattern": "**"} }},
		{"grep", func(p string) map[string]any { return map[string]any{"path": p, "pattern": "."} }},
		{"get_file_info", func(p string) map[string]any { return map[string]any{"path": p} }},
	}
	u := e.untouched()
	for _, p := range paths {
		for _, tool := range tools {
			res := e.call(tool.tool, tool.args(p))
			if !res.IsError {
				t.Errorf("%s %q succeeded: %.200s", tool.tool, p, text(res))
				continue
			}
			if strings.Contains(allText(res), "TOP SECRET") || strings.Contains(allText(res), "root:") {
				t.Errorf("%s %q leaked: %.200s", tool.tool, p, text(res))
			}
			if sc := structured(t, res); sc["code"] == "" || sc["code"] == nil {
				t.Errorf("%s %q: no code: %v", tool.tool, p, sc)
			}
		}
	}
	u.check("hostile paths")
}

// TestAttackLinks: symbolic links planted in the workspace (to a file and
// to a directory outside) and hard links to files outside are never
// followed to the outside: reads are refused, writes replace the link
// and never reach the target.
func TestAttackLinks(t *testing.T) {
	e := newEnv(t, nil)
	e.wsFile("keep.txt", "k")
	ws := e.wsDir()
	secret := filepath.Join(e.outside, "secret.txt")
	must(t, os.Symlink(secret, filepath.Join(ws, "flink")))
	must(t, os.Symlink(e.outside, filepath.Join(ws, "dlink")))
	must(t, os.Symlink("../../outside/secret.txt", filepath.Join(ws, "rlink")))
	must(t, os.Link(secret, filepath.Join(ws, "hard")))

	reads := []struct {
		tool string
		args map[string]any
	}{
		{"read_text_file", map[string]any{"path": "flink"}},
		{"read_text_file", map[string]any{"path": "rlink"}},
		{"read_text_file", map[string]any{"path": "dlink/secret.txt"}},
		{"read_text_file", map[string]any{"path": "hard"}},
		{"read_text_file", map[string]any{"path": "hard", "tail": 1}},
		{"read_media_file", map[string]any{"path": "hard"}},
		{"read_media_file", map[string]any{"path": "flink"}},
		{"list_directory", map[string]any{"path": "dlink"}},
		{"directory_tree", map[string]any{"path": "dlink"}},
		{"edit_file", map[string]any{"path": "hard", "edits": []map[string]any{{"oldText": "TOP", "newText": "NOT"}}}},
		{"append_file", map[string]any{"path": "hard", "content": "pwned"}},
		{"append_file", map[string]any{"path": "flink", "content": "pwned"}},
		{"write_file", map[string]any{"path": "dlink/new.txt", "content": "pwned"}},
		{"create_directory", map[string]any{"path": "dlink/sub"}},
		{"copy_file", map[string]any{"source": "hard", "destination": "stolen"}},
		{"copy_file", map[string]any{"source": "keep.txt", "destination": "dlink/k"}},
		{"move_file", map[string]any{"source": "keep.txt", "destination": "dlink/k"}},
	}
	u := e.untouched()
	for _, r := range reads {
		res := e.call(r.tool, r.args)
		if !res.IsError {
			t.Errorf("%s %v succeeded: %.200s", r.tool, r.args, text(res))
		}
		if strings.Contains(allText(res), "TOP SECRET") {
			t.Errorf("%s %v leaked the secret", r.tool, r.args)
		}
	}
	u.check("link attacks")
	// Walks list the links but never descend into them or read them.
	tree := e.mustOK("directory_tree", map[string]any{"path": "/workspace"})
	if strings.Contains(tree, "secret") {
		t.Errorf("directory_tree followed a link: %s", tree)
	}
	if got := e.mustOK("grep", map[string]any{"pattern": "SECRET"}); got != "No matches found" {
		t.Errorf("grep followed a link: %s", got)
	}
	if got := e.mustOK("search_files", map[string]any{"path": "/workspace", "pattern": "**/secret*"}); got != "No matches found" {
		t.Errorf("search_files followed a link: %s", got)
	}
	// Writing over a link replaces the link, never the target.
	e.mustOK("write_file", map[string]any{"path": "flink", "content": "mine"})
	e.mustOK("write_file", map[string]any{"path": "hard", "content": "mine too"})
	if b, _ := os.ReadFile(secret); string(b) != "TOP SECRET\n" {
		t.Fatalf("the outside file changed: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "flink")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("flink after write: %v %v", fi, err)
	}
	// Deleting a link deletes the link only.
	e.mustOK("delete_file", map[string]any{"path": "dlink"})
	if _, err := os.Stat(secret); err != nil {
		t.Fatal(err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestAttackSwapRace: a file and a directory of the workspace are swapped
// for symbolic links to the outside over and over while reads and writes
// run; no call ever reads the secret or writes outside.
func TestAttackSwapRace(t *testing.T) {
	e := newEnv(t, nil)
	ws := e.wsDir()
	e.wsFile("swap.txt", "SAFE\n")
	e.wsFile("d/safe.txt", "SAFE\n")
	secret := filepath.Join(e.outside, "secret.txt")
	outsideBefore := snapshotTree(t, e.outside)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		f, d := filepath.Join(ws, "swap.txt"), filepath.Join(ws, "d")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Swap in a link, then back to the real thing, each by rename
			// so that the name always exists.
			tmp := filepath.Join(ws, fmt.Sprintf("tmp%d", i))
			if i%2 == 0 {
				_ = os.Symlink(secret, tmp)
				_ = os.Rename(tmp, f)
				_ = os.Symlink(e.outside, tmp+"d")
				_ = os.RemoveAll(d)
				_ = os.Rename(tmp+"d", d)
			} else {
				_ = os.WriteFile(tmp, []byte("SAFE\n"), 0o600)
				_ = os.Rename(tmp, f)
				_ = os.Remove(d)
				_ = os.MkdirAll(filepath.Join(d), 0o700)
				_ = os.WriteFile(filepath.Join(d, "safe.txt"), []byte("SAFE\n"), 0o600)
			}
			swaps.Add(1)
		}
	}()
	const calls = 150
	for i := range calls {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"read_text_file", map[string]any{"path": "swap.txt"}},
			{"read_text_file", map[string]any{"path": "swap.txt", "tail": 1}},
			{"read_text_file", map[string]any{"path": "d/secret.txt"}},
			{"write_file", map[string]any{"path": "d/w.txt", "content": fmt.Sprint("write ", i)}},
			{"append_file", map[string]any{"path": "swap.txt", "content": "more\n"}},
			{"grep", map[string]any{"pattern": "SECRET"}},
		} {
			res := e.call(c.tool, c.args)
			if strings.Contains(allText(res), "TOP SECRET") {
				t.Fatalf("%s %v read the secret during a swap", c.tool, c.args)
			}
		}
	}
	close(stop)
	wg.Wait()
	if swaps.Load() < 2 {
		t.Fatalf("only %d swaps happened", swaps.Load())
	}
	if got := snapshotTree(t, e.outside); !sameTree(got, outsideBefore) {
		t.Errorf("the outside directory changed during the swaps: %v", got)
	}
}

// TestAttackLargeTree: a 10,000-file tree is walked only up to the
// entry limit (2,000) by directory_tree, search_files and grep, each
// saying where it stopped; the result stays bounded.
// TestAttackLargeTreeFull (integration tier) does it with 100,000 files
// and a limit of 20,000.
func TestAttackLargeTree(t *testing.T) {
	testAttackLargeTree(t, 10, 2_000)
}

// testAttackLargeTree runs TestAttackLargeTree on a tree of dirs
// directories of 1,000 files each, with the entry limit maxEntries.
func testAttackLargeTree(t *testing.T, dirs, maxEntries int) {
	e := newEnv(t, func(o *envOpts) { o.server.Limits.MaxEntries = maxEntries; o.ws.Scratch = shmDir(t) })
	ws := e.wsDir()
	e.wsFile("top.txt", "x")
	for d := range dirs {
		dir := filepath.Join(ws, fmt.Sprintf("d%03d", d))
		must(t, os.Mkdir(dir, 0o700))
		for f := range 1000 {
			must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.txt", f)), []byte("needle\n"), 0o600))
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
		note string
	}{
		{"directory_tree", map[string]any{"path": "/workspace"}, fmt.Sprintf("stopped after %d entries", maxEntries)},
		{"search_files", map[string]any{"path": "/workspace", "pattern": "**/f9999.txt"}, fmt.Sprintf("stopped after %d entries", maxEntries)},
		{"grep", map[string]any{"pattern": "needle"}, "stopped at 100 matches"},
		{"grep", map[string]any{"pattern": "haystack"}, fmt.Sprintf("stopped after %d entries", maxEntries)},
	} {
		res := e.call(c.tool, c.args)
		if res.IsError {
			t.Fatalf("%s: %s", c.tool, text(res))
		}
		if !strings.Contains(allText(res), c.note) {
			t.Errorf("%s: no note %q in %.300s", c.tool, c.note, allText(res)[max(0, len(allText(res))-300):])
		}
		if n := len(text(res)); n > 2<<20 {
			t.Errorf("%s: %d bytes of result", c.tool, n)
		}
	}
	tree := text(e.call("directory_tree", map[string]any{"path": "/workspace"}))
	var top []treeEntry
	if err := json.Unmarshal([]byte(tree), &top); err != nil {
		t.Fatalf("truncated tree is not JSON: %v", err)
	}
}

// TestStdioOversized: a request line over the limit is answered with an
// error for its id; the session goes on and nothing is written.
func TestStdioOversized(t *testing.T) {
	e := newEnv(t, func(o *envOpts) { o.server.Limits.MaxRequestBytes = 64 << 10 })
	c := startStdio(t, e, context.Background())
	c.initialize()
	big := strings.Repeat("x", 200<<10)
	// The TypeScript client puts the id last, the Go client first.
	m := c.exchange(`{"method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":"` + big + `"}},"jsonrpc":"2.0","id":2}`)
	if m["id"] != float64(2) || m["error"] == nil || !strings.Contains(fmt.Sprint(m["error"]), "request too large") {
		t.Fatalf("oversized (id last): %v", m)
	}
	if m := c.exchange(`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":"` + big + `"}}}`); m["id"] != "three" || m["error"] == nil {
		t.Fatalf("oversized (id first): %v", m)
	}
	if m := c.exchange(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"small.txt","content":"ok"}}}`); m["id"] != float64(4) || m["error"] != nil {
		t.Fatalf("small write after the oversized ones: %v", m)
	}
	if err := c.close(); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if got := snapshotTree(t, e.wsDir()); !sameTree(got, map[string]string{"small.txt": "ok"}) {
		t.Errorf("workspace %v", got)
	}
}
