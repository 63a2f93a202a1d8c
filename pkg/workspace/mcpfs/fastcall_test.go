package mcpfs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fastCallLines are tools/call requests, one per line: every tool, with
// results and error results, and the shapes of params the fast path
// leaves to the SDK. The sequence leaves the workspace as it found it, so
// that it can run twice. "taken" is whether the fast path answers it.
var fastCallLines = []struct {
	line  string
	taken bool
}{
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/workspace/a.txt"}}}`, true},
	{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"path":"a.txt","head":1},"name":"read_text_file"}}`, true},
	{`{"jsonrpc":"2.0","id":"s-3","method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"a.txt","tail":1}}}`, true},
	{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"a.txt","offset":1,"limit":1}}}`, true},
	{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/workspace/missing"}}}`, true},
	{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_media_file","arguments":{"path":"/workspace/img.png"}}}`, true},
	{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_multiple_files","arguments":{"paths":["a.txt","/reference/guide.md","nope"]}}}`, true},
	{`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/workspace/tmp/w.txt","content":"<w> & \u2028 \"q\"\n"}}}`, true},
	{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"append_file","arguments":{"path":"/workspace/tmp/w.txt","content":"more\n"}}}`, true},
	{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"edit_file","arguments":{"path":"tmp/w.txt","edits":[{"oldText":"more","newText":"less"}],"dryRun":true}}}`, true},
	{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"edit_file","arguments":{"path":"tmp/w.txt","edits":[{"oldText":"more","newText":"less"}]}}}`, true},
	{`{"jsonrpc":"2.0","id":111,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"tmp/w.txt"}}}`, true},
	{`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"copy_file","arguments":{"source":"tmp/w.txt","destination":"tmp/c.txt"}}}`, true},
	{`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"move_file","arguments":{"source":"tmp/c.txt","destination":"tmp/m.txt"}}}`, true},
	{`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"create_directory","arguments":{"path":"/workspace/tmp/d/e"}}}`, true},
	{`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"list_directory","arguments":{"path":"/workspace/tmp"}}}`, true},
	{`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"list_directory_with_sizes","arguments":{"path":"/workspace/tmp","sortBy":"size"}}}`, true},
	{`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"directory_tree","arguments":{"path":"/workspace","excludePatterns":["img*"]}}}`, true},
	{`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"search_files","arguments":{"path":"/workspace","pattern":"**/*.txt"}}}`, true},
	{`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"grep","arguments":{"pattern":"l.ss","path":"/workspace"}}}`, true},
	{`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"get_file_info","arguments":{"path":"/reference/guide.md"}}}`, true},
	{`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"list_allowed_directories","arguments":{}}}`, true},
	{`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"delete_file","arguments":{"path":"tmp/m.txt"}}}`, true},
	{`{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"delete_file","arguments":{"path":"tmp/w.txt"}}}`, true},
	{`{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/reference/guide.md","content":"no"}}}`, true},
	{`{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"../outside/x","content":"no"}}}`, true},
	{`{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":7}}}`, true},
	{`{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":"read_text_file","arguments":"a.txt"}}`, true},
	{`{"jsonrpc":"2.0","id":28,"method":"tools/call","params":{"name":"read_text_file","arguments":null}}`, true},
	{`{"jsonrpc":"2.0","id":29,"method":"tools/call","params":{"name":"list_allowed_directories"}}`, true},
	{`{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"a.txt"},"_meta":{"progressToken":30}}}`, false},
	{`{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`, false},
	{`{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":5,"arguments":{}}}`, false},
	{`{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"Name":"read_text_file","arguments":{"path":"a.txt"}}}`, false},
	{`{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"arguments":{"path":"a.txt"}}}`, false},
	{`{"jsonrpc":"2.0","id":35,"method":"tools/call","params":["read_text_file"]}`, false},
	{`{"jsonrpc":"2.0","id":36,"method":"tools/call","params":null}`, false},
	{`{"jsonrpc":"2.0","id":37,"method":"tools/call"}`, false},
	{`{"jsonrpc":"2.0","id":38,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"a.txt","x":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}}}`, false},
	{`{"jsonrpc":"2.0","id":39,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"a.txt","x":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}}`, true},
	{`{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"a.txt","x":"` + strings.Repeat("[", 1200) + `"}}}`, true},
	{`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"a.txt"},"task":{"ttl":1}}}`, false},
	{`{"jsonrpc":"2.0","id":42,"method":"tools/list"}`, false},
	{`{"jsonrpc":"2.0","id":43,"method":"ping"}`, false},
}

