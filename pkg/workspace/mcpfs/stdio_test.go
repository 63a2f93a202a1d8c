package mcpfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func mustID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAppendMessage: the stdio transport writes every message byte for
// byte as the go-sdk encodes it.
func TestAppendMessage(t *testing.T) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"a <b> & \"c\"\n\u2028"}],"structuredContent":{"content":"x"}}`)
	for _, c := range []struct {
		name string
		msg  jsonrpc.Message
	}{
		{"number id", &jsonrpc.Response{ID: mustID(t, float64(7)), Result: result}},
		{"id zero", &jsonrpc.Response{ID: mustID(t, float64(0)), Result: json.RawMessage(`{}`)}},
		{"negative id", &jsonrpc.Response{ID: mustID(t, float64(-12)), Result: json.RawMessage(`{}`)}},
		{"string id", &jsonrpc.Response{ID: mustID(t, `a<b>&"c"\é`), Result: result}},
		{"no id", &jsonrpc.Response{Result: json.RawMessage(`{}`)}},
		{"error", &jsonrpc.Response{ID: mustID(t, float64(3)), Error: &jsonrpc.Error{Code: -32602, Message: "bad <params>"}}},
		{"plain error", &jsonrpc.Response{ID: mustID(t, "x"), Error: errors.New("boom")}},
		{"empty result", &jsonrpc.Response{ID: mustID(t, float64(4))}},
		{"request", &jsonrpc.Request{ID: mustID(t, float64(9)), Method: "roots/list", Params: json.RawMessage(`{"a":1}`)}},
		{"notification", &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"level":"info"}`)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want, err := jsonrpc.EncodeMessage(c.msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendMessage([]byte("prefix"), c.msg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix"+string(want) {
				t.Errorf("got  %s\nwant prefix%s", got, want)
			}
		})
	}
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
