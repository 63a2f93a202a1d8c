package mcpfs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func mustID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestDecodeLine: lines decode as the go-sdk decodes them; what is not a
// JSON-RPC message yields the error response to send, with the id when
// there is one.
func TestDecodeLine(t *testing.T) {
	for _, c := range []struct {
		name, line string
		want       jsonrpc.Message // nil: an error response
		code       int64
		id         any
		msg        string
	}{
		{name: "request", line: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
			want: &jsonrpc.Request{ID: mustID(t, float64(1)), Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`)}},
		{name: "string id, id last", line: " {\"method\":\"ping\",\"jsonrpc\":\"2.0\",\"id\":\"a-1\"}\r\n",
			want: &jsonrpc.Request{ID: mustID(t, "a-1"), Method: "ping"}},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			want: &jsonrpc.Request{Method: "notifications/initialized"}},
		{name: "empty method", line: `{"jsonrpc":"2.0","id":2,"method":""}`,
			want: &jsonrpc.Request{ID: mustID(t, float64(2)), Method: ""}},
		{name: "response", line: `{"jsonrpc":"2.0","id":5,"result":{"roots":[]}}`,
			want: &jsonrpc.Response{ID: mustID(t, float64(5)), Result: json.RawMessage(`{"roots":[]}`)}},
		{name: "error response", line: `{"jsonrpc":"2.0","id":6,"error":{"code":-1,"message":"no"}}`,
			want: &jsonrpc.Response{ID: mustID(t, float64(6)), Error: &jsonrpc.Error{Code: -1, Message: "no"}}},
		{name: "keys match exactly", line: `{"jsonrpc":"2.0","id":8,"Method":"tools/call"}`,
			want: &jsonrpc.Response{ID: mustID(t, float64(8))}},
		{name: "not JSON", line: `{"jsonrpc":"2.0","id":1,`, code: jsonrpc.CodeParseError, msg: "not JSON"},
		{name: "batch", line: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, code: jsonrpc.CodeInvalidRequest, msg: "batches are not supported"},
		{name: "not an object", line: `"ping"`, code: jsonrpc.CodeInvalidRequest, msg: "not string"},
		{name: "bad version", line: `{"jsonrpc":"1.0","id":3,"method":"ping"}`, code: jsonrpc.CodeInvalidRequest, id: int64(3), msg: `want "jsonrpc": "2.0"`},
		{name: "no version", line: `{"id":"q","method":"ping"}`, code: jsonrpc.CodeInvalidRequest, id: "q", msg: `want "jsonrpc": "2.0"`},
		{name: "bad id", line: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, code: jsonrpc.CodeInvalidRequest, msg: "neither a number nor a string"},
		{name: "bad method", line: `{"jsonrpc":"2.0","id":1,"method":7}`, code: jsonrpc.CodeInvalidRequest, msg: `member "method"`},
		{name: "neither", line: `{"jsonrpc":"2.0","result":{}}`, code: jsonrpc.CodeInvalidRequest, msg: "neither a request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, reply := decodeLine([]byte(c.line))
			if c.want != nil {
				if reply != nil {
					t.Fatalf("error %v", reply.Error)
				}
				gotJSON, _ := jsonrpc.EncodeMessage(got)
				wantJSON, _ := jsonrpc.EncodeMessage(c.want)
				if string(gotJSON) != string(wantJSON) {
					t.Errorf("got %s, want %s", gotJSON, wantJSON)
				}
				// The go-sdk decodes the line the same way.
				sdk, err := jsonrpc.DecodeMessage([]byte(c.line))
				if err != nil {
					t.Fatalf("go-sdk: %v", err)
				}
				if sdkJSON, _ := jsonrpc.EncodeMessage(sdk); string(sdkJSON) != string(gotJSON) {
					t.Errorf("go-sdk decodes %s", sdkJSON)
				}
				return
			}
			if got != nil || reply == nil {
				t.Fatalf("got %v, %v; want an error response", got, reply)
			}
			var we *jsonrpc.Error
			if !errors.As(reply.Error, &we) || we.Code != c.code || !strings.Contains(we.Message, c.msg) {
				t.Errorf("error %v, want code %d and %q", reply.Error, c.code, c.msg)
			}
			if reply.ID.Raw() != c.id {
				t.Errorf("id %v, want %v", reply.ID.Raw(), c.id)
			}
		})
	}
}

// TestStdioMalformed: a line that is not a JSON-RPC message is answered
// with an error and the session goes on; nothing is written.
func TestStdioMalformed(t *testing.T) {
	e := newEnv(t, nil)
	e.wsFile("keep.txt", "kept")
	before := snapshotTree(t, e.wsDir())
	c := startStdio(t, e, context.Background())
	c.initialize()
	c.send("\n   ") // blank lines are skipped
	for _, l := range []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x","content":"y"}`, "-32700"},
		{`[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x","content":"y"}}}]`, "batches are not supported"},
		{`{"jsonrpc":"2.1","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x","content":"y"}}}`, `"id":4`},
	} {
		m := c.exchange(l.line)
		b, _ := json.Marshal(m)
		if m["error"] == nil || !strings.Contains(string(b), l.want) {
			t.Errorf("%.40s...: %s, want an error with %s", l.line, b, l.want)
		}
	}
	m := c.exchange(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"keep.txt"}}}`)
	if !strings.Contains(fmt.Sprint(m["result"]), "kept") {
		t.Fatalf("a call after the malformed lines: %v", m)
	}
	if err := c.close(); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if got := snapshotTree(t, e.wsDir()); !sameTree(got, before) {
		t.Errorf("workspace changed: %v", got)
	}
}

// TestStdioCancel: cancelling the context ends a connected session while
// its input stays open (a read of stdin cannot be interrupted).
func TestStdioCancel(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	c := startStdio(t, e, ctx)
	c.initialize()
	cancel()
	if err := c.wait(); err != nil {
		t.Fatalf("ServeStdio after cancel: %v", err)
	}
}

// sdkMarshal marshals a result as the go-sdk does for a response.
func sdkMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// TestStdioResults: through ServeStdio, results carry the same content as
// through the go-sdk's in-memory transport.
func TestStdioResults(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 300 {
		e.wsFile(fmt.Sprintf("dir/<f&%03d> \u2028 ünï.txt", i), "x")
	}
	e.wsFile("page.html", strings.Repeat("<p class=\"x\">a &amp; b</p>\n", 200))
	c := startStdio(t, e, context.Background())
	c.initialize()
	for i, call := range []struct {
		tool string
		args map[string]any
	}{
		{"list_directory", map[string]any{"path": "dir"}},
		{"read_text_file", map[string]any{"path": "page.html"}},
		{"read_text_file", map[string]any{"path": "page.html", "head": 150}},
		{"read_multiple_files", map[string]any{"paths": []string{"page.html", "missing"}}},
		{"directory_tree", map[string]any{"path": "/workspace"}},
		{"search_files", map[string]any{"path": "/workspace", "pattern": "**/*.txt"}},
		{"read_text_file", map[string]any{"path": "missing"}},
	} {
		params, _ := json.Marshal(map[string]any{"name": call.tool, "arguments": call.args})
		raw := c.roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, params))
		var viaStdio struct{ Result map[string]any }
		if err := json.Unmarshal(raw, &viaStdio); err != nil {
			t.Fatalf("%s: %v", call.tool, err)
		}
		var viaSDK map[string]any
		if err := json.Unmarshal(sdkMarshal(t, e.call(call.tool, call.args)), &viaSDK); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"_meta", "resultType"} { // the go-sdk client adds them
			delete(viaSDK, k)
		}
		if !reflect.DeepEqual(viaStdio.Result, viaSDK) {
			t.Errorf("%s:\nstdio %.300v\nsdk   %.300v", call.tool, viaStdio.Result, viaSDK)
		}
	}
}

// blockTool adds to e's sessions a tool "block" that signals started,
// waits until its call's context is done, sends the context's error on
// stopped, and answers "stopped".
func blockTool(e *env) (started chan struct{}, stopped chan error) {
	started, stopped = make(chan struct{}, 8), make(chan error, 8)
	e.srv.addTools = func(srv *mcp.Server) {
		srv.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			stopped <- ctx.Err()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stopped"}}}, nil
		})
	}
	return started, stopped
}

// hangGuard is how long a test waits for what must happen before it
// fails instead of hanging; never a measure of speed.
const hangGuard = 30 * time.Second

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("%s: nothing after %s", what, hangGuard)
		panic("unreachable")
	}
}

// TestStdioCancelled: a client's notifications/cancelled cancels the
// context of its call, served by the go-sdk, and the session goes on.
func TestStdioCancelled(t *testing.T) {
	e := newEnv(t, nil)
	e.wsFile("keep.txt", "kept")
	started, stopped := blockTool(e)
	c := startStdio(t, e, context.Background())
	c.initialize()
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	receive(t, started, "the call")
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	if err := receive(t, stopped, "the cancelled call"); !errors.Is(err, context.Canceled) {
		t.Errorf("the call's context ended with %v, want context.Canceled", err)
	}
	// The session goes on: a later call is answered (whatever the
	// go-sdk wrote for call 7 comes first, if anything).
	c.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"keep.txt"}}}`)
	for {
		line := c.recv()
		if strings.Contains(string(line), `"id":8`) {
			if !strings.Contains(string(line), "kept") {
				t.Errorf("call 8: %s", line)
			}
			break
		}
	}
	if err := c.close(); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
}

