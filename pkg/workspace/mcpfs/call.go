package mcpfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// call is one tool call: the server, the session and what the audit
// record will say.
type call struct {
	s    *Server
	ss   *session
	info *callInfo
	// ws is the workspace once a route opened it.
	ws *workspace.Workspace
}

func (ss *session) markOpened() {
	ss.mu.Lock()
	ss.opened = true
	ss.mu.Unlock()
}

func (ss *session) wasOpened() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.opened
}

// chargeMemory books a /memory write against the session's per-turn
// allowance.
func (c *call) chargeMemory(ctx context.Context, rel string, n int64) (func(), error) {
	ws, err := (&wsFS{c: c}).ws(ctx)
	if err != nil {
		return nil, err
	}
	return ws.ChargeTurn(RouteMemory+"/"+rel, n)
}

// decode decodes a tool's arguments into T. Unknown arguments are
// ignored, as the reference server ignores them.
func decode[T any](raw json.RawMessage) (T, error) {
	var v T
	if len(raw) == 0 || string(raw) == "null" {
		return v, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return v, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "argument %q: want %s, got JSON %s", te.Field, jsonType(te.Type.Kind().String()), te.Value)
		}
		return v, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "arguments are not a JSON object of the tool's input schema")
	}
	return v, nil
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "float64", "int", "int64":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return kind
}

// lineCount converts an optional number argument to a non-negative line
// count.
func lineCount(name string, v *float64) (int, bool, error) {
	if v == nil {
		return 0, false, nil
	}
	if *v < 0 || *v != float64(int(*v)) || *v > 1e9 {
		return 0, false, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "%s %v: want a whole number of lines >= 0", name, *v)
	}
	return int(*v), true, nil
}

// errorCode is the code an error result carries: the store's code in
// upper case (QUOTA_EXCEEDED, NOT_FOUND, ...).
func errorCode(err error) string {
	code := artifacts.CodeOf(err)
	if code == artifacts.CodeUnknown || code == "" {
		code = artifacts.CodeIO
	}
	return strings.ToUpper(string(code))
}

// message says what failed for whom, without Go-internal prefixes.
func (c *call) message(err error) string {
	p := c.info.path
	if p == "" {
		p = "the path"
	}
	var ae *artifacts.Error
	if !errors.As(err, &ae) {
		return fmt.Sprintf("%s: %s", p, plainCause(err))
	}
	if ae.Err == nil || ae.Code == artifacts.CodeQuotaExceeded {
		return ae.Msg
	}
	switch ae.Code {
	case artifacts.CodeNotPersisted:
		// The cause may name the store's own paths: only its code.
		what := c.info.path
		if what == "" {
			what = "the workspace"
		}
		if artifacts.CodeOf(ae.Err) == artifacts.CodeQuotaExceeded && quotaReason(ae.Err) != nil {
			// The session's snapshots are over their store-bytes ceiling:
			// the model can act on it (make the workspace smaller).
			return fmt.Sprintf("%s was changed in the workspace, but the snapshot that stores it was refused (QUOTA_EXCEEDED): %s; the change stays in the workspace and the next write or end_turn retries the snapshot", what, quotaReason(ae.Err).Msg)
		}
		return fmt.Sprintf("%s was changed in the workspace, but the snapshot that stores it failed (%s); the change stays in the workspace and the next write or end_turn retries the snapshot", what, errorCode(ae.Err))
	case artifacts.CodeNotFound:
		return p + " does not exist"
	case artifacts.CodePermission:
		if strings.Contains(ae.Err.Error(), "path escapes from parent") {
			return p + ": the path leads outside its root through a symbolic link; links are not followed"
		}
		return p + ": permission denied"
	}
	return fmt.Sprintf("%s: %s", p, plainCause(ae.Err))
}

// quotaReason returns the innermost CodeQuotaExceeded error of err's
// chain that says why (its Msg, never a cause that could name the
// store's paths), or nil.
func quotaReason(err error) *artifacts.Error {
	var found *artifacts.Error
	for {
		var e *artifacts.Error
		if !errors.As(err, &e) {
			return found
		}
		if e.Code == artifacts.CodeQuotaExceeded && e.Msg != "" {
			found = e
		}
		err = e.Err
	}
}

