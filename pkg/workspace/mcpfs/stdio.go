package mcpfs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

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
// Server.Close). A request line longer than Limits.MaxRequestBytes is
// answered with an error for its id, and the session goes on.
func (s *Server) ServeStdio(ctx context.Context, scope artifacts.Scope, r io.Reader, w io.Writer) error {
	srv, err := s.ForSession(scope)
	if err != nil {
		return err
	}
	in := &lineLimiter{r: bufio.NewReaderSize(r, 64<<10), limit: s.limits.MaxRequestBytes}
	t := &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{w}, MaxLineLength: -1}
	err = srv.Run(ctx, t)
	if cerr := s.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// lineLimiter passes newline-delimited messages through, replacing a line
// longer than limit with a small request of methodTooLarge that carries
// the original id (found at the line's start or end, where JSON-RPC
// clients put it), or drops it when no id is found. Memory stays bounded
// by limit.
type lineLimiter struct {
	r     *bufio.Reader
	limit int64
	buf   []byte // pending output
}

// idAtEnd and idAtStart find a top-level "id" of a JSON-RPC message.
var (
	idAtEnd   = regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.){0,256}"|-?[0-9]{1,20})\s*}\s*$`)
	idAtStart = regexp.MustCompile(`^\s*{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*("(?:[^"\\]|\\.){0,256}"|-?[0-9]{1,20})`)
)

func (l *lineLimiter) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		line, err := l.next()
		if len(line) > 0 {
			l.buf = line
			break
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}

// next returns the next line (with its newline), or its replacement.
func (l *lineLimiter) next() ([]byte, error) {
	var line []byte
	var head []byte
	tail := make([]byte, 0, 1024)
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
			line = nil
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
		if !over {
			return line, err
		}
		return l.replacement(head, tail, total), err
	}
}

func (l *lineLimiter) replacement(head, tail []byte, total int64) []byte {
	tail = bytes.TrimRight(tail, "\r\n")
	var id []byte
	if m := idAtEnd.FindSubmatch(tail); m != nil {
		id = m[1]
	} else if m := idAtStart.FindSubmatch(head); m != nil {
		id = m[1]
	}
	if id == nil {
		return nil // a notification, or no id to answer: dropped
	}
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"method":"` + methodTooLarge + `","params":{"bytes":` + strconv.FormatInt(total, 10) + `,"limit":` + strconv.FormatInt(l.limit, 10) + "}}\n")
}
