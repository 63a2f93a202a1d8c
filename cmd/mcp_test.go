package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// agentstoreBin returns a path that runs this test binary as agentstore
// (testscript.Main dispatches on the program's name).
func agentstoreBin(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "agentstore")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// mcpEnv is the environment of a spawned server: no AGENTSTORE_* settings
// from the caller, and no race-detector sleep at exit.
func mcpEnv(home string) []string {
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH"), "GORACE=atexit_sleep_ms=0"}
	for _, k := range []string{"GOCOVERDIR", "TMPDIR"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// stdioSession starts agentstore mcp with args and connects the go-sdk
// client to it over stdio.
func stdioSession(t *testing.T, bin, home string, args ...string) (*mcp.ClientSession, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = mcpEnv(home)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	return cs, stderr
}

func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var sc map[string]any
	_ = json.Unmarshal(b, &sc)
	return res, sc
}

func firstText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// TestMCPWorkedExample runs the design's worked example through the
// binary with the default snapshot format (workedExample);
// TestMCPWorkedExampleFormats (integration tier) runs it in each format.
func TestMCPWorkedExample(t *testing.T) {
	workedExample(t, "")
}

// workedExample runs the design's worked example through the binary, with
// --snapshot-format format unless empty: turn one writes by_region.csv
// and is snapshotted; the workspace directory is deleted (pod eviction); a
// new server process for the same session hydrates it on first touch; a
// loop of 900 KB writes is refused at the 12th with QUOTA_EXCEEDED and
// 100,000 bytes remaining. With a format, turn one's snapshot must be of
// that format only.
func workedExample(t *testing.T, format string) {
	bin := agentstoreBin(t)
	dir := t.TempDir()
	store, scratch := filepath.Join(dir, "store"), filepath.Join(dir, "scratch")
	for _, d := range []string{store, scratch} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--store", store, "--scratch", scratch, "--app", "demo", "--user", "user-42", "--session", "session-7", "--ws-turn-bytes", "10000000"}
	if format != "" {
		args = append(args, "--snapshot-format", format)
	}
	const csv = "region,revenue\nnorth,120\nsouth,95\n"

	cs, stderr := stdioSession(t, bin, dir, args...)
	if res, _ := callTool(t, cs, "write_file", map[string]any{"path": "/workspace/by_region.csv", "content": csv}); res.IsError {
		t.Fatalf("turn one: %s", firstText(res))
	}
	cs.Close()
	if !strings.Contains(stderr.String(), "tool=write_file") || !strings.Contains(stderr.String(), "code=OK") {
		t.Errorf("no audit record on stderr: %s", stderr)
	}
	// The snapshot is in the store: the pod can go.
	wsDir := filepath.Join(scratch, workspace.DirName("demo", "user-42", "session-7"))
	if _, err := os.Stat(filepath.Join(wsDir, "by_region.csv")); err != nil {
		t.Fatal(err)
	}
	if format != "" {
		checkSnapshotFormat(t, store, artifacts.SessionScope("demo", "user-42", "session-7"), workspace.SnapshotFormat(format))
	}
	if err := os.RemoveAll(wsDir); err != nil {
		t.Fatal(err)
	}

	cs, stderr = stdioSession(t, bin, dir, args...)
	defer cs.Close()
	res, _ := callTool(t, cs, "read_text_file", map[string]any{"path": "/workspace/by_region.csv"})
	if res.IsError || firstText(res) != csv {
		t.Fatalf("after eviction: %q (error %v)\n%s", firstText(res), res.IsError, stderr)
	}
	chunk := strings.Repeat("x", 900_000)
	for i := 1; i <= 12; i++ {
		res, sc := callTool(t, cs, "write_file", map[string]any{"path": fmt.Sprintf("/workspace/part-%02d.bin", i), "content": chunk})
		if i < 12 {
			if res.IsError {
				t.Fatalf("write %d refused: %s", i, firstText(res))
			}
			continue
		}
		if !res.IsError || sc["code"] != "QUOTA_EXCEEDED" || sc["remaining_bytes"] != float64(100_000) {
			t.Fatalf("write 12: error %v, %v", res.IsError, sc)
		}
		if !strings.Contains(firstText(res), "QUOTA_EXCEEDED") || !strings.Contains(firstText(res), "remaining_bytes: 100000") {
			t.Errorf("write 12 text %q", firstText(res))
		}
	}
	if _, err := os.Stat(filepath.Join(wsDir, "part-12.bin")); !os.IsNotExist(err) {
		t.Errorf("the refused write left a file: %v", err)
	}
}

// checkSnapshotFormat fails t unless the erlang-fs store at root holds
// snapshots of scope in format only: a workspace.zip, or a manifest.
func checkSnapshotFormat(t *testing.T, root string, scope artifacts.Scope, format workspace.SnapshotFormat) {
	t.Helper()
	d, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(d)
	_, zipErr := st.Stat(context.Background(), scope, workspace.SnapshotName, artifacts.Latest)
	_, manErr := st.Stat(context.Background(), scope, checkpoint.ManifestName, artifacts.Latest)
	want := map[workspace.SnapshotFormat][2]bool{workspace.FormatZip: {true, false}, workspace.FormatIncremental: {false, true}}[format]
	if got := [2]bool{zipErr == nil, manErr == nil}; got != want {
		t.Fatalf("%s snapshots: workspace.zip %v, manifest %v", format, zipErr, manErr)
	}
}

// TestMCPOversizedStdio: a message over --max-request-bytes gets a clean
// error and the server goes on (the reference server crashed on one).
func TestMCPOversizedStdio(t *testing.T) {
	bin := agentstoreBin(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "store"), 0o700); err != nil {
		t.Fatal(err)
	}
	cs, stderr := stdioSession(t, bin, dir, "--store", filepath.Join(dir, "store"), "--scratch", dir, "--app", "a", "--user", "u", "--session", "s", "--max-request-bytes", "1MiB")
	defer cs.Close()
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "big", "content": strings.Repeat("x", 2<<20)}})
	if err == nil || !strings.Contains(err.Error(), "request too large") {
		t.Fatalf("2 MiB message: %v\n%s", err, stderr)
	}
	if res, _ := callTool(t, cs, "write_file", map[string]any{"path": "small", "content": "ok"}); res.IsError {
		t.Fatalf("after the oversized message: %s", firstText(res))
	}
}

