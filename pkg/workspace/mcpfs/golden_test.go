package mcpfs

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestStdioGolden")

// TestStdioGolden pins the bytes a client reads for list_directory,
// write_file and read_text_file calls over ServeStdio: listings of names
// that JSON escapes (HTML characters, control characters, a newline,
// U+2028, invalid UTF-8), small and large, reads of files at the top and
// below it, and error results (links, directories, missing names). The
// golden file was written by the server before the listing, the write
// and the open of a file were made faster (main at 1fc37a1); any change
// to what a client sees fails here. go test -run TestStdioGolden -update
// rewrites it.
func TestStdioGolden(t *testing.T) {
	e := newEnv(t, nil)
	names := []string{
		"plain.txt", "<b>&amp;<\\b>.html", "tab\tname", "new\nline", "ctl\x01\x1f", "quote\"back\\slash",
		"sep\u2028\u2029", "ünïcödé ☃", "bad\xff\xfeutf8", "bell\b\fform", "zz-last",
	}
	for _, n := range names {
		e.wsFile("odd/"+n, "x")
		e.wsFile("short/"+n, "x")
	}
	for i := range 20 { // odd/ is long enough to be written by the transport
		e.wsFile(fmt.Sprintf("odd/pad-%02d-%s", i, strings.Repeat("p", 20)), "x")
	}
	for i := range 40 {
		e.wsFile(fmt.Sprintf("many/f%03d.txt", i), "x")
	}
	e.wsFile("many/sub/inner.txt", "x")
	if err := os.Symlink("sub", filepath.Join(e.wsDir(), "many", "link")); err != nil {
		t.Fatal(err)
	}
	e.wsFile("small/a", "x")
	e.wsFile("file.txt", "x")
	e.wsFile("page.html", strings.Repeat("<p class=\"x\">a & b \u2028 ünï</p>\n", 100))
	if err := os.Symlink("file.txt", filepath.Join(e.wsDir(), "flink")); err != nil {
		t.Fatal(err)
	}
	c := startStdio(t, e, context.Background())
	c.initialize()
	var out bytes.Buffer
	for i, call := range []struct {
		tool string
		args map[string]any
	}{
		{"list_directory", map[string]any{"path": "/workspace/odd"}},
		{"list_directory", map[string]any{"path": "/workspace/short"}},
		{"list_directory", map[string]any{"path": "many"}},
		{"list_directory", map[string]any{"path": "/workspace/small"}},
		{"list_directory", map[string]any{"path": "/workspace"}},
		{"list_directory", map[string]any{"path": "/workspace/many/link"}},
		{"list_directory", map[string]any{"path": "/workspace/file.txt"}},
		{"list_directory", map[string]any{"path": "/workspace/missing"}},
		{"list_directory", map[string]any{"path": "/reference"}},
		{"write_file", map[string]any{"path": "/workspace/new.txt", "content": "hello\n"}},
		{"write_file", map[string]any{"path": "/workspace/new.txt", "content": strings.Repeat("<again & again>\n", 40)}},
		{"write_file", map[string]any{"path": "deep/er/w.txt", "content": "x"}},
		{"write_file", map[string]any{"path": "/workspace/many", "content": "x"}},
		{"write_file", map[string]any{"path": "/workspace/many/link/x.txt", "content": "x"}},
		{"write_file", map[string]any{"path": "/reference/x.txt", "content": "x"}},
		{"write_file", map[string]any{"path": "/etc/x", "content": "x"}},
		{"list_directory", map[string]any{"path": "/workspace"}},
		{"read_text_file", map[string]any{"path": "/workspace/file.txt"}},
		{"read_text_file", map[string]any{"path": "page.html"}},
		{"read_text_file", map[string]any{"path": "page.html", "head": 3}},
		{"read_text_file", map[string]any{"path": "page.html", "tail": 2}},
		{"read_text_file", map[string]any{"path": "/workspace/odd/tab\tname"}},
		{"read_text_file", map[string]any{"path": "/workspace/flink"}},
		{"read_text_file", map[string]any{"path": "/workspace/many"}},
		{"read_text_file", map[string]any{"path": "/workspace/missing"}},
	} {
		params, err := json.Marshal(map[string]any{"name": call.tool, "arguments": call.args})
		if err != nil {
			t.Fatal(err)
		}
		out.Write(c.roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, params)))
	}
	got := bytes.ReplaceAll(out.Bytes(), []byte(e.dir), []byte("$DIR"))
	golden := filepath.Join("testdata", "stdio-golden.jsonl")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(gl), len(wl)) {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(g, w) {
			t.Errorf("response %d:\ngot  %.600s\nwant %.600s", i+1, g, w)
		}
	}
}
