package mcpfs

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// servedHTTP serves e's server with h.Serve on a loopback port until the
// test ends; it returns the handler and the endpoint's URL.
func servedHTTP(t *testing.T, e *env, opts HTTPOptions) (*HTTPHandler, string) {
	t.Helper()
	tokens, err := ParseTokens(strings.NewReader(runtimeToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Tokens = tokens
	h := e.srv.HTTPHandler(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h, "http://" + ln.Addr().String() + "/mcp"
}

// initializeRaw posts an initialize for the session name and returns
// the response's status, Mcp-Session-Id and body.
func initializeRaw(t *testing.T, c *http.Client, url, name string) (int, string, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = identity(runtimeToken, "demo", "u-1", name)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// liveSDKSessions counts the go-sdk's live MCP sessions of every served
// identity.
func liveSDKSessions(h *HTTPHandler) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, id := range h.ids {
		for range id.srv.Sessions() {
			n++
		}
	}
	return n
}

// eventually waits for cond, failing after hangGuard.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, hangGuard)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHTTPMCPSessionCap: an identity that initializes again and again
// holds at most MaxMCPSessions MCP sessions, all identities together at
// most MaxMCPSessionsTotal; the oldest idle one is closed (its client gets
// 404) and the newest works.
func TestHTTPMCPSessionCap(t *testing.T) {
	e := newEnv(t, nil)
	h, url := servedHTTP(t, e, HTTPOptions{MaxMCPSessions: 3, MaxMCPSessionsTotal: 5})
	c := &http.Client{}
	var ids []string
	for i := range 20 {
		code, sid, body := initializeRaw(t, c, url, "s-1")
		if code != http.StatusOK || sid == "" {
			t.Fatalf("initialize %d: %d %q %s", i, code, sid, body)
		}
		ids = append(ids, sid)
		if n := h.MCPSessions(); n > 3 {
			t.Fatalf("after %d initializes the handler holds %d MCP sessions, want at most 3", i+1, n)
		}
	}
	eventually(t, "the go-sdk's sessions closed", func() bool { return liveSDKSessions(h) <= 3 })
	// The newest works, the oldest is gone.
	for _, c := range []struct {
		sid  string
		want int
	}{{ids[len(ids)-1], http.StatusOK}, {ids[0], http.StatusNotFound}} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
		req.Header = identity(runtimeToken, "demo", "u-1", "s-1")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("ping on %s: %d, want %d", c.sid, resp.StatusCode, c.want)
		}
	}
	// Other identities: the total bound holds.
	for i := range 10 {
		if code, _, body := initializeRaw(t, c, url, fmt.Sprintf("other-%d", i)); code != http.StatusOK {
			t.Fatalf("initialize other-%d: %d %s", i, code, body)
		}
		if n := h.MCPSessions(); n > 5 {
			t.Fatalf("%d MCP sessions in all, want at most 5", n)
		}
	}
}

// TestHTTPMCPSessionCapBusy: when every MCP session of the identity has a
// request in progress, a new initialize is refused with an error that
// names the bound, and nothing is closed.
func TestHTTPMCPSessionCapBusy(t *testing.T) {
	e := newEnv(t, nil)
	started, stopped := blockTool(e)
	h, url := servedHTTP(t, e, HTTPOptions{MaxMCPSessions: 1})
	cs, err := httpClient(t, url, identity(runtimeToken, "demo", "u-1", "s-1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	callDone := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		callDone <- err
	}()
	receive(t, started, "the blocking call")
	code, _, body := initializeRaw(t, &http.Client{}, url, "s-1")
	if code != http.StatusOK || !strings.Contains(body, "too many MCP sessions") || !strings.Contains(body, "--max-mcp-sessions") {
		t.Errorf("initialize beyond the bound: %d %s", code, body)
	}
	if n := h.MCPSessions(); n != 1 {
		t.Errorf("%d MCP sessions, want the busy one", n)
	}
	cancel()
	receive(t, stopped, "the cancelled call")
	receive(t, callDone, "the call's return")
}

// TestHTTPLongCallOutlivesTimeouts: a call that lasts longer than the
// read and write timeouts is answered: they bound reading the request
// and each write, not the response's life.
func TestHTTPLongCallOutlivesTimeouts(t *testing.T) {
	e := newEnv(t, nil)
	release := make(chan struct{})
	e.srv.addTools = func(srv *mcp.Server) {
		srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	}
	const timeout = 100 * time.Millisecond
	_, url := servedHTTP(t, e, HTTPOptions{ReadTimeout: timeout, WriteTimeout: timeout, ConnIdleTimeout: timeout})
	cs, err := httpClient(t, url, identity(runtimeToken, "demo", "u-1", "s-1"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(10 * timeout) // not a measure: only makes the call outlast the timeouts
		close(release)
	}()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	if err != nil || res.IsError || text(res) != "done" {
		t.Fatalf("long call: %v %v", res, err)
	}
	if res := callOn(t, cs, "list_allowed_directories", map[string]any{}); res.IsError {
		t.Errorf("a call after it: %s", text(res))
	}
}
