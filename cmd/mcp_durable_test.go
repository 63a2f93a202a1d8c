package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fsyncsOf runs agentstore mcp under strace, makes n write_file calls and
// returns how many fsync and fdatasync calls the server made.
func fsyncsOf(t *testing.T, bin string, n int, extra ...string) int {
	t.Helper()
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace")
	if err := os.Mkdir(filepath.Join(dir, "store"), 0o700); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-f", "-qq", "-e", "trace=fsync,fdatasync", "-o", trace, bin, "mcp",
		"--store", filepath.Join(dir, "store"), "--scratch", dir, "--app", "demo", "--user", "u", "--session", "s",
		"--snapshot", "off", "--memory", "off"}, extra...)
	cmd := exec.Command("strace", args...)
	cmd.Env = mcpEnv(dir)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	for i := range n {
		if res, _ := callTool(t, cs, "write_file", map[string]any{"path": "/workspace/f.txt", "content": strings.Repeat("x", i+1)}); res.IsError {
			t.Fatal(firstText(res))
		}
	}
	cs.Close()
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "fsync(")
}

// write_file is atomic (temporary file, rename) but fsyncs nothing of its
// own unless --durable-writes says so: then one fsync per write.
func TestMCPDurableWrites(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace is not installed")
	}
	bin := agentstoreBin(t)
	const n = 5
	plain, durable := fsyncsOf(t, bin, n), fsyncsOf(t, bin, n, "--durable-writes")
	if durable-plain != n {
		t.Errorf("%d fsyncs with --durable-writes, %d without, for %d writes: want %d more", durable, plain, n, n)
	}
}