// TestStdioPipedInput: a client that writes its requests and ends its
// input at once (printf '...' | agentstore mcp) gets an answer to every
// call, then ServeStdio returns.
func TestStdioPipedInput(t *testing.T) {
	e := newEnv(t, nil)
	const calls = 40
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := 1; i <= calls; i++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"f%02d.txt","content":"%d"}}}`+"\n", i, i, i)
	}
	var out bytes.Buffer
	if err := e.srv.ServeStdio(context.Background(), e.scope, strings.NewReader(in.String()), &out); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	answered := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID     float64
			Result *mcp.CallToolResult
			Error  any
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if m.Error != nil || m.Result == nil || m.Result.IsError {
			t.Errorf("call %v: %s", m.ID, line)
		}
		answered[m.ID] = true
	}
	for i := range calls + 1 {
		if !answered[float64(i)] {
			t.Errorf("request %d got no answer", i)
		}
	}
	if got := len(snapshotTree(t, e.wsDir())); got != calls {
		t.Errorf("%d files written, want %d", got, calls)
	}
}

// TestStdioDrainBounded: a call still running at the end of the input is
// waited for at most the drain time, or until ctx is done; then it is
// cancelled and ServeStdio returns.
func TestStdioDrainBounded(t *testing.T) {
	for _, byCtx := range []bool{false, true} {
		t.Run(fmt.Sprintf("ctx=%v", byCtx), func(t *testing.T) {
			e := newEnv(t, nil)
			started, stopped := blockTool(e)
			e.srv.stdioDrain = time.Millisecond
			if byCtx {
				e.srv.stdioDrain = time.Hour
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := startStdio(t, e, ctx)
			c.initialize()
			c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
			receive(t, started, "the call")
			c.in.Close()
			if byCtx {
				cancel()
			}
			receive(t, stopped, "the call running at the end of the input")
			receive(t, c.done, "ServeStdio")
			if c.err != nil {
				t.Errorf("ServeStdio: %v", c.err)
			}
		})
	}
}