// runFastCallLines serves the env's session over ServeStdio, sends
// initialize with protocol version, then each of lines, and returns what
// came back, with the env's directory as $DIR.
func runFastCallLines(t *testing.T, e *env, version string, initialized bool) []string {
	t.Helper()
	c := startStdio(t, e, context.Background())
	if m := c.exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`); m["error"] != nil {
		t.Fatalf("initialize: %v", m)
	}
	if initialized {
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		// The SDK has handled the notification by the time it answers a
		// request read after it: from here on the fast path is ready.
		c.roundTrip(`{"jsonrpc":"2.0","id":"ready","method":"ping"}`)
	}
	var got []string
	for _, l := range fastCallLines {
		got = append(got, string(bytes.ReplaceAll(c.roundTrip(l.line), []byte(e.dir), []byte("$DIR"))))
	}
	if err := c.close(); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	return got
}

// TestFastCallsSame: a client reads the same bytes whether the stdio
// transport answers a call itself or leaves it to the go-sdk, for every
// tool, results and error results, ids of both kinds, and the params the
// fast path leaves to the SDK; and a session that asked for a protocol
// version from fastProtocolBefore on, or a call before the client's
// notifications/initialized, is left to the SDK.
func TestFastCallsSame(t *testing.T) {
	e := newEnv(t, nil)
	e.wsFile("a.txt", "one\ntwo\n")
	e.wsFile("img.png", "\x89PNG\r\n\x1a\nxxxx")
	for _, c := range []struct {
		name        string
		version     string
		initialized bool
		fast        bool
	}{
		{"2025-11-25", "2025-11-25", true, true},
		{"2025-06-18", "2025-06-18", true, true},
		{"2026-07-28: resultType", fastProtocolBefore, true, false},
		{"not initialized", "2025-11-25", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.srv.sdkOnly = true
			want := runFastCallLines(t, e, c.version, c.initialized)
			e.srv.sdkOnly = false
			var f *fastCalls
			e.srv.fastHook = func(fc *fastCalls) { f = fc }
			defer func() { e.srv.fastHook = nil }()
			got := runFastCallLines(t, e, c.version, c.initialized)
			for i := range fastCallLines {
				if got[i] != want[i] {
					t.Errorf("%.100s:\nfast %.400s\nsdk  %.400s", fastCallLines[i].line, got[i], want[i])
				}
			}
			if testing.Verbose() {
				for i := range got {
					t.Logf("%.300s", got[i])
				}
			}
			var wantTaken int64
			for _, l := range fastCallLines {
				if l.taken && c.fast {
					wantTaken++
				}
			}
			if n := f.taken.Load(); n != wantTaken {
				t.Errorf("the fast path took %d calls, want %d", n, wantTaken)
			}
		})
	}
	if !strings.Contains(strings.Join(runFastCallLines(t, e, fastProtocolBefore, true), "\n"), `"resultType":"complete"`) {
		t.Errorf("a session at %s: no resultType in its results: the SDK's rule changed, and fastProtocolBefore with it", fastProtocolBefore)
	}
}

// TestFastCallsCancel: notifications/cancelled cancels the context of a
// call the fast path runs; an id already in flight, and any call once the
// connection closes, is left to the SDK; close waits for the calls
// running.
func TestFastCallsCancel(t *testing.T) {
	f := newFastCalls()
	started := make(chan struct{})
	f.tools["block"] = func(ctx context.Context, _ json.RawMessage) *mcp.CallToolResult {
		close(started)
		<-ctx.Done()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stopped: " + ctx.Err().Error()}}}
	}
	f.tools["quick"] = func(context.Context, json.RawMessage) *mcp.CallToolResult {
		return &mcp.CallToolResult{} // no content: sent as [], as the SDK does
	}
	f.initialized("2025-11-25")
	var mu sync.Mutex
	var out []string
	write := func(m jsonrpc.Message) error {
		b, err := jsonrpc.EncodeMessage(m)
		mu.Lock()
		out = append(out, string(b))
		mu.Unlock()
		return err
	}
	req := func(id any, params string) *jsonrpc.Request {
		return &jsonrpc.Request{ID: mustID(t, id), Method: methodCallTool, Params: json.RawMessage(params)}
	}
	if !f.take(context.Background(), req("c1", `{"name":"block"}`), write) {
		t.Fatal("the fast path did not take a call")
	}
	<-started
	if f.take(context.Background(), req("c1", `{"name":"quick"}`), write) {
		t.Error("the fast path took a call whose id is in flight")
	}
	for _, n := range []string{
		`{"requestId":"other"}`, `{"requestId":{"x":1}}`, `[1]`, // none of its calls: nothing happens
	} {
		f.cancelled(&jsonrpc.Request{Method: notificationCancelled, Params: json.RawMessage(n)})
	}
	f.cancelled(&jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"requestId":"c1"}`)})
	if !f.take(context.Background(), req(float64(2), `{"name":"quick"}`), write) {
		t.Fatal("the fast path did not take a second call")
	}
	f.cancelled(&jsonrpc.Request{Method: notificationCancelled, Params: json.RawMessage(`{"requestId":"c1","reason":"user"}`)})
	f.close()
	if f.take(context.Background(), req(float64(3), `{"name":"quick"}`), write) {
		t.Error("the fast path took a call after close")
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(out)
	want := []string{
		`{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"stopped: context canceled"}]}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`,
	}
	slices.Sort(want)
	if !slices.Equal(out, want) {
		t.Errorf("responses:\n%s\nwant\n%s", strings.Join(out, "\n"), strings.Join(want, "\n"))
	}
}

