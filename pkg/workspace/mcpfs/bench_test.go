package mcpfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchEnv is an env whose workspace holds a 1 KiB file, a directory of
// 1,000 entries and files of the given sizes of 100-byte lines.
func benchEnv(b *testing.B, sizes ...int64) *env {
	e := newEnv(b, func(o *envOpts) { o.ws.Scratch = shmDir(b) })
	e.wsFile("one-kib.txt", strings.Repeat("a", 1024))
	for i := range 1000 {
		e.wsFile(fmt.Sprintf("list/f%04d.txt", i), "x")
	}
	line := strings.Repeat("x", 99) + "\n"
	for _, n := range sizes {
		f, err := os.Create(filepath.Join(e.wsDir(), fmt.Sprintf("big-%d.log", n)))
		if err != nil {
			b.Fatal(err)
		}
		chunk := strings.Repeat(line, 10_000)
		for w := int64(0); w < n; w += int64(len(chunk)) {
			if _, err := f.WriteString(chunk[:min(int64(len(chunk)), n-w)]); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
	}
	return e
}

func benchCall(b *testing.B, e *env, tool string, args map[string]any) {
	b.ReportAllocs()
	for b.Loop() {
		if res := e.call(tool, args); res.IsError {
			b.Fatal(text(res))
		}
	}
}

func BenchmarkRead1KiB(b *testing.B) {
	e := benchEnv(b)
	benchCall(b, e, "read_text_file", map[string]any{"path": "one-kib.txt"})
}

func BenchmarkListDirectory1000(b *testing.B) {
	e := benchEnv(b)
	benchCall(b, e, "list_directory", map[string]any{"path": "list"})
}

func BenchmarkWrite1KiB(b *testing.B) {
	e := benchEnv(b)
	benchCall(b, e, "write_file", map[string]any{"path": "w.txt", "content": strings.Repeat("w", 1024)})
}

// BenchmarkTail reads the last 10 lines of files from 1 MB to 100 MB:
// time and memory per call must not grow with the file.
func BenchmarkTail(b *testing.B) {
	sizes := []int64{1 << 20, 10 << 20, 100 << 20}
	e := benchEnv(b, sizes...)
	for _, n := range sizes {
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			benchCall(b, e, "read_text_file", map[string]any{"path": fmt.Sprintf("big-%d.log", n), "tail": 10})
		})
	}
}
