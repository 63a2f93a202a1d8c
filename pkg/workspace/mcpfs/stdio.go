package mcpfs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// methodTooLarge is the method an oversized request is replaced with, so
// that the client gets an error response for its request id instead of a
// dropped connection.
const methodTooLarge = "agentstore/request_too_large"

type tooLargeParams struct {
	mcp.ParamsBase
	Bytes int64 `json:"bytes"`
	Limit int64 `json:"limit"`
}

type tooLargeResult struct{ mcp.ResultBase }

func tooLargeHandler(_ context.Context, _ *mcp.ServerSession, p *tooLargeParams) (*tooLargeResult, error) {
	return nil, fmt.Errorf("request too large: the message is over %d bytes, more than the server's limit of %d bytes (agentstore mcp --max-request-bytes); send less per call, e.g. write a large file with several append_file calls", p.Bytes, p.Limit)
}

// ServeStdio serves one session over newline-delimited JSON-RPC on r and
// w until r ends or ctx is done, then ends the session's turn (see
// Server.Close). Each message is one line, as the MCP stdio transport
// requires. A request line longer than Limits.MaxRequestBytes is answered
// with an error for its id, a line that is not a JSON-RPC message with a
// parse or invalid-request error (id null; batches are not supported),
// and the session goes on. When r is a pipe or a socket in blocking mode
// (a process's stdin, as runtimes spawn tool servers), it is read in
// non-blocking mode through the Go runtime's poller while the session
// lasts, and set back to blocking mode before ServeStdio returns.
func (s *Server) ServeStdio(ctx context.Context, scope artifacts.Scope, r io.Reader, w io.Writer) error {
	texts := newTextSlots()
	var fast *fastCalls
	if !s.sdkOnly {
		fast = newFastCalls()
		if s.fastHook != nil {
			s.fastHook(fast)
		}
	}
	srv, err := s.forSession(scope, texts, fast)
	if err != nil {
		return err
	}
	r, restore := pollable(r)
	defer restore()
	err = srv.Run(ctx, &stdioTransport{r: r, w: w, limit: s.limits.MaxRequestBytes, texts: texts, fast: fast})
	if fast != nil {
		fast.close()
	}
	if cerr := s.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// stdioTransport is the stdio mcp.Transport. Unlike the go-sdk's
// IOTransport it writes a response's result, which the SDK has already
// marshaled, as it is instead of validating and compacting it once more,
// writes the large texts of tool results itself (see textSlots), reads
// each line into one reused buffer and decodes it with one encoding/json
// call, and answers a malformed line instead of ending the session.
type stdioTransport struct {
	r     io.Reader
	w     io.Writer
	limit int64
	texts *textSlots // of the session's tool handlers; nil: none
	fast  *fastCalls // the session's tools, to call without the SDK; nil: none
}

// Connect starts the reader and returns the connection. The calls the
// transport makes itself (fast) run in ctx.
func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c := &stdioConn{ctx: ctx, w: t.w, texts: t.texts, fast: t.fast, incoming: make(chan readResult), closed: make(chan struct{})}
	c.respond = func(m jsonrpc.Message) error { return c.write(context.Background(), m) }
	l := &lineLimiter{r: bufio.NewReaderSize(t.r, 64<<10), limit: t.limit}
	go c.readLoop(l)
	return c, nil
}

// readResult is one message, or the error that ended the input.
type readResult struct {
	msg jsonrpc.Message
	err error
}

// stdioConn is one stdio connection. A goroutine reads and decodes the
// lines so that Close can unblock Read (a read of stdin cannot be
// interrupted); writes are serialised by wmu.
type stdioConn struct {
	wmu   sync.Mutex
	w     io.Writer
	wbuf  []byte // reused between writes while small
	texts *textSlots

	ctx     context.Context // of the connection
	fast    *fastCalls
	respond func(jsonrpc.Message) error // writes a fast call's response

	incoming  chan readResult
	closed    chan struct{}
	closeOnce sync.Once
}

// maxKeptBuffer is the largest line or write buffer kept for reuse.
const maxKeptBuffer = 1 << 20

