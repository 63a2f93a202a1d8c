package mcpfs

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newBoundedEnv serves streamable HTTP under the end-of-turn policy with
// the given bounds and a hand-moved clock.
func newBoundedEnv(t *testing.T, maxSessions int) (*env, *HTTPHandler, *httptest.Server, *fakeClock) {
	t.Helper()
	e := newEnv(t, func(o *envOpts) { o.ws.Policy = workspace.SnapshotAtEndOfTurn })
	tokens, err := ParseTokens(strings.NewReader(runtimeToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	h := e.srv.HTTPHandler(HTTPOptions{Tokens: tokens, MaxSessions: maxSessions, IdleTimeout: time.Hour, Now: clock.Now})
	h.released = sync.NewCond(&h.mu)
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return e, h, hs, clock
}

// settle waits until no call is in progress: a client has its answer a
// moment before the handler counts the call as ended.
func settle(h *HTTPHandler) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		busy := false
		for _, id := range h.ids {
			busy = busy || id.inflight > 0
		}
		if !busy {
			return
		}
		h.released.Wait()
	}
}

func sessionOf(name string) artifacts.Scope { return artifacts.SessionScope("demo", "u-1", name) }

// connectAs connects a client for the session name and writes name.txt.
func connectAs(t *testing.T, hs *httptest.Server, name string) *mcp.ClientSession {
	t.Helper()
	cs, err := httpClient(t, hs.URL, identity(runtimeToken, "demo", "u-1", name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cs
}

func writeAs(t *testing.T, cs *mcp.ClientSession, name string) {
	t.Helper()
	if res := callOn(t, cs, "write_file", map[string]any{"path": "/workspace/" + name + ".txt", "content": name + "\n"}); res.IsError {
		t.Fatalf("%s: %s", name, text(res))
	}
}

// snapshotted reports whether the session's workspace.zip is in the store.
func snapshotted(t *testing.T, e *env, name string) bool {
	t.Helper()
	_, err := e.store.Stat(context.Background(), sessionOf(name), workspace.SnapshotName, artifacts.Latest)
	if err != nil && !artifacts.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// A new session beyond MaxSessions evicts the least recently used one: its
// turn ends first (its snapshot is published), then its MCP sessions are
// closed; it comes back with its files when its client connects again.
func TestHTTPEvictsLeastRecentlyUsed(t *testing.T) {
	e, h, hs, _ := newBoundedEnv(t, 2)
	a, b := connectAs(t, hs, "a"), connectAs(t, hs, "b")
	writeAs(t, a, "a")
	writeAs(t, b, "b")
	writeAs(t, a, "a") // a is now the most recently used
	settle(h)
	if snapshotted(t, e, "a") || snapshotted(t, e, "b") {
		t.Fatal("a snapshot before any turn ended")
	}
	connectAs(t, hs, "c")
	if n := h.Len(); n != 2 {
		t.Errorf("%d sessions served, want 2", n)
	}
	if !snapshotted(t, e, "b") || snapshotted(t, e, "a") {
		t.Errorf("b (least recently used) should have been evicted and snapshotted; a kept: a %t b %t", snapshotted(t, e, "a"), snapshotted(t, e, "b"))
	}
	if _, err := b.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_allowed_directories", Arguments: map[string]any{}}); err == nil {
		t.Error("b's evicted MCP session still answers")
	}
	// b connects again: its file is there; a is evicted now.
	settle(h)
	b2 := connectAs(t, hs, "b")
	if res := callOn(t, b2, "read_text_file", map[string]any{"path": "/workspace/b.txt"}); res.IsError || text(res) != "b\n" {
		t.Errorf("b after eviction: %s", text(res))
	}
	if !snapshotted(t, e, "a") {
		t.Error("a was not snapshotted when evicted")
	}
	if _, err := os.Stat(filepath.Join(e.m.Scratch(), workspace.DirName("demo", "u-1", "a"), "a.txt")); err != nil {
		t.Errorf("a's files: %v", err)
	}
}

// A session idle for IdleTimeout is evicted by ExpireIdle, or by the next
// request of any session.
func TestHTTPIdleExpiry(t *testing.T) {
	e, h, hs, clock := newBoundedEnv(t, 10)
	writeAs(t, connectAs(t, hs, "a"), "a")
	settle(h)
	clock.Add(59 * time.Minute)
	if n := h.ExpireIdle(context.Background()); n != 0 || h.Len() != 1 {
		t.Fatalf("expired %d of %d before the timeout", n, h.Len())
	}
	clock.Add(time.Minute)
	if n := h.ExpireIdle(context.Background()); n != 1 || h.Len() != 0 {
		t.Fatalf("expired %d, %d left", n, h.Len())
	}
	if !snapshotted(t, e, "a") {
		t.Error("a was not snapshotted when it expired")
	}
	writeAs(t, connectAs(t, hs, "b"), "b")
	settle(h)
	clock.Add(2 * time.Hour)
	connectAs(t, hs, "c")
	if h.Len() != 1 || !snapshotted(t, e, "b") {
		t.Errorf("b did not expire at c's request: %d served, snapshotted %t", h.Len(), snapshotted(t, e, "b"))
	}
}

// When every served session has a call in progress, a new session gets
// 503 and nothing is evicted; once a call ends, it is served.
func TestHTTPAllBusy(t *testing.T) {
	_, h, hs, _ := newBoundedEnv(t, 1)
	busy, err := h.acquire(context.Background(), sessionOf("busy"), true)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header = identity(runtimeToken, "demo", "u-1", "new")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct{ Code string }
	if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil || e.Code != "UNAVAILABLE" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("status %d, body %s", resp.StatusCode, body)
	}
	if h.Len() != 1 {
		t.Errorf("%d served", h.Len())
	}
	h.release(busy)
	connectAs(t, hs, "new")
	if h.Len() != 1 {
		t.Errorf("%d served after the busy one was evicted", h.Len())
	}
}
