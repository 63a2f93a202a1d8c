package mcpfs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// TestCallTimeout: a call that runs past Limits.CallTimeout answers
// TIMEOUT, saying so, and the server goes on answering.
func TestCallTimeout(t *testing.T) {
	var audit strings.Builder
	e := newEnv(t, func(o *envOpts) {
		o.ws.Scratch = shmDir(t)
		o.server.Limits.CallTimeout = time.Second
		o.server.Audit = &syncWriter{w: &audit}
	})
	e.wsFile("line.txt", letters(1<<20, 0))
	got, code := answerWithin(t, e, "grep", map[string]any{"pattern": repeatPattern, "path": "line.txt"})
	if code != "TIMEOUT" {
		t.Fatalf("code %q, want TIMEOUT: %.300q", code, got)
	}
	if want := "did not finish within its time limit of 1s"; !strings.Contains(got, want) {
		t.Errorf("got %q, want it to say %q", got, want)
	}
	if !strings.Contains(audit.String(), `"code":"TIMEOUT"`) {
		t.Errorf("audit: %s", audit.String())
	}
	// The server goes on: a call that touches no file answers.
	e.mustOK("list_allowed_directories", nil)
}

// TestCallTimeoutKeepsNotPersisted checks the deadline's rewrite of a
// call's error: a change whose snapshot the deadline cut short stays
// NOT_PERSISTED (the change was made), anything else becomes TIMEOUT.
func TestCallTimeoutKeepsNotPersisted(t *testing.T) {
	s := &Server{limits: Limits{CallTimeout: time.Millisecond}}
	failing := func(err error) *toolDef {
		return &toolDef{run: func(ctx context.Context, _ *call, _ json.RawMessage) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, err
		}}
	}
	notPersisted := artifacts.Errorf(artifacts.CodeNotPersisted, "workspace write", context.DeadlineExceeded,
		"/workspace/b.txt was written in the workspace but its snapshot was not stored")
	tests := []struct {
		err      error
		code     artifacts.Code
		contains string
	}{
		{notPersisted, artifacts.CodeNotPersisted, "/workspace/b.txt was written in the workspace but its snapshot was not stored"},
		{context.DeadlineExceeded, artifacts.CodeTimeout, "did not finish within its time limit of 1ms"},
		{artifacts.Errorf(artifacts.CodeIO, "grep", nil, "read failed"), artifacts.CodeTimeout, "did not finish"},
	}
	for _, tt := range tests {
		_, err := s.runBounded(context.Background(), nil, failing(tt.err), nil)
		if artifacts.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.contains) {
			t.Errorf("runBounded of a call failing with %v = %v (code %s), want code %s saying %q", tt.err, err, artifacts.CodeOf(err), tt.code, tt.contains)
		}
	}
	if _, err := s.runBounded(context.Background(), nil, &toolDef{run: func(context.Context, *call, json.RawMessage) (*mcp.CallToolResult, error) {
		return nil, notPersisted
	}}, nil); artifacts.CodeOf(err) != artifacts.CodeNotPersisted || strings.Contains(err.Error(), "time limit") {
		t.Errorf("a failure before the deadline = %v, want it unchanged", err)
	}
}
