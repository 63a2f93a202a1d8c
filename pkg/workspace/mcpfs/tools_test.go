package mcpfs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// TestTools calls every tool through the go-sdk client, for its result
// and for its failures, and checks the disk.
func TestTools(t *testing.T) {
	tests := []struct {
		name  string
		setup map[string]string // workspace files
		tool  string
		args  map[string]any
		code  string // "" for success
		want  string // substring of the text ("" to skip)
		exact string // the whole text
		disk  map[string]string
	}{
		{name: "read whole", setup: map[string]string{"a.txt": "one\ntwo\n"}, tool: "read_text_file", args: map[string]any{"path": "/workspace/a.txt"}, exact: "one\ntwo\n"},
		{name: "read relative", setup: map[string]string{"a.txt": "x"}, tool: "read_text_file", args: map[string]any{"path": "a.txt"}, exact: "x"},
		{name: "read head", setup: map[string]string{"a.txt": "1\n2\n3\n"}, tool: "read_text_file", args: map[string]any{"path": "/workspace/a.txt", "head": 2}, exact: "1\n2"},
		{name: "read tail", setup: map[string]string{"a.txt": "1\n2\n3\n"}, tool: "read_text_file", args: map[string]any{"path": "/workspace/a.txt", "tail": 2}, exact: "2\n3"},
		{name: "read offset limit", setup: map[string]string{"a.txt": "1\n2\n3\n4\n"}, tool: "read_text_file", args: map[string]any{"path": "/workspace/a.txt", "offset": 1, "limit": 2}, exact: "2\n3"},
		{name: "read deprecated alias", setup: map[string]string{"a.txt": "x"}, tool: "read_file", args: map[string]any{"path": "/workspace/a.txt"}, exact: "x"},
		{name: "read unknown argument ignored", setup: map[string]string{"a.txt": "x"}, tool: "read_text_file", args: map[string]any{"path": "/workspace/a.txt", "encoding": "utf8"}, exact: "x"},
		{name: "read head and tail", setup: map[string]string{"a.txt": "x"}, tool: "read_text_file", args: map[string]any{"path": "a.txt", "head": 1, "tail": 1}, code: "INVALID_ARGUMENT", want: "head or tail"},
		{name: "read negative head", setup: map[string]string{"a.txt": "x"}, tool: "read_text_file", args: map[string]any{"path": "a.txt", "head": -1}, code: "INVALID_ARGUMENT"},
		{name: "read wrong type", tool: "read_text_file", args: map[string]any{"path": 7}, code: "INVALID_ARGUMENT", want: `"path"`},
		{name: "read missing", tool: "read_text_file", args: map[string]any{"path": "/workspace/nope.txt"}, code: "NOT_FOUND", want: "/workspace/nope.txt does not exist"},
		{name: "read no path", tool: "read_text_file", args: map[string]any{}, code: "INVALID_ARGUMENT", want: `"path" is required`},
		{name: "read binary", setup: map[string]string{"b.bin": "ab\x00cd"}, tool: "read_text_file", args: map[string]any{"path": "b.bin"}, code: "INVALID_ARGUMENT", want: "read_media_file"},
		{name: "read directory", setup: map[string]string{"d/x": "x"}, tool: "read_text_file", args: map[string]any{"path": "d"}, code: "INVALID_ARGUMENT", want: "directory"},
		{name: "read reference", tool: "read_text_file", args: map[string]any{"path": "/reference/guide.md", "head": 1}, exact: "# Guide"},
		{name: "read multiple", setup: map[string]string{"a.txt": "A", "b.txt": "B"}, tool: "read_multiple_files", args: map[string]any{"paths": []string{"/workspace/a.txt", "b.txt", "/workspace/none"}}, exact: "/workspace/a.txt:\nA\n\n---\nb.txt:\nB\n\n---\n/workspace/none: Error - NOT_FOUND: /workspace/none does not exist"},
		{name: "read multiple none", tool: "read_multiple_files", args: map[string]any{"paths": []string{}}, code: "INVALID_ARGUMENT"},
		{name: "write", tool: "write_file", args: map[string]any{"path": "/workspace/sub/new.txt", "content": "hi"}, exact: "Successfully wrote to /workspace/sub/new.txt", disk: map[string]string{"sub": "<dir>", "sub/new.txt": "hi"}},
		{name: "write no content", tool: "write_file", args: map[string]any{"path": "x"}, code: "INVALID_ARGUMENT", disk: map[string]string{}},
		{name: "write over directory", setup: map[string]string{"d/x": "x"}, tool: "write_file", args: map[string]any{"path": "d", "content": "y"}, code: "INVALID_ARGUMENT", disk: map[string]string{"d": "<dir>", "d/x": "x"}},
		{name: "write reference", tool: "write_file", args: map[string]any{"path": "/reference/guide.md", "content": "evil"}, code: "PERMISSION_DENIED", want: "/reference is read-only", disk: map[string]string{}},
		{name: "write reserved name", tool: "write_file", args: map[string]any{"path": workspace.IndexName, "content": "{}"}, code: "PERMISSION_DENIED", disk: map[string]string{}},
		{name: "append", setup: map[string]string{"log.txt": "a\n"}, tool: "append_file", args: map[string]any{"path": "log.txt", "content": "b\n"}, want: "appended 2 bytes", disk: map[string]string{"log.txt": "a\nb\n"}},
		{name: "append creates", tool: "append_file", args: map[string]any{"path": "log.txt", "content": "b"}, disk: map[string]string{"log.txt": "b"}},
		{name: "edit", setup: map[string]string{"c.py": "def f():\n    return 1\n"}, tool: "edit_file", args: map[string]any{"path": "c.py", "edits": []map[string]any{{"oldText": "return 1", "newText": "return 2"}}},
			exact: "```diff\nIndex: /workspace/c.py\n" + strings.Repeat("=", 67) + "\n--- /workspace/c.py\toriginal\n+++ /workspace/c.py\tmodified\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n```\n\n",
			disk:  map[string]string{"c.py": "def f():\n    return 2\n"}},
		{name: "edit dry run", setup: map[string]string{"c.txt": "a\nb\n"}, tool: "edit_file", args: map[string]any{"path": "c.txt", "dryRun": true, "edits": []map[string]any{{"oldText": "b", "newText": "B"}}}, want: "+B", disk: map[string]string{"c.txt": "a\nb\n"}},
		{name: "edit whitespace-insensitive", setup: map[string]string{"c.txt": "  if x:\n    y()\n"}, tool: "edit_file", args: map[string]any{"path": "c.txt", "edits": []map[string]any{{"oldText": "if x:\n  y()", "newText": "if z:\n  w()"}}}, disk: map[string]string{"c.txt": "  if z:\n  w()\n"}},
		{name: "edit no match", setup: map[string]string{"c.txt": "a\n"}, tool: "edit_file", args: map[string]any{"path": "c.txt", "edits": []map[string]any{{"oldText": "zzz", "newText": "y"}}}, code: "NOT_FOUND", want: "could not find", disk: map[string]string{"c.txt": "a\n"}},
		{name: "edit missing newText", setup: map[string]string{"c.txt": "a\n"}, tool: "edit_file", args: map[string]any{"path": "c.txt", "edits": []map[string]any{{"oldText": "a"}}}, code: "INVALID_ARGUMENT", disk: map[string]string{"c.txt": "a\n"}},
		{name: "mkdir", tool: "create_directory", args: map[string]any{"path": "/workspace/a/b"}, exact: "Successfully created directory /workspace/a/b", disk: map[string]string{"a": "<dir>", "a/b": "<dir>"}},
		{name: "mkdir over file", setup: map[string]string{"f": "x"}, tool: "create_directory", args: map[string]any{"path": "f/g"}, code: "INVALID_ARGUMENT", disk: map[string]string{"f": "x"}},
		{name: "list", setup: map[string]string{"b.txt": "x", "a/x": "y"}, tool: "list_directory", args: map[string]any{"path": "/workspace"}, exact: "[DIR] a\n[FILE] b.txt"},
		{name: "list file", setup: map[string]string{"b.txt": "x"}, tool: "list_directory", args: map[string]any{"path": "/workspace/b.txt"}, code: "INVALID_ARGUMENT"},
		{name: "list sizes", setup: map[string]string{"b.txt": "xyz", "big": strings.Repeat("x", 2048), "d/x": ""}, tool: "list_directory_with_sizes", args: map[string]any{"path": "/workspace", "sortBy": "size"},
			exact: fmt.Sprintf("[FILE] %-30s %10s\n[FILE] %-30s %10s\n[DIR] %-30s \n\nTotal: 2 files, 1 directories\nCombined size: 2.00 KB", "big", "2.00 KB", "b.txt", "3 B", "d")},
		{name: "list sizes bad sort", tool: "list_directory_with_sizes", args: map[string]any{"path": "/workspace", "sortBy": "age"}, code: "INVALID_ARGUMENT"},
		{name: "tree", setup: map[string]string{"a/b.txt": "x", "node_modules/m.js": "y", "c.txt": "z"}, tool: "directory_tree", args: map[string]any{"path": "/workspace", "excludePatterns": []string{"node_modules"}},
			exact: "[\n  {\n    \"name\": \"a\",\n    \"type\": \"directory\",\n    \"children\": [\n      {\n        \"name\": \"b.txt\",\n        \"type\": \"file\"\n      }\n    ]\n  },\n  {\n    \"name\": \"c.txt\",\n    \"type\": \"file\"\n  }\n]"},
		{name: "tree of a file", setup: map[string]string{"c.txt": "z"}, tool: "directory_tree", args: map[string]any{"path": "c.txt"}, code: "INVALID_ARGUMENT"},
		{name: "move", setup: map[string]string{"a.txt": "A"}, tool: "move_file", args: map[string]any{"source": "a.txt", "destination": "/workspace/d/b.txt"}, code: "NOT_FOUND", disk: map[string]string{"a.txt": "A"}},
		{name: "move rename", setup: map[string]string{"a.txt": "A"}, tool: "move_file", args: map[string]any{"source": "a.txt", "destination": "b.txt"}, exact: "Successfully moved /workspace/a.txt to /workspace/b.txt", disk: map[string]string{"b.txt": "A"}},
		{name: "move onto existing", setup: map[string]string{"a.txt": "A", "b.txt": "B"}, tool: "move_file", args: map[string]any{"source": "a.txt", "destination": "b.txt"}, code: "CONFLICT", disk: map[string]string{"a.txt": "A", "b.txt": "B"}},
		{name: "move across routes", setup: map[string]string{"a.txt": "A"}, tool: "move_file", args: map[string]any{"source": "a.txt", "destination": "/memory/a.txt"}, code: "INVALID_ARGUMENT", want: "copy_file", disk: map[string]string{"a.txt": "A"}},
		{name: "move from reference", tool: "move_file", args: map[string]any{"source": "/reference/guide.md", "destination": "g.md"}, code: "INVALID_ARGUMENT", disk: map[string]string{}},
		{name: "copy from reference", tool: "copy_file", args: map[string]any{"source": "/reference/guide.md", "destination": "g.md"}, want: "Successfully copied", disk: map[string]string{"g.md": "# Guide\nline two\n"}},
		{name: "copy onto existing", setup: map[string]string{"a": "A", "b": "B"}, tool: "copy_file", args: map[string]any{"source": "a", "destination": "b"}, code: "CONFLICT", disk: map[string]string{"a": "A", "b": "B"}},
		{name: "copy to reference", setup: map[string]string{"a": "A"}, tool: "copy_file", args: map[string]any{"source": "a", "destination": "/reference/a"}, code: "PERMISSION_DENIED", disk: map[string]string{"a": "A"}},
		{name: "delete", setup: map[string]string{"a": "A", "b": "B"}, tool: "delete_file", args: map[string]any{"path": "a"}, exact: "Successfully deleted /workspace/a", disk: map[string]string{"b": "B"}},
		{name: "delete missing", tool: "delete_file", args: map[string]any{"path": "a"}, code: "NOT_FOUND", disk: map[string]string{}},
		{name: "delete full directory", setup: map[string]string{"d/x": "x"}, tool: "delete_file", args: map[string]any{"path": "d"}, code: "CONFLICT", want: "/workspace/d: the directory is not empty", disk: map[string]string{"d": "<dir>", "d/x": "x"}},
		{name: "delete workspace", tool: "delete_file", args: map[string]any{"path": "/workspace"}, code: "INVALID_ARGUMENT", disk: map[string]string{}},
		{name: "search", setup: map[string]string{"a.csv": "", "d/b.csv": "", "d/c.txt": "", "skip/e.csv": ""}, tool: "search_files", args: map[string]any{"path": "/workspace", "pattern": "**/*.csv", "excludePatterns": []string{"skip/**"}}, exact: "/workspace/a.csv\n/workspace/d/b.csv"},
		{name: "search top only", setup: map[string]string{"a.csv": "", "d/b.csv": ""}, tool: "search_files", args: map[string]any{"path": "/workspace", "pattern": "*.csv"}, exact: "/workspace/a.csv"},
		{name: "search none", tool: "search_files", args: map[string]any{"path": "/workspace", "pattern": "*.csv"}, exact: "No matches found"},
		{name: "search bad glob", tool: "search_files", args: map[string]any{"path": "/workspace", "pattern": "[a"}, code: "INVALID_ARGUMENT"},
		{name: "info", setup: map[string]string{"a.txt": "abc"}, tool: "get_file_info", args: map[string]any{"path": "a.txt"}, want: "size: 3\n"},
		{name: "info missing", tool: "get_file_info", args: map[string]any{"path": "a.txt"}, code: "NOT_FOUND"},
		{name: "allowed", tool: "list_allowed_directories", args: nil, exact: "Allowed directories:\n/workspace\n/reference\n/memory"},
		{name: "grep", setup: map[string]string{"a.txt": "alpha\nbeta\ngamma\n", "d/b.md": "beta max\n", "c.bin": "beta\x00"}, tool: "grep", args: map[string]any{"pattern": "^be"}, exact: "/workspace/a.txt:2: beta\n/workspace/d/b.md:1: beta max"},
		{name: "grep include", setup: map[string]string{"a.txt": "beta\n", "d/b.md": "beta\n"}, tool: "grep", args: map[string]any{"pattern": "beta", "include": "*.md"}, exact: "/workspace/d/b.md:1: beta"},
		{name: "grep one file", setup: map[string]string{"a.txt": "x\ny\nx\n"}, tool: "grep", args: map[string]any{"pattern": "x", "path": "a.txt"}, exact: "/workspace/a.txt:1: x\n/workspace/a.txt:3: x"},
		{name: "grep max", setup: map[string]string{"a.txt": "x\nx\nx\n"}, tool: "grep", args: map[string]any{"pattern": "x", "maxMatches": 2}, want: "/workspace/a.txt:2: x"},
		{name: "grep bad regexp", tool: "grep", args: map[string]any{"pattern": "("}, code: "INVALID_ARGUMENT", want: "RE2"},
		{name: "grep reference", tool: "grep", args: map[string]any{"pattern": "two", "path": "/reference"}, exact: "/reference/guide.md:2: line two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			for rel, data := range tt.setup {
				e.wsFile(rel, data)
			}
			if tt.setup == nil {
				e.wsFile("x", "")
				os.Remove(filepath.Join(e.wsDir(), "x"))
			}
			res := e.call(tt.tool, tt.args)
			got := text(res)
			if tt.code == "" && res.IsError {
				t.Fatalf("error: %s", got)
			}
			if tt.code != "" {
				if !res.IsError {
					t.Fatalf("succeeded: %s", got)
				}
				if c := structured(t, res)["code"]; c != tt.code {
					t.Fatalf("code %v, want %s: %s", c, tt.code, got)
				}
			}
			if tt.exact != "" && got != tt.exact {
				t.Errorf("text\n%q\nwant\n%q", got, tt.exact)
			}
			if tt.want != "" && !strings.Contains(allText(res), tt.want) {
				t.Errorf("text %q does not contain %q", allText(res), tt.want)
			}
			if tt.disk != nil {
				if got := snapshotTree(t, e.wsDir()); !sameTree(got, tt.disk) {
					t.Errorf("disk %v, want %v", got, tt.disk)
				}
			}
			if sc := structured(t, res); sc["content"] == nil {
				t.Errorf("structured content without content: %v", sc)
			}
		})
	}
}

