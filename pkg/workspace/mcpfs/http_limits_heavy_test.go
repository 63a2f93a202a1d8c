//go:build integration

package mcpfs

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHTTPHostileConnections: 3,000 requests without a token and 200
// connections announcing a body that never comes leave the server's
// descriptors at their baseline once the configured timeouts have
// passed, and an authenticated session keeps working meanwhile.
func TestHTTPHostileConnections(t *testing.T) {
	e := newEnv(t, nil)
	_, url := servedHTTP(t, e, HTTPOptions{ReadTimeout: time.Second, WriteTimeout: time.Second, ConnIdleTimeout: time.Second, MaxConns: 256})
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	cs, err := httpClient(t, url, identity(runtimeToken, "demo", "u-1", "s-1"))
	if err != nil {
		t.Fatal(err)
	}
	if res := callOn(t, cs, "write_file", map[string]any{"path": "a.txt", "content": "a"}); res.IsError {
		t.Fatal(text(res))
	}
	http.DefaultClient.CloseIdleConnections()
	baseline := openFDs(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		hostileLoad(t, addr, 3000, 64, false)
	}()
	hostileLoad(t, addr, 200, 200, true)
	<-done
	if res := callOn(t, cs, "read_text_file", map[string]any{"path": "a.txt"}); res.IsError || text(res) != "a" {
		t.Errorf("the authenticated session after the attack: %s", text(res))
	}
	eventually(t, "descriptors back at the baseline", func() bool { return openFDs(t) <= baseline+2 })
}

// TestHTTPInitializeFlood: 30,000 initializes from one identity leave at
// most MaxMCPSessions MCP sessions, in the handler's bookkeeping and in
// the go-sdk's.
func TestHTTPInitializeFlood(t *testing.T) {
	e := newEnv(t, nil)
	h, url := servedHTTP(t, e, HTTPOptions{})
	c := &http.Client{}
	for i := range 30_000 {
		if code, sid, body := initializeRaw(t, c, url, "s-1"); code != http.StatusOK || sid == "" {
			t.Fatalf("initialize %d: %d %s", i, code, body)
		}
		if n := h.MCPSessions(); n > DefaultMaxMCPSessions {
			t.Fatalf("after %d initializes: %d MCP sessions, want at most %d", i+1, n, DefaultMaxMCPSessions)
		}
	}
	eventually(t, "the go-sdk's sessions closed", func() bool { return liveSDKSessions(h) <= DefaultMaxMCPSessions })
	// What the server keeps is bounded by the caps, not by how many
	// sessions were ever initialized: the live heap after a collection
	// stays under floodHeapBound (docs/mcp.md, "Transport limits"; before
	// the caps, 30,000 sessions held about 480 MiB).
	c.CloseIdleConnections()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("live heap after 30,000 initializes: %.1f MiB", float64(ms.HeapAlloc)/(1<<20))
	if ms.HeapAlloc > floodHeapBound {
		t.Errorf("live heap after 30,000 initializes: %d bytes, want at most %d", ms.HeapAlloc, floodHeapBound)
	}
}

// floodHeapBound is the live heap TestHTTPInitializeFlood allows the
// whole test process after the flood.
const floodHeapBound = 64 << 20

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

// refusedConn sends one request without a token on a new connection and
// reports whether the server answered 401 and then closed the connection
// (the client keeps its end open until it reads the end).
func refusedConn(addr string, slowBody bool) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(hangGuard))
	auth := ""
	if slowBody {
		auth = "Authorization: Bearer " + runtimeToken + "\r\nAgentstore-App: demo\r\nAgentstore-User: u-1\r\nAgentstore-Session: s-slow\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
	}
	cl := 0
	if slowBody {
		cl = 100_000 // announced, never sent
	}
	if _, err := fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n%sContent-Length: %d\r\n\r\n", auth, cl); err != nil {
		return err
	}
	br := bufio.NewReader(conn)
	if !slowBody {
		status, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if !strings.Contains(status, "401") {
			return fmt.Errorf("status %q", status)
		}
		closing := false
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return err
			}
			if line == "\r\n" {
				break
			}
			closing = closing || strings.EqualFold(strings.TrimSpace(line), "Connection: close")
		}
		if !closing {
			return fmt.Errorf("the 401 does not say Connection: close")
		}
	}
	// The server closes the connection: the read ends.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return fmt.Errorf("the server did not close the connection: %w", err)
	}
	return nil
}

// hostileLoad runs n refused connections, at most par at a time.
func hostileLoad(t *testing.T, addr string, n, par int, slowBody bool) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, par)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := refusedConn(addr, slowBody); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("slowBody=%v: %v", slowBody, err)
	}
}
