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
	"strconv"
	"sync"
	"time"

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
// Server.Close). The go-sdk's IOTransport and request handling serve it;
// in front of them, each line is checked: a request line longer than
// Limits.MaxRequestBytes is answered with an error for its id, a line
// that is not a JSON-RPC message with a parse or invalid-request error
// (id null; batches are not supported), and the session goes on. At the
// end of the input the calls already received are answered before the
// session ends (as a shell pipeline's `printf ... | agentstore mcp`
// expects), each waited for at most the drain time (DefaultStdioDrain);
// ctx being done cuts that short. When r is a pipe or a socket in
// blocking mode (a process's stdin, as runtimes spawn tool servers), it
// is read in non-blocking mode through the Go runtime's poller while the
// session lasts, and set back to blocking mode before ServeStdio returns.
func (s *Server) ServeStdio(ctx context.Context, scope artifacts.Scope, r io.Reader, w io.Writer) error {
	srv, err := s.ForSession(scope)
	if err != nil {
		return err
	}
	r, restore := pollable(r)
	defer restore()
	out := &lineWriter{w: w}
	in := &lineFilter{lines: &lineLimiter{r: bufio.NewReaderSize(r, 64<<10), limit: s.limits.MaxRequestBytes}, out: out}
	drain := s.stdioDrain
	if drain <= 0 {
		drain = DefaultStdioDrain
	}
	err = srv.Run(ctx, &drainTransport{
		// The lines the SDK reads are at most MaxRequestBytes long (see
		// lineLimiter): its own cap would only end the session instead.
		inner: &mcp.IOTransport{Reader: in, Writer: out, MaxLineLength: -1},
		drain: drain,
	})
	if cerr := s.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// DefaultStdioDrain is how long ServeStdio waits, at the end of its
// input, for the calls already received to be answered.
const DefaultStdioDrain = 30 * time.Second

// drainTransport is the go-sdk transport it wraps, whose connection holds
// back the end of the input until every call read has been answered (or
// the drain time has passed, or the connection is closed). The go-sdk
// cancels the calls in flight when its reader ends and then cannot write
// their responses: a client that writes its requests and closes its end
// (a pipeline) would get no answers.
type drainTransport struct {
	inner mcp.Transport
	drain time.Duration
}

// Connect connects the inner transport.
func (t *drainTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConn{Connection: c, ctx: ctx, drain: t.drain, pending: map[jsonrpc.ID]int{}, changed: make(chan struct{}, 1), closed: make(chan struct{})}, nil
}

// drainConn counts the calls read and not yet answered, by id.
type drainConn struct {
	mcp.Connection
	ctx   context.Context // of Connect: ServeStdio's
	drain time.Duration

	mu      sync.Mutex
	pending map[jsonrpc.ID]int
	changed chan struct{} // signalled when a call is answered

	closeOnce sync.Once
	closed    chan struct{}
}

// Read returns the next message; the end of the input (or any read error)
// only once the calls read before it are answered. Reading also ends
// when ServeStdio's context is done (the go-sdk reads with a context of
// its own that is not): the go-sdk then cancels the calls running, which
// it would otherwise wait for before closing.
func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.wait(ctx)
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		c.mu.Lock()
		c.pending[req.ID]++
		c.mu.Unlock()
	}
	return msg, nil
}

// wait waits until no call is pending, the drain time has passed, ctx is
// done or the connection is closed.
func (c *drainConn) wait(ctx context.Context) {
	timer := time.NewTimer(c.drain)
	defer timer.Stop()
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		case <-c.closed:
			return
		}
	}
}

// Write writes msg; a response answers its call (written or not: a
// failed write is not retried).
func (c *drainConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.mu.Lock()
		if c.pending[resp.ID]--; c.pending[resp.ID] <= 0 {
			delete(c.pending, resp.ID)
		}
		c.mu.Unlock()
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	return err
}

// Close closes the connection and ends a wait for pending calls.
func (c *drainConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// lineWriter writes each message the go-sdk writes (one Write a line) and
// each answer of lineFilter whole, one at a time. Closing it leaves w
// open (it is the process's stdout).
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does nothing: the stream stays open.
func (l *lineWriter) Close() error { return nil }

// writeMessage writes msg as one line.
func (l *lineWriter) writeMessage(msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a JSON-RPC message: %w", err)
	}
	_, err = l.Write(append(data, '\n'))
	return err
}

// lineFilter is the input the go-sdk reads: the lines of lines that are
// one JSON-RPC message each, as the go-sdk decodes them, trimmed of
// surrounding space. A line that is not is answered on out and left out
// (the go-sdk would end the session on it); blank lines are skipped.
// Closing it leaves the input open (it is the process's stdin).
type lineFilter struct {
	lines *lineLimiter
	out   *lineWriter
	buf   []byte // the rest of the current line
	err   error  // the end of the input, once reached
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, err := f.lines.next()
		f.err = err
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if _, derr := jsonrpc.DecodeMessage(line); derr != nil {
			if werr := f.out.writeMessage(invalidLineReply(line)); werr != nil {
				return 0, werr
			}
			continue
		}
		f.buf = append(append(f.buf[:0], line...), '\n')
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// Close does nothing: the stream stays open.
func (f *lineFilter) Close() error { return nil }

// maxKeptBuffer is the largest line buffer kept for reuse.
const maxKeptBuffer = 1 << 20

// invalidLineReply is the error response to a line that the go-sdk
// cannot decode as one JSON-RPC message.
func invalidLineReply(line []byte) *jsonrpc.Response {
	if _, reply := decodeLine(line); reply != nil {
		return reply
	}
	return &jsonrpc.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid JSON-RPC message"}}
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