// TestReadWindows reads files larger than the read limit a window at a
// time and the tail of a large file.
func TestReadWindows(t *testing.T) {
	e := newEnv(t, func(o *envOpts) { o.server.Limits.MaxReadBytes = 100 })
	var b strings.Builder
	for i := range 50 {
		b.WriteString(strings.Repeat("x", 9) + string(rune('a'+i%26)) + "\n")
	}
	e.wsFile("big.txt", b.String())
	res := e.call("read_text_file", map[string]any{"path": "big.txt"})
	if res.IsError {
		t.Fatal(text(res))
	}
	sc := structured(t, res)
	if sc["truncated"] != true || sc["next_offset"] != float64(9) {
		t.Fatalf("structured %v, want truncated at line 9", sc)
	}
	if !strings.Contains(allText(res), "offset=9") {
		t.Errorf("no note how to read on: %q", allText(res))
	}
	if got := text(res); len(got) > 100 || strings.Count(got, "\n") != 8 {
		t.Errorf("window %q", got)
	}
	got := e.mustOK("read_text_file", map[string]any{"path": "big.txt", "offset": 9, "limit": 2})
	if got != "xxxxxxxxxj\nxxxxxxxxxk" {
		t.Errorf("offset window %q", got)
	}
	if got := e.mustOK("read_text_file", map[string]any{"path": "big.txt", "tail": 1}); got != "xxxxxxxxxx" {
		t.Errorf("tail %q", got)
	}
	e.mustFail("read_text_file", map[string]any{"path": "big.txt", "tail": 20}, "ARTIFACT_TOO_LARGE")
	e.mustFail("read_media_file", map[string]any{"path": "big.txt"}, "ARTIFACT_TOO_LARGE")
}