func interopTree(t *testing.T) (store, scratch, ref string) {
	dir := t.TempDir()
	store, scratch, ref = filepath.Join(dir, "store"), filepath.Join(dir, "scratch"), filepath.Join(dir, "ref")
	for _, d := range []string{store, scratch, ref} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ref, "guide.md"), []byte("# Guide\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ref, "logo.png"), []byte("\x89PNG\r\n\x1a\nfake"), 0o600); err != nil {
		t.Fatal(err)
	}
	return store, scratch, ref
}

// startHTTP starts agentstore mcp --http on a free loopback port and
// returns its URL once it answers.
func startHTTP(t *testing.T, bin string, args ...string) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"mcp", "--http", addr}, args...)...)
	cmd.Env = mcpEnv(t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The server logs its URL once it listens.
	ready := make(chan string, 1)
	var logged strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`url=(\S+)`)
		sent := false
		for sc.Scan() {
			logged.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				ready <- m[1]
				sent = true
			}
		}
		if !sent {
			close(ready)
		}
	}()
	url, ok := <-ready
	if !ok {
		cmd.Wait()
		t.Fatalf("server did not start")
	}
	return url, func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
}

// withHeaders adds headers to every request of the go-sdk client.
type withHeaders map[string]string

func (h withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPHTTPGoClient drives the binary over streamable HTTP with the
// go-sdk client: a bound token serves its own session only, and shutdown
// (SIGINT) publishes the end-of-turn snapshot.
func TestMCPHTTPGoClient(t *testing.T) {
	bin := agentstoreBin(t)
	store, scratch, _ := interopTree(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("bound-token-for-session-7 app=demo user=u-42 session=s-7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url, stop := startHTTP(t, bin, "--store", store, "--scratch", scratch, "--app", "demo", "--token-file", tokens, "--snapshot", "end-of-turn")
	connect := func(session string) (*mcp.ClientSession, error) {
		h := withHeaders{"Authorization": "Bearer bound-token-for-session-7", "Agentstore-User": "u-42", "Agentstore-Session": session}
		tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: h}}
		return mcp.NewClient(&mcp.Implementation{Name: "go-http", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	}
	if cs, err := connect("s-8"); err == nil {
		cs.Close()
		stop()
		t.Fatal("a token bound to s-7 opened s-8")
	}
	cs, err := connect("s-7")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	res, _ := callTool(t, cs, "write_file", map[string]any{"path": "report.md", "content": "# done\n"})
	cs.Close()
	if res.IsError {
		stop()
		t.Fatal(firstText(res))
	}
	snap := filepath.Join(scratch, workspace.DirName("demo", "u-42", "s-7"))
	if _, err := os.Stat(filepath.Join(snap, "report.md")); err != nil {
		stop()
		t.Fatal(err)
	}
	stop() // SIGINT: the server ends the turn of every session it served
	if err := os.RemoveAll(snap); err != nil {
		t.Fatal(err)
	}
	// A new process hydrates the snapshot taken at shutdown.
	cs2, stderr := stdioSession(t, bin, t.TempDir(), "--store", store, "--scratch", scratch, "--app", "demo", "--user", "u-42", "--session", "s-7")
	defer cs2.Close()
	if res, _ := callTool(t, cs2, "read_text_file", map[string]any{"path": "report.md"}); res.IsError || firstText(res) != "# done\n" {
		t.Fatalf("after shutdown and eviction: %q\n%s", firstText(res), stderr)
	}
}