// TestFastCallsWriteFails: once a response cannot be written, the calls
// running are cancelled and new ones are left to the SDK.
func TestFastCallsWriteFails(t *testing.T) {
	f := newFastCalls()
	started, stopped := make(chan struct{}), make(chan struct{})
	f.tools["block"] = func(ctx context.Context, _ json.RawMessage) *mcp.CallToolResult {
		close(started)
		<-ctx.Done()
		close(stopped)
		return &mcp.CallToolResult{}
	}
	f.tools["quick"] = func(context.Context, json.RawMessage) *mcp.CallToolResult { return &mcp.CallToolResult{} }
	f.initialized("2025-11-25")
	fail := func(jsonrpc.Message) error { return errors.New("broken pipe") }
	req := func(id float64, name string) *jsonrpc.Request {
		return &jsonrpc.Request{ID: mustID(t, id), Method: methodCallTool, Params: json.RawMessage(`{"name":"` + name + `"}`)}
	}
	if !f.take(context.Background(), req(1, "block"), fail) {
		t.Fatal("the fast path did not take a call")
	}
	<-started
	if !f.take(context.Background(), req(2, "quick"), fail) {
		t.Fatal("the fast path did not take a second call")
	}
	<-stopped // the failed write of call 2 cancelled call 1
	if f.take(context.Background(), req(3, "quick"), fail) {
		t.Error("the fast path took a call after a failed write")
	}
	f.close()
}

// TestParamsDepth: nesting is counted as the go-sdk's decoder counts it,
// brackets in strings and escaped quotes not included.
func TestParamsDepth(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`{}`, 1},
		{`{"a":[{"b":[]}]}`, 4},
		{`{"a":"[[[{{{"}`, 1},
		{`{"a":"\"[[[","b":[[]]}`, 3},
		{`{"a":"\\","b":[1]}`, 2},
		{`[[],[],[[]]]`, 3},
		{`"x"`, 0},
	} {
		if got := paramsDepth([]byte(c.in)); got != c.want {
			t.Errorf("paramsDepth(%s) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestStdioFastCancel: over ServeStdio, a client's notifications/cancelled
// reaches a call the transport runs, and the end of the input cancels
// one.
func TestStdioFastCancel(t *testing.T) {
	e := newEnv(t, nil)
	e.srv.fastHook = func(f *fastCalls) {
		f.tools["block"] = func(ctx context.Context, _ json.RawMessage) *mcp.CallToolResult {
			<-ctx.Done()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stopped"}}}
		}
	}
	c := startStdio(t, e, context.Background())
	c.initialize()
	c.roundTrip(`{"jsonrpc":"2.0","id":"ready","method":"ping"}`)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	if got, want := string(c.recv()), `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"stopped"}]}}`+"\n"; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	// A call still running when the input ends is cancelled, as the SDK
	// cancels its own: ServeStdio returns.
	c.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	if err := c.close(); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
}

// FuzzParamsDepth: for any valid JSON, paramsDepth is the deepest
// nesting of its objects and arrays as a JSON decoder's tokens show it;
// for anything else it returns without failing.
func FuzzParamsDepth(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":[{"b":[]}]}`, `{"a":"[[[{{{"}`, `{"a":"\"[[[","b":[[]]}`, `{"a":"\\","b":[1]}`,
		`{"a":"\\\"]]"}`, `"x"`, `1`, `null`, `[[[[[[]]]]]]`, `{"n":"read_text_file","arguments":{"p":["a",{"b":"}"}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := paramsDepth(data)
		if !json.Valid(data) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		depth, want := 0, 0
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch tok {
			case json.Delim('{'), json.Delim('['):
				depth++
				want = max(want, depth)
			case json.Delim('}'), json.Delim(']'):
				depth--
			}
		}
		if got != want {
			t.Errorf("paramsDepth(%s) = %d, want %d", data, got, want)
		}
	})
}