func TestReadMedia(t *testing.T) {
	e := newEnv(t, nil)
	png := "\x89PNG\r\n\x1a\nfake"
	e.wsFile("p.png", png)
	e.wsFile("s.wav", "RIFFfake")
	e.wsFile("d.bin", "\x00\x01")
	tests := []struct {
		path, kind, mime string
	}{
		{"p.png", "image", "image/png"},
		{"s.wav", "audio", "audio/"},
		{"d.bin", "resource", "application/octet-stream"},
	}
	for _, tt := range tests {
		res := e.call("read_media_file", map[string]any{"path": tt.path})
		if res.IsError {
			t.Fatalf("%s: %s", tt.path, text(res))
		}
		b, _ := json.Marshal(res.Content[0])
		var c struct {
			Type     string `json:"type"`
			Data     string `json:"data"`
			MIMEType string `json:"mimeType"`
			Resource struct {
				Blob     string `json:"blob"`
				MIMEType string `json:"mimeType"`
			} `json:"resource"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		data, mt := c.Data, c.MIMEType
		if c.Type == "resource" {
			data, mt = c.Resource.Blob, c.Resource.MIMEType
		}
		raw, _ := base64.StdEncoding.DecodeString(data)
		want, _ := os.ReadFile(filepath.Join(e.wsDir(), tt.path))
		if c.Type != tt.kind || !strings.HasPrefix(mt, tt.mime) || string(raw) != string(want) {
			t.Errorf("%s: type %s mime %s data %q", tt.path, c.Type, mt, raw)
		}
	}
	e.mustFail("read_media_file", map[string]any{"path": "none.png"}, "NOT_FOUND")
}

// TestMemory: /memory files are artifacts of the user scope, shared by
// the user's sessions.
func TestMemory(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.mustOK("write_file", map[string]any{"path": "/memory/prefs/style.md", "content": "terse"})
	e.mustOK("write_file", map[string]any{"path": "/memory/prefs/style.md", "content": "very terse"})
	e.mustOK("append_file", map[string]any{"path": "/memory/log.md", "content": "a"})
	e.mustOK("append_file", map[string]any{"path": "/memory/log.md", "content": "b"})
	user := artifacts.UserScope(e.scope.App, e.scope.User)
	rec, err := e.store.Stat(ctx, user, "prefs/style.md", artifacts.Latest)
	if err != nil || rec.Version != 2 {
		t.Fatalf("store record %+v, %v; want version 2", rec, err)
	}
	// Another session of the same user sees it; another user does not.
	other := e.connect(artifacts.SessionScope("demo", "u-1", "s-2"), nil)
	if got := text(callOn(t, other, "read_text_file", map[string]any{"path": "/memory/prefs/style.md"})); got != "very terse" {
		t.Errorf("other session reads %q", got)
	}
	stranger := e.connect(artifacts.SessionScope("demo", "u-2", "s-1"), nil)
	if res := callOn(t, stranger, "read_text_file", map[string]any{"path": "/memory/prefs/style.md"}); !res.IsError {
		t.Errorf("another user read the memory: %s", text(res))
	}
	if got := e.mustOK("read_text_file", map[string]any{"path": "/memory/log.md"}); got != "ab" {
		t.Errorf("appended memory %q", got)
	}
	if got := e.mustOK("list_directory", map[string]any{"path": "/memory"}); got != "[FILE] log.md\n[DIR] prefs" {
		t.Errorf("memory listing %q", got)
	}
	if got := e.mustOK("list_directory", map[string]any{"path": "/memory/prefs"}); got != "[FILE] style.md" {
		t.Errorf("memory sub listing %q", got)
	}
	e.mustOK("copy_file", map[string]any{"source": "/memory/prefs/style.md", "destination": "/workspace/style.md"})
	e.mustOK("move_file", map[string]any{"source": "/memory/log.md", "destination": "/memory/old/log.md"})
	if got := e.mustOK("search_files", map[string]any{"path": "/memory", "pattern": "**/*.md"}); got != "/memory/old\n/memory/old/log.md\n/memory/prefs\n/memory/prefs/style.md" && got != "/memory/old/log.md\n/memory/prefs/style.md" {
		t.Errorf("memory search %q", got)
	}
	e.mustOK("delete_file", map[string]any{"path": "/memory/old/log.md"})
	e.mustFail("read_text_file", map[string]any{"path": "/memory/old/log.md"}, "NOT_FOUND")
	e.mustFail("write_file", map[string]any{"path": "/memory/prefs", "content": "x"}, "INVALID_ARGUMENT")
	e.mustFail("read_text_file", map[string]any{"path": "/memory/prefs"}, "INVALID_ARGUMENT")
	if got := snapshotTree(t, e.wsDir()); !sameTree(got, map[string]string{"style.md": "very terse"}) {
		t.Errorf("workspace %v", got)
	}
}

// TestMemoryOff: without a memory store there is no /memory route.
func TestMemoryOff(t *testing.T) {
	e := newEnv(t, func(o *envOpts) { o.noRef = true })
	srv, err := New(Options{Manager: e.m})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	e.cs = e.connect(e.scope, nil)
	if got := e.mustOK("list_allowed_directories", nil); got != "Allowed directories:\n/workspace" {
		t.Errorf("allowed %q", got)
	}
	e.mustFail("write_file", map[string]any{"path": "/memory/x", "content": "x"}, "PERMISSION_DENIED")
	e.mustFail("read_text_file", map[string]any{"path": "/reference/guide.md"}, "PERMISSION_DENIED")
}

// TestProfiles: the read-only profile lists only read-only tools; --tools
// narrows; end_turn only when named; bad names are refused.
func TestProfiles(t *testing.T) {
	readOnlyTools := []string{"directory_tree", "get_file_info", "grep", "list_allowed_directories", "list_directory", "list_directory_with_sizes", "read_file", "read_media_file", "read_multiple_files", "read_text_file", "search_files"}
	tests := []struct {
		name    string
		profile Profile
		tools   []string
		want    []string
		err     string
	}{
		{name: "read-only", profile: ProfileReadOnly, want: readOnlyTools},
		{name: "read-write", profile: ProfileReadWrite, want: slices.Sorted(slices.Values(append(slices.Clone(readOnlyTools), "append_file", "copy_file", "create_directory", "delete_file", "edit_file", "move_file", "write_file")))},
		{name: "allowlist", tools: []string{"read_text_file", "write_file"}, want: []string{"read_text_file", "write_file"}},
		{name: "end_turn asked", tools: []string{"write_file", "end_turn"}, want: []string{"end_turn", "write_file"}},
		{name: "checkpoint tools asked", tools: []string{"list_checkpoints", "restore_checkpoint"}, want: []string{"list_checkpoints", "restore_checkpoint"}},
		{name: "list_checkpoints read-only", profile: ProfileReadOnly, tools: []string{"list_checkpoints"}, want: []string{"list_checkpoints"}},
		{name: "runtime tools in read-only", profile: ProfileReadOnly, tools: []string{"end_turn", "list_checkpoints"}, want: []string{"end_turn", "list_checkpoints"}},
		{name: "restore_checkpoint in read-only", profile: ProfileReadOnly, tools: []string{"restore_checkpoint"}, err: `tool "restore_checkpoint" writes, so the read-only profile leaves it out`},
		{name: "unknown tool", tools: []string{"rm_rf"}, err: `unknown tool "rm_rf"`},
		{name: "write tool in read-only", profile: ProfileReadOnly, tools: []string{"write_file"}, err: "read-only profile leaves it out"},
		{name: "bad profile", profile: "admin", err: "unknown profile"},
	}
	base := newEnv(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := New(Options{Manager: base.m, Memory: base.store, Profile: tt.profile, Tools: tt.tools})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e := &env{t: t, srv: srv, m: base.m}
			cs := e.connect(testScope, nil)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			if !slices.Equal(names, tt.want) {
				t.Errorf("tools %v, want %v", names, tt.want)
			}
			if got := srv.ToolNames(); !slices.Equal(got, tt.want) {
				t.Errorf("ToolNames %v", got)
			}
			if tt.profile == ProfileReadOnly {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "x", "content": "y"}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
					t.Errorf("write_file in the read-only profile: %v", err)
				}
			}
		})
	}
}

// TestEndTurn: under the end-of-turn policy end_turn publishes a
// snapshot and resets the per-turn allowance.
func TestEndTurn(t *testing.T) {
	e := newEnv(t, func(o *envOpts) {
		o.ws.Policy = workspace.SnapshotAtEndOfTurn
		o.ws.Quota = workspace.Quota{TurnBytes: 10}
		o.server.Tools = []string{"write_file", "end_turn"}
	})
	e.mustOK("write_file", map[string]any{"path": "a", "content": "12345678"})
	e.mustFail("write_file", map[string]any{"path": "b", "content": "12345"}, "QUOTA_EXCEEDED")
	if got := e.mustOK("end_turn", nil); !strings.Contains(got, "snapshot version 1") {
		t.Errorf("end_turn %q", got)
	}
	e.mustOK("write_file", map[string]any{"path": "b", "content": "12345"})
	if got := e.mustOK("end_turn", nil); !strings.Contains(got, "snapshot version 2") {
		t.Errorf("end_turn %q", got)
	}
	if got := e.mustOK("end_turn", nil); got != "turn ended; no snapshot was needed" {
		t.Errorf("end_turn without changes %q", got)
	}
}

// TestCloseSnapshots: Close snapshots the changed workspaces under the
// end-of-turn policy.
func TestCloseSnapshots(t *testing.T) {
	e := newEnv(t, func(o *envOpts) { o.ws.Policy = workspace.SnapshotAtEndOfTurn })
	e.mustOK("write_file", map[string]any{"path": "a", "content": "x"})
	if _, err := e.store.Stat(context.Background(), e.scope, workspace.SnapshotName, artifacts.Latest); !artifacts.IsNotFound(err) {
		t.Fatalf("snapshot before Close: %v", err)
	}
	if err := e.srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Stat(context.Background(), e.scope, workspace.SnapshotName, artifacts.Latest); err != nil {
		t.Fatalf("no snapshot after Close: %v", err)
	}
}

// TestAudit: every call is one JSON line with tool, path, bytes, code and
// duration.
func TestAudit(t *testing.T) {
	var buf strings.Builder
	e := newEnv(t, func(o *envOpts) { o.server.Audit = &syncWriter{w: &buf} })
	e.mustOK("write_file", map[string]any{"path": "a.txt", "content": "12345"})
	e.mustFail("read_text_file", map[string]any{"path": "nope"}, "NOT_FOUND")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("audit lines %q", lines)
	}
	want := []map[string]any{
		{"tool": "write_file", "path": "/workspace/a.txt", "bytes": float64(5), "code": "OK", "session": "s-1"},
		{"tool": "read_text_file", "path": "/workspace/nope", "code": "NOT_FOUND"},
	}
	for i, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		for k, v := range want[i] {
			if rec[k] != v {
				t.Errorf("line %d: %s = %v, want %v (%s)", i, k, rec[k], v, l)
			}
		}
		if _, ok := rec["duration_ms"].(float64); !ok {
			t.Errorf("line %d: no duration: %s", i, l)
		}
	}
}

// syncWriter serialises writes of concurrent calls.
type syncWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestRootsIgnored: a client that offers roots naming / changes nothing.
func TestRootsIgnored(t *testing.T) {
	e := newEnv(t, nil)
	client := mcp.NewClient(&mcp.Implementation{Name: "rooty", Version: "1"}, nil)
	//lint:ignore SA1019 a client that still offers roots is what this test is about
	client.AddRoots(&mcp.Root{URI: "file:///", Name: "everything"})
	ms, err := e.srv.ForSession(e.scope)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := ms.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := client.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := text(callOn(t, cs, "list_allowed_directories", nil)); got != "Allowed directories:\n/workspace\n/reference\n/memory" {
		t.Errorf("allowed %q", got)
	}
	for _, p := range []string{"/", "/etc/passwd", e.outside + "/secret.txt", "file:///etc/passwd"} {
		if res := callOn(t, cs, "read_text_file", map[string]any{"path": p}); !res.IsError {
			t.Errorf("%s readable with roots naming /: %s", p, text(res))
		}
	}
}
