package mcpfs

import (
	"strings"
	"testing"
	"time"
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
