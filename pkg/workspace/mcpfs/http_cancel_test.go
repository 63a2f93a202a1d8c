package mcpfs

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPDisconnectCancels: a client that goes away while its call runs
// (the request's connection closed, no notifications/cancelled) ends the
// call's context, so the work it started stops instead of running on to
// the call deadline.
func TestHTTPDisconnectCancels(t *testing.T) {
	e := newEnv(t, nil)
	// A tool that blocks until its context ends, wrapped by handler as
	// every tool of the server is.
	started, stopped := make(chan struct{}, 1), make(chan error, 1)
	e.srv.addTools = func(srv *mcp.Server) {
		srv.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}}, handler(func(ctx context.Context, _ json.RawMessage) *mcp.CallToolResult {
			started <- struct{}{}
			<-ctx.Done()
			stopped <- ctx.Err()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stopped"}}}
		}))
	}
	_, url := servedHTTP(t, e, HTTPOptions{})
	c := &http.Client{}
	code, sid, body := initializeRaw(t, c, url, "s-1")
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", code, body)
	}
	post := func(ctx context.Context, msg string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(msg))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = identity(runtimeToken, "demo", "u-1", "s-1")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		return c.Do(req)
	}
	resp, err := post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		resp, err := post(ctx, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	receive(t, started, "the call")
	cancel() // the client disconnects
	if err := receive(t, stopped, "the call of a client that went away"); !errors.Is(err, context.Canceled) {
		t.Errorf("the call's context ended with %v, want context.Canceled", err)
	}
	receive(t, done, "the client's request")
}
