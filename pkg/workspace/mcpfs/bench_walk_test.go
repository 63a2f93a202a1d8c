package mcpfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkWalk10000 walks a workspace of 10,000 files of 40 lines in
// 100 directories: search_files with "**" globs, grep over every line,
// directory_tree with an exclude pattern.
func BenchmarkWalk10000(b *testing.B) {
	e := newEnv(b, func(o *envOpts) { o.ws.Scratch = shmDir(b); o.server.Limits.MaxEntries = 20_000 })
	ws := e.wsDir()
	e.wsFile("top.txt", "x")
	body := strings.Repeat("func handler(ctx context.Context) error { return nil }\n", 40)
	for d := range 100 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%03d", d))
		must(b, os.Mkdir(dir, 0o700))
		for f := range 100 {
			name := fmt.Sprintf("file%03d.go", f)
			if f%10 == 0 {
				name = fmt.Sprintf("doc%03d.md", f)
			}
			must(b, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
		}
	}
	for _, c := range []struct {
		name, tool string
		args       map[string]any
	}{
		{"SearchFiles", "search_files", map[string]any{"path": "/workspace", "pattern": "**/*.md"}},
		{"SearchFilesNested", "search_files", map[string]any{"path": "/workspace", "pattern": "**/pkg0*/**/doc*.md", "excludePatterns": []string{"**/pkg09*/**"}}},
		{"GrepNoMatch", "grep", map[string]any{"pattern": `needle\(`}},
		{"GrepInclude", "grep", map[string]any{"pattern": `needle\(`, "include": "**/*.md"}},
		{"DirectoryTreeExclude", "directory_tree", map[string]any{"path": "/workspace", "excludePatterns": []string{"*.md"}}},
	} {
		b.Run(c.name, func(b *testing.B) { benchCall(b, e, c.tool, c.args) })
	}
}
