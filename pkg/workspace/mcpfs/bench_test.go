package mcpfs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// BenchmarkStdio calls tools through ServeStdio over pipes: the whole
// server side of a call, transport included.
func BenchmarkStdio(b *testing.B) {
	const big = 100 << 20
	e := benchEnv(b, big)
	for _, c := range []struct {
		name, tool string
		args       map[string]any
	}{
		{"Read1KiB", "read_text_file", map[string]any{"path": "/workspace/one-kib.txt"}},
		{"Tail100MiB", "read_text_file", map[string]any{"path": fmt.Sprintf("/workspace/big-%d.log", big), "tail": 10}},
		{"Write1KiB", "write_file", map[string]any{"path": "/workspace/w.txt", "content": strings.Repeat("w", 1024)}},
		{"ListDirectory1000", "list_directory", map[string]any{"path": "/workspace/list"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			conn := startStdio(b, e, context.Background())
			conn.initialize()
			params, err := json.Marshal(map[string]any{"name": c.tool, "arguments": c.args})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			id := 0
			cpu0 := processCPU(b)
			for b.Loop() {
				id++
				resp := conn.roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params))
				if bytes.Contains(resp, []byte(`"isError":true`)) || bytes.Contains(resp, []byte(`"error":{`)) {
					b.Fatalf("%.500s", resp)
				}
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the CPU time the process has used, user and system, in
// nanoseconds. Per call it measures work, not waiting, so it changes
// little when other processes load the machine.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
