package cmdutil

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// TerminalHandler is the slog.Handler of diagnostics on a terminal: each
// record is one sentence, "agentstore: warning: MSG (key value, ...)",
// without the time and level fields of a log line. Off a terminal the
// logfmt or JSON handlers are used instead, for log collectors.
type TerminalHandler struct {
	w       io.Writer
	mu      *sync.Mutex
	verbose bool
	attrs   []slog.Attr
}

// NewTerminalHandler returns a TerminalHandler writing to w: info,
// warnings and errors, and with verbose also debug records.
func NewTerminalHandler(w io.Writer, verbose bool) *TerminalHandler {
	return &TerminalHandler{w: w, mu: &sync.Mutex{}, verbose: verbose}
}

// Enabled reports whether records of level l are printed: info and above
// always, debug with verbose.
func (h *TerminalHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.verbose
}

// Handle prints r as one sentence.
func (h *TerminalHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("agentstore: ")
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	case r.Level < slog.LevelInfo:
		b.WriteString("debug: ")
	}
	b.WriteString(r.Message)
	var details []string
	add := func(a slog.Attr) bool {
		if a.Equal(slog.Attr{}) {
			return true
		}
		details = append(details, fmt.Sprintf("%s %s", strings.ReplaceAll(a.Key, "_", " "), a.Value.Resolve().String()))
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if len(details) > 0 {
		b.WriteString(" (" + strings.Join(details, ", ") + ")")
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *TerminalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr{}, h.attrs...), attrs...)
	return &c
}

// WithGroup returns h: groups are not shown on a terminal.
func (h *TerminalHandler) WithGroup(string) slog.Handler { return h }