func (c *stdioConn) readLoop(l *lineLimiter) {
	for {
		line, err := l.next()
		if len(bytes.TrimSpace(line)) > 0 {
			msg, reply := decodeLine(line)
			switch {
			case c.fast != nil && c.takeFast(msg):
				if l.r.Buffered() == 0 {
					// Let the call run before the next read, which would
					// only find no input yet.
					runtime.Gosched()
				}
			case msg != nil:
				select {
				case c.incoming <- readResult{msg: msg}:
				case <-c.closed:
					return
				}
			case reply != nil:
				if werr := c.write(context.Background(), reply); werr != nil {
					err = werr
				}
			}
		}
		if err != nil {
			if c.fast != nil {
				c.fast.inputEnded()
			}
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// takeFast reports whether msg is a call that the transport's fast path
// has taken (see fastCalls); a cancellation is seen by the fast path and
// still goes to the SDK.
func (c *stdioConn) takeFast(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false
	}
	if c.fast.take(c.ctx, req, c.respond) {
		return true
	}
	c.fast.cancelled(req)
	return false
}

// wireMessage is a JSON-RPC message as read. Its keys are matched exactly
// (decodeLine decodes into a map first), as the go-sdk's decoder does.
type wireMessage struct {
	version string
	id      any
	method  *string
	params  json.RawMessage
	result  json.RawMessage
	error   *jsonrpc.Error
}

// decodeLine decodes one line into a request or response. A line that is
// not one yields no message and the error response to send instead.
func decodeLine(line []byte) (jsonrpc.Message, *jsonrpc.Response) {
	invalid := func(id jsonrpc.ID, code int64, format string, args ...any) (jsonrpc.Message, *jsonrpc.Response) {
		return nil, &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Value == "array":
			return invalid(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported: send one message per line")
		case errors.As(err, &te):
			return invalid(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "a JSON-RPC message is a JSON object, not %s", te.Value)
		}
		return invalid(jsonrpc.ID{}, jsonrpc.CodeParseError, "parse error: the line is not JSON (one message per line, no newlines inside)")
	}
	var m wireMessage
	for k, v := range fields {
		var err error
		switch k {
		case "jsonrpc":
			err = json.Unmarshal(v, &m.version)
		case "id":
			err = json.Unmarshal(v, &m.id)
		case "method":
			m.method = new(string)
			err = json.Unmarshal(v, m.method)
		case "params":
			m.params = v
		case "result":
			m.result = v
		case "error":
			err = json.Unmarshal(v, &m.error)
		}
		if err != nil {
			return invalid(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "invalid JSON-RPC message: member %q: %v", k, err)
		}
	}
	id, err := jsonrpc.MakeID(m.id)
	if err != nil {
		return invalid(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, "invalid JSON-RPC message: the id is neither a number nor a string")
	}
	if m.version != "2.0" {
		return invalid(id, jsonrpc.CodeInvalidRequest, "invalid JSON-RPC message: want \"jsonrpc\": \"2.0\"")
	}
	if m.method != nil {
		return &jsonrpc.Request{ID: id, Method: *m.method, Params: m.params}, nil
	}
	if !id.IsValid() {
		return invalid(id, jsonrpc.CodeInvalidRequest, "invalid JSON-RPC message: neither a request (no method) nor a response (no id)")
	}
	resp := &jsonrpc.Response{ID: id, Result: m.result}
	if m.error != nil {
		resp.Error = m.error
	}
	return resp, nil
}

// Read returns the next message.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write writes msg as one line. A successful response is written with its
// result as the SDK marshaled it; anything else as jsonrpc.EncodeMessage
// encodes it. The bytes are the same either way.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	return c.write(ctx, msg)
}

func (c *stdioConn) write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	buf, err := appendMessage(c.wbuf[:0], msg, c.texts)
	if err != nil {
		return err
	}
	buf = append(buf, '\n')
	_, err = c.w.Write(buf)
	if cap(buf) <= maxKeptBuffer {
		c.wbuf = buf[:0]
	}
	return err
}

