package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPCallTimeout: --call-timeout reaches every call: a grep that
// would run for minutes over a long line answers TIMEOUT, and the server
// goes on.
func TestMCPCallTimeout(t *testing.T) {
	bin := agentstoreBin(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "store"), 0o700); err != nil {
		t.Fatal(err)
	}
	args := []string{"--store", filepath.Join(dir, "store"), "--scratch", dir, "--app", "a", "--user", "u", "--session", "s"}
	cs, _ := stdioSession(t, bin, dir, args...)
	line := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 40_000)
	if res, _ := callTool(t, cs, "write_file", map[string]any{"path": "line.txt", "content": line}); res.IsError {
		t.Fatalf("write: %s", firstText(res))
	}
	cs.Close()

	cs, stderr := stdioSession(t, bin, dir, append(args, "--call-timeout", "2s")...)
	defer cs.Close()
	// A hang guard, not a timing assertion: the grep alone would take
	// minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "grep", Arguments: map[string]any{"pattern": strings.Repeat("[a-z]{1000}", 4) + "0", "path": "line.txt"}})
	if err != nil {
		t.Fatalf("grep: %v\n%s", err, stderr)
	}
	if !res.IsError || !strings.HasPrefix(firstText(res), "Error: TIMEOUT: ") || !strings.Contains(firstText(res), "time limit of 2s") {
		t.Fatalf("grep answered %q", firstText(res))
	}
	if res, _ := callTool(t, cs, "list_allowed_directories", nil); res.IsError {
		t.Fatalf("a call after the timeout: %s", firstText(res))
	}
}
