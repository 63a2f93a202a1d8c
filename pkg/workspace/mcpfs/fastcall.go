package mcpfs

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Method names the stdio transport looks at.
const (
	methodCallTool        = "tools/call"
	notificationCancelled = "notifications/cancelled"
)

// fastProtocolBefore is the first protocol version for which the go-sdk
// changes a tool result (it adds "resultType"): sessions that negotiated
// it or a later one leave every call to the SDK.
const fastProtocolBefore = "2026-07-28"

// maxParamsDepth is the nesting the go-sdk's decoder accepts in a
// request's params; deeper ones are left to the SDK, which refuses them.
const maxParamsDepth = 1000

// fastCalls answers the plain tools/call requests of an initialized stdio
// session in the transport, with the same tool functions and the same
// bytes as the go-sdk, without its generic request handling: per call the
// SDK decoded the params twice, each time with a fresh 32 KiB buffer (64
// of the 76 KB a small call allocated), and passed the request through
// its queue, its middleware and a goroutine of its own. The fast path
// decodes the params once and runs the call in one goroutine. Everything
// else goes to the SDK: other methods, any call before the client's
// notifications/initialized, a protocol version from fastProtocolBefore
// on, params with any member besides "name" and "arguments" (such as
// "_meta": progress tokens and the per-request protocol), params nested
// deeper than the SDK accepts, an unknown tool, an id the fast path has
// in flight, and every call after a response could not be written. So a
// client reads what the SDK would have sent, byte for byte
// (TestFastCallsSame). Cancellation works as with the SDK: a client's
// notifications/cancelled, and the end of the input, cancel a call's
// context. Streamable HTTP keeps the SDK's handling.
type fastCalls struct {
	tools map[string]toolFunc // by name, as registered with the SDK
	ready atomic.Bool         // set by the session's initialized handler
	taken atomic.Int64        // calls taken, for the tests

	mu       sync.Mutex
	inflight map[jsonrpc.ID]context.CancelFunc
	done     bool // the connection is closing: take no more
	wg       sync.WaitGroup
}

func newFastCalls() *fastCalls {
	return &fastCalls{tools: map[string]toolFunc{}, inflight: map[jsonrpc.ID]context.CancelFunc{}}
}

// initialized enables the fast path for a session whose client asked for
// protocol version in its initialize request (called by the SDK's
// initialized handler, once). The SDK decides on the version the client
// asked for, not the one negotiated, whether a result carries
// "resultType". The first calls after notifications/initialized may
// still go to the SDK: the transport reads on while the SDK handles the
// notification.
func (f *fastCalls) initialized(version string) {
	if version != "" && version < fastProtocolBefore {
		f.ready.Store(true)
	}
}

// fastParams are the params of a tools/call the fast path takes.
type fastParams struct {
	name string
	args json.RawMessage
}

// parse returns the params of req when the fast path may take it.
func (f *fastCalls) parse(req *jsonrpc.Request) (fastParams, toolFunc, bool) {
	var p fastParams
	if !f.ready.Load() || req.Method != methodCallTool || !req.ID.IsValid() || len(req.Params) == 0 {
		return p, nil, false
	}
	if paramsDepth(req.Params) > maxParamsDepth {
		return p, nil, false
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(req.Params, &members); err != nil || members == nil {
		return p, nil, false
	}
	for k := range members {
		if k != "name" && k != "arguments" {
			return p, nil, false
		}
	}
	raw, ok := members["name"]
	if !ok || len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &p.name) != nil {
		return p, nil, false
	}
	h, ok := f.tools[p.name]
	if !ok {
		return p, nil, false
	}
	p.args = members["arguments"]
	return p, h, true
}

// take starts the call of req and reports whether it did; when it did
// not, the request goes to the SDK. The call's response is written with
// write; ctx is the connection's.
func (f *fastCalls) take(ctx context.Context, req *jsonrpc.Request, write func(jsonrpc.Message) error) bool {
	p, h, ok := f.parse(req)
	if !ok {
		return false
	}
	f.mu.Lock()
	if _, busy := f.inflight[req.ID]; busy || f.done {
		f.mu.Unlock()
		return false
	}
	cctx, cancel := context.WithCancel(ctx)
	f.inflight[req.ID] = cancel
	f.wg.Add(1)
	f.mu.Unlock()
	f.taken.Add(1)
	go func() {
		defer f.wg.Done()
		defer cancel()
		msg := f.call(cctx, req.ID, p, h)
		// As the SDK does, the id leaves the calls in flight before the
		// response is sent: the client may reuse it once it has one.
		f.mu.Lock()
		delete(f.inflight, req.ID)
		f.mu.Unlock()
		if err := write(msg); err != nil {
			// The client cannot be answered any more: as the SDK does
			// after a failed write, cancel the calls running, and leave
			// any new one to the SDK, which fails it.
			f.mu.Lock()
			f.done = true
			f.mu.Unlock()
			f.inputEnded()
		}
	}()
	return true
}

// call runs the handler and returns the response, as the SDK builds it.
func (f *fastCalls) call(ctx context.Context, id jsonrpc.ID, p fastParams, h toolFunc) jsonrpc.Message {
	res := h(ctx, p.args)
	if res.Content == nil {
		r := *res
		r.Content = []mcp.Content{} // the SDK's: no "null"
		res = &r
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as the SDK marshals a result
	if err := enc.Encode(res); err != nil {
		return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()}}
	}
	return &jsonrpc.Response{ID: id, Result: bytes.TrimSuffix(b.Bytes(), []byte("\n"))}
}

// cancelled cancels the call a notifications/cancelled names, if the fast
// path runs it. The notification goes on to the SDK either way.
func (f *fastCalls) cancelled(req *jsonrpc.Request) {
	if req.Method != notificationCancelled || len(req.Params) == 0 {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	f.mu.Lock()
	cancel := f.inflight[id]
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// inputEnded cancels the calls running, as the SDK does with its own when
// the input ends (no cancellation can reach them any more, and the client
// that would read their results has likely gone) or a write fails.
func (f *fastCalls) inputEnded() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cancel := range f.inflight {
		cancel()
	}
}

// close takes no more calls and waits for those running.
func (f *fastCalls) close() {
	f.mu.Lock()
	f.done = true
	f.mu.Unlock()
	f.wg.Wait()
}

// paramsDepth is the deepest nesting of objects and arrays in data, which
// is valid JSON.
func paramsDepth(data []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}
