package mcpfs

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// costlyPattern is a pattern within the limits whose matching costs
// microseconds a byte: an alternation of random words.
func costlyPattern() string {
	r := rand.New(rand.NewPCG(1, 2))
	var alts []string
	for n := 0; n < maxPatternBytes-20; n += 9 {
		w := make([]byte, 8)
		for i := range w {
			w[i] = byte('a' + r.IntN(26))
		}
		alts = append(alts, string(w))
	}
	return strings.Join(alts, "|")
}

// repeatPattern is a short pattern of 4,003 instructions that never
// matches letters: every byte of a long line of letters costs thousands
// of steps.
var repeatPattern = strings.Repeat("[a-z]{1000}", 4) + "0"

// letters is n bytes of lowercase letters in lines of lineLen (0: one
// line).
func letters(n, lineLen int) string {
	var b strings.Builder
	b.Grow(n)
	for i := 0; b.Len() < n; i++ {
		if lineLen > 0 && i%lineLen == lineLen-1 {
			b.WriteByte('\n')
			continue
		}
		b.WriteByte(byte('a' + i%26))
	}
	return b.String()
}

func TestGrepPatternLimits(t *testing.T) {
	e := newEnv(t, func(o *envOpts) { o.ws.Scratch = shmDir(t) })
	e.wsFile("big.txt", letters(1<<20, 100))
	e.wsFile("small.txt", letters(1<<10, 100))
	huge := strings.Repeat("needle|", 400_000) + "needle" // 2.8 MB
	tests := []struct {
		name, pattern, include, path, code, want string
	}{
		{name: "2.8 MB pattern", pattern: huge, code: "INVALID_ARGUMENT", want: "more than the 4096-byte limit of a pattern"},
		{name: "large program", pattern: strings.Repeat("[a-z]{1000}", 9) + "0", code: "INVALID_ARGUMENT", want: "more than the limit of 8192"},
		{name: "bad syntax", pattern: "a(b", code: "INVALID_ARGUMENT", want: "missing closing )"},
		{name: "large include", pattern: "x", include: strings.Repeat("*", maxPatternBytes+1), code: "INVALID_ARGUMENT", want: "include \"****"},
		{name: "pattern at the limit", pattern: strings.Repeat("q", maxPatternBytes), path: "small.txt"},
		{name: "costly pattern within the limits", pattern: costlyPattern(), path: "small.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"pattern": tt.pattern}
			if tt.include != "" {
				args["include"] = tt.include
			}
			if tt.path != "" {
				args["path"] = tt.path
			}
			got, code := answerWithin(t, e, "grep", args)
			if code != tt.code {
				t.Fatalf("code %q, want %q: %.300q", code, tt.code, got)
			}
			if tt.code == "" && got != "No matches found" {
				t.Errorf("got %.200q", got)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %.300q, want it to say %q", got, tt.want)
			}
			if len(got) > 1000 {
				t.Errorf("the error quotes %d bytes of the pattern", len(got))
			}
		})
	}
}

// answerWithin calls a tool and returns its text and error code ("" on
// success); it fails the test when no answer comes in 2 minutes, a hang
// guard and not a timing assertion (under -race on a loaded machine, the
// go-sdk alone takes seconds to decode a 2.8 MB argument).
func answerWithin(t *testing.T, e *env, tool string, args map[string]any) (string, string) {
	t.Helper()
	type answer struct {
		text, code string
		err        error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			done <- answer{err: err}
			return
		}
		a := answer{text: text(res)}
		if res.IsError {
			a.code, _ = structured(t, res)["code"].(string)
		}
		done <- a
	}()
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatalf("%s: protocol error: %v", tool, a.err)
		}
		return a.text, a.code
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s did not answer in 2 minutes", tool)
	}
	return "", ""
}

// lookCtx is a context that is cancelled once its Err has been asked
// after times: the grep is cancelled at a point of its work, not of the
// clock.
type lookCtx struct {
	context.Context
	after int64
	looks atomic.Int64
	done  chan struct{}
	once  sync.Once
	at    time.Time // when it was cancelled

	mu     sync.Mutex
	last   time.Time     // the last look
	maxGap time.Duration // the longest time between two looks
}

func newLookCtx(after int64) *lookCtx {
	return &lookCtx{Context: context.Background(), after: after, done: make(chan struct{})}
}

func (c *lookCtx) Done() <-chan struct{} { return c.done }

func (c *lookCtx) Err() error {
	c.mu.Lock()
	if now := time.Now(); !c.last.IsZero() {
		c.maxGap = max(c.maxGap, now.Sub(c.last))
		c.last = now
	} else {
		c.last = now
	}
	c.mu.Unlock()
	if c.looks.Add(1) <= c.after {
		return nil
	}
	c.once.Do(func() { c.at = time.Now(); close(c.done) })
	return context.Canceled
}

// TestGrepCancelled: a grep whose context is cancelled in the middle of a
// file that would take minutes stops and says it was cancelled, both over
// many short lines and within one long line.
func TestGrepCancelled(t *testing.T) {
	e := newEnv(t, func(o *envOpts) { o.ws.Scratch = shmDir(t) })
	e.wsFile("lines.txt", letters(8<<20, 100))
	e.wsFile("line.txt", letters(1<<20, 0))
	tests := []struct {
		name, pattern, path string
	}{
		{"many lines", costlyPattern(), "lines.txt"},
		{"one long line", repeatPattern, "line.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(map[string]any{"pattern": tt.pattern, "path": tt.path})
			if err != nil {
				t.Fatal(err)
			}
			ctx := newLookCtx(8)
			c := &call{s: e.srv, ss: e.srv.session(e.scope), info: &callInfo{}}
			done := make(chan error, 1)
			go func() {
				_, err := grepTool(ctx, c, raw)
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute): // a hang guard, not a timing assertion
				t.Fatal("the cancelled grep did not return in 2 minutes")
			}
			stopped := time.Now()
			if artifacts.CodeOf(err) != artifacts.CodeCanceled {
				t.Fatalf("error %v, want one with code canceled", err)
			}
			ctx.once.Do(func() {}) // c.at is set and seen
			ctx.mu.Lock()
			defer ctx.mu.Unlock()
			t.Logf("returned %v after the cancelling look; at most %v between looks (reported, not asserted)", stopped.Sub(ctx.at), ctx.maxGap)
			if ctx.looks.Load() <= ctx.after {
				t.Fatalf("the grep ended after %d looks at its context without being cancelled", ctx.looks.Load())
			}
		})
	}
}

// TestGrepMatchReader: matching through ctxRunes answers as matching the
// bytes does, invalid UTF-8 included.
func TestGrepMatchReader(t *testing.T) {
	for _, tt := range []struct{ pattern, line string }{
		{`^a.c$`, "abc"}, {`^a.c$`, "a\xffc"}, {`\bword\b`, "a word here"}, {`x$`, "yx"},
		{`é+`, "caf\xc3\xa9"}, {`^$`, ""}, {`[^a]`, "aaa"},
	} {
		re, err := compileGrep(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		want := re.re.Match([]byte(tt.line))
		if got := re.re.MatchReader(&ctxRunes{ctx: context.Background(), b: []byte(tt.line), every: 1}); got != want {
			t.Errorf("%q on %q: through ctxRunes %v, on bytes %v", tt.pattern, tt.line, got, want)
		}
	}
}
