package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPStoreBytes: agentstore mcp --ws-max-store-bytes refuses the
// snapshot of a write that would pass the session's ceiling: the write
// answers NOT_PERSISTED with cause QUOTA_EXCEEDED, the file stays in the
// workspace, and once the tree fits again the next write persists.
// With --snapshot-format zip the flag is a usage error (exit 2).
func TestMCPStoreBytes(t *testing.T) {
	bin := agentstoreBin(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "store"), 0o700); err != nil {
		t.Fatal(err)
	}
	args := []string{"--store", filepath.Join(dir, "store"), "--scratch", dir, "--app", "a", "--user", "u", "--session", "s"}
	zip := exec.Command(bin, append(append([]string{"mcp"}, args...), "--ws-max-store-bytes", "1MiB", "--snapshot-format", "zip")...)
	zip.Env = mcpEnv(dir)
	out, err := zip.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--snapshot-format incremental or auto") {
		t.Fatalf("zip with a ceiling: %v\n%s", err, out)
	}

	cs, stderr := stdioSession(t, bin, dir, append(args, "--ws-max-store-bytes", "20000")...)
	defer cs.Close()
	if res, _ := callTool(t, cs, "write_file", map[string]any{"path": "a.txt", "content": "A"}); res.IsError {
		t.Fatalf("write: %s\n%s", firstText(res), stderr)
	}
	// 40 kB of text that does not compress below 20 kB.
	big := make([]byte, 40_000)
	x := uint32(88172645)
	for i := range big {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		big[i] = 'a' + byte(x%26)
	}
	res, sc := callTool(t, cs, "write_file", map[string]any{"path": "big.txt", "content": string(big)})
	if !res.IsError || sc["code"] != "NOT_PERSISTED" || sc["cause"] != "QUOTA_EXCEEDED" || sc["remaining_store_bytes"] == nil {
		t.Fatalf("write past the ceiling answered %v", sc)
	}
	if !strings.Contains(firstText(res), "ceiling of 20000") {
		t.Errorf("the answer does not name the ceiling: %s", firstText(res))
	}
	if res, _ := callTool(t, cs, "read_text_file", map[string]any{"path": "big.txt"}); res.IsError || firstText(res) != string(big) {
		t.Errorf("big.txt is not in the workspace: %s", firstText(res))
	}
	if res, _ := callTool(t, cs, "delete_file", map[string]any{"path": "big.txt"}); res.IsError {
		t.Errorf("the next write after the tree fits again: %s", firstText(res))
	}
}
