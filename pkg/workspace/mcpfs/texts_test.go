package mcpfs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

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

// TestDeferredTexts: a response whose large texts the transport writes
// is byte for byte the response the go-sdk would write, and the texts are
// forgotten once written.
func TestDeferredTexts(t *testing.T) {
	long := strings.Repeat("[FILE] f.txt\n", 100)
	for _, c := range []struct {
		name, text string
		notes      []string
		deferred   bool
	}{
		{"listing", long, nil, true},
		{"with a note", long, []string{"[agentstore: more lines follow; read on with offset=9.]"}, true},
		{"html and quotes", strings.Repeat(`<a href="x">&amp;</a> \ "q" `, 20), nil, true},
		{"line separators", strings.Repeat("a\u2028b\u2029c\t\r\n", 40), nil, true},
		{"invalid UTF-8", strings.Repeat("ok \xff\xfe bad ", 30), nil, true},
		{"control bytes", strings.Repeat("\x00\x01\x1f\x7f", 80), nil, true},
		{"just long enough", strings.Repeat("x", minDeferredText), nil, true},
		{"short", strings.Repeat("x", minDeferredText-1), nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := newTextSlots()
			plain := textResult(c.text, c.notes...)
			deferred := textResult(c.text, c.notes...)
			ts.deferTexts(deferred)
			if got := ts.pending(); got != map[bool]int{true: 1, false: 0}[c.deferred] {
				t.Fatalf("%d texts pending", got)
			}
			id, _ := jsonrpc.MakeID(float64(12))
			want, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: sdkMarshal(t, plain)})
			if err != nil {
				t.Fatal(err)
			}
			result := sdkMarshal(t, deferred)
			if c.deferred && bytes.Contains(result, []byte(c.text[:50])) {
				t.Fatalf("the text was marshaled: %.200s", result)
			}
			got, err := appendMessage(nil, &jsonrpc.Response{ID: id, Result: result}, ts)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got  %.300s\nwant %.300s", got, want)
			}
			if n := ts.pending(); n != 0 {
				t.Errorf("%d texts still pending", n)
			}
		})
	}
}

// TestDeferredTextsRefused: a placeholder whose text is unknown or that
// is cut short is an error, never written to the client.
func TestDeferredTextsRefused(t *testing.T) {
	ts := newTextSlots()
	res := textResult(strings.Repeat("y", 1000))
	ts.deferTexts(res)
	result := sdkMarshal(t, res)
	id, _ := jsonrpc.MakeID(float64(1))
	for name, r := range map[string][]byte{
		"unknown":   bytes.ReplaceAll(result, []byte(`-1\u0000"`), []byte(`-2\u0000"`)),
		"no number": bytes.ReplaceAll(result, []byte(`-1\u0000"`), []byte(`-\u0000"`)),
		"cut short": result[:bytes.Index(result, []byte(`-1\u0000"`))+2],
	} {
		if out, err := appendMessage(nil, &jsonrpc.Response{ID: id, Result: r}, ts); err == nil {
			t.Errorf("%s: wrote %.200s", name, out)
		}
	}
}

// TestStdioTexts: through ServeStdio, results carry the same content as
// through the go-sdk's own transport, and no placeholder reaches the
// client.
func TestStdioTexts(t *testing.T) {
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
		if bytes.Contains(raw, []byte("agentstore-text-")) {
			t.Fatalf("%s: a placeholder reached the client: %.300s", call.tool, raw)
		}
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

// FuzzAppendJSONString: the transport's encoding of a text is
// json.Marshal's, byte for byte, after whatever buf held.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "<b>&amp;</b>", "tab\tnew\nline\r", "\x00\x01\x1f\x7f", "\"\\/", "\u2028\u2029", "bad\xff\xfe", "ünï ☃ 😀", "\b\f"} {
		f.Add([]byte("prefix"), s)
	}
	f.Fuzz(func(t *testing.T, prefix []byte, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendJSONString(bytes.Clone(prefix), s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, append(bytes.Clone(prefix), want...)) {
			t.Errorf("%q: got %q, want %q", s, got[len(prefix):], want)
		}
	})
}