// plainCause describes an operating-system error in words.
func plainCause(err error) string {
	switch {
	case errors.Is(err, syscall.ENOTEMPTY):
		return "the directory is not empty"
	case errors.Is(err, syscall.EISDIR):
		return "is a directory"
	case errors.Is(err, syscall.ENOTDIR):
		return "a component of the path is not a directory"
	case errors.Is(err, syscall.ELOOP):
		return "a symbolic link is in the way; links are not followed"
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, fs.ErrExist):
		return "already exists"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, syscall.ENOSPC):
		return "no space left on the device"
	}
	var ae *artifacts.Error
	if errors.As(err, &ae) && ae.Msg != "" {
		return ae.Msg
	}
	return "input/output error"
}

// errorResult is the error result of a failed call: text for the model and
// structured content with the stable code (and, for QUOTA_EXCEEDED, the
// allowance left and the limits).
func (c *call) errorResult(err error) *mcp.CallToolResult {
	code := errorCode(err)
	msg := c.message(err)
	text := "Error: " + code + ": " + msg
	sc := map[string]any{"content": text, "code": code, "message": msg}
	if c.info.path != "" {
		sc["path"] = c.info.path
	}
	if code == "QUOTA_EXCEEDED" {
		text = c.quotaDetail(err, text, sc)
		sc["content"] = text
	}
	var ae *artifacts.Error
	if code == "NOT_PERSISTED" && errors.As(err, &ae) && ae.Err != nil {
		sc["cause"] = errorCode(ae.Err)
		if qe := quotaReason(ae.Err); qe != nil && qe.Remaining >= 0 {
			sc["remaining_store_bytes"] = qe.Remaining
		}
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: sc}
}

// quotaDetail adds to the structured content sc of a QUOTA_EXCEEDED
// result the limit that bound, what is left under each limit that is set
// (a limit that is not set has no remaining_ field, never a 0) and the
// limits, and returns text with the same said in words.
func (c *call) quotaDetail(err error, text string, sc map[string]any) string {
	var q workspace.Quota
	if c.ws != nil {
		q = c.ws.Quota().Quota
	}
	var words []string
	remaining := func(key string, n int64) {
		if n >= 0 {
			sc[key] = n
			words = append(words, fmt.Sprintf("%s: %d", key, n))
		}
	}
	var qe *workspace.QuotaExceeded
	var ae *artifacts.Error
	switch {
	case errors.As(err, &qe):
		sc["limit"] = string(qe.Limit)
		words = append(words, "limit: "+string(qe.Limit))
		remaining("remaining_bytes", qe.RemainingBytes)
		remaining("remaining_files", int64(qe.RemainingFiles))
		remaining("remaining_entries", int64(qe.RemainingEntries))
	case errors.As(err, &ae):
		remaining("remaining_bytes", ae.Remaining)
	}
	sc["turn_limit_bytes"] = q.TurnBytes
	sc["total_limit_bytes"] = q.TotalBytes
	sc["max_files"] = q.MaxFiles
	sc["max_entries"] = q.MaxEntries
	words = append(words, "per-turn limit: "+limitText(int64(q.TurnBytes), "bytes"), "total limit: "+limitText(q.TotalBytes, "bytes"),
		"file limit: "+limitText(int64(q.MaxFiles), "files"), "entry limit: "+limitText(int64(q.MaxEntries), "entries"))
	return text + " (" + strings.Join(words, "; ") + ")"
}

func limitText(n int64, unit string) string {
	if n <= 0 {
		return "none"
	}
	return fmt.Sprintf("%d %s", n, unit)
}

// textResult is a successful result with one text block, shaped as the
// reference server's ({"content": text} as structured content).
func textResult(text string, notes ...string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	sc := map[string]any{"content": text}
	if len(notes) > 0 {
		n := strings.Join(notes, "\n")
		res.Content = append(res.Content, &mcp.TextContent{Text: n})
		sc["note"] = n
	}
	res.StructuredContent = sc
	return res
}