// appendMessage appends the JSON encoding of msg to buf, byte for byte
// what jsonrpc.EncodeMessage returns, with the placeholders of texts
// replaced (texts may be nil).
func appendMessage(buf []byte, msg jsonrpc.Message, texts *textSlots) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) == 0 {
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return buf, fmt.Errorf("encoding a JSON-RPC message: %w", err)
		}
		return append(buf, data...), nil
	}
	buf = append(buf, `{"jsonrpc":"2.0"`...)
	switch id := resp.ID.Raw().(type) {
	case nil:
	case int64:
		buf = append(buf, `,"id":`...)
		buf = strconv.AppendInt(buf, id, 10)
	case string:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // as the SDK encodes
		if err := enc.Encode(id); err != nil {
			return buf, err
		}
		buf = append(buf, `,"id":`...)
		buf = append(buf, bytes.TrimRight(b.Bytes(), "\n")...)
	default:
		return buf, fmt.Errorf("encoding a JSON-RPC message: id of type %T", id)
	}
	// The SDK marshaled the result with encoding/json: it is compact JSON
	// already, which is all that encoding it again would check and do.
	buf = append(buf, `,"result":`...)
	if texts != nil && texts.pending() > 0 {
		var err error
		if buf, err = texts.appendResult(buf, resp.Result); err != nil {
			return buf, err
		}
	} else {
		buf = append(buf, resp.Result...)
	}
	return append(buf, '}'), nil
}

// Close ends the connection: Read returns io.EOF. The streams stay open
// (they are the process's stdin and stdout).
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID is empty: stdio has no session ids.
func (c *stdioConn) SessionID() string { return "" }

// lineLimiter splits the input into lines, replacing a line longer than
// limit with a small request of methodTooLarge that carries the original
// id (found at the line's start or end, where JSON-RPC clients put it),
// or dropping it when no id is found. Memory stays bounded by limit.
type lineLimiter struct {
	r     *bufio.Reader
	limit int64
	line  []byte // reused for each line while small
}

// idAtEnd and idAtStart find a top-level "id" of a JSON-RPC message.
// They are compiled on first use, by the first oversized message: their
// bounded repetitions take milliseconds to compile, which every command of
// the binary would pay at start-up as package variables.
var (
	idAtEnd = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.){0,256}"|-?[0-9]{1,20})\s*}\s*$`)
	})
	idAtStart = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*("(?:[^"\\]|\\.){0,256}"|-?[0-9]{1,20})`)
	})
)

// next returns the next line (with its newline, if it had one), or its
// replacement; the line is valid until the next call. At the end of the
// input it returns the last line, if any, with the error.
func (l *lineLimiter) next() ([]byte, error) {
	line := l.line[:0]
	var head, tail []byte
	var total int64
	over := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		total += int64(len(chunk))
		switch {
		case !over && total <= l.limit+1: // +1: the newline
			line = append(line, chunk...)
		case !over:
			over = true
			head = append(line, chunk...)
			head = append([]byte(nil), head[:min(len(head), 1024)]...)
			line = line[:0]
			tail = make([]byte, 0, 2048)
			fallthrough
		default:
			tail = append(tail, chunk...)
			if len(tail) > 1024 {
				tail = append(tail[:0], tail[len(tail)-1024:]...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if cap(line) <= maxKeptBuffer {
			l.line = line[:0]
		}
		if !over {
			return line, err
		}
		return l.replacement(head, tail, total), err
	}
}

func (l *lineLimiter) replacement(head, tail []byte, total int64) []byte {
	tail = bytes.TrimRight(tail, "\r\n")
	var id []byte
	if m := idAtEnd().FindSubmatch(tail); m != nil {
		id = m[1]
	} else if m := idAtStart().FindSubmatch(head); m != nil {
		id = m[1]
	}
	if id == nil {
		return nil // a notification, or no id to answer: dropped
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"method":"` + methodTooLarge + `","params":{"bytes":` + strconv.FormatInt(total, 10) + `,"limit":` + strconv.FormatInt(l.limit, 10) + "}}\n")
}
