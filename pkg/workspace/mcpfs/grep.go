package mcpfs

import (
	"context"
	"io"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// maxRegexpInsts bounds the compiled program of a grep pattern. Go's
// regular expressions run in time linear in the text, but times the
// threads alive, up to one per instruction: a counted repetition
// ([a-z]{1000}) makes a large program from a short pattern, and costs up
// to tens of microseconds a byte. Any pattern of at most maxPatternBytes
// without large repetitions fits.
const maxRegexpInsts = 8192

// grepWork is how much matching (bytes times program instructions) grep
// does between two looks at its context: at most tens of milliseconds
// for the costliest programs.
const grepWork = 1 << 20

// grepLines is the most lines grep matches between two looks at its
// context, however short they are.
const grepLines = 4096

// grepRegexp is a compiled grep pattern and what one match costs.
type grepRegexp struct {
	re    *regexp.Regexp
	insts int // the program's instructions
}

// compileGrep checks a grep pattern's size and syntax and compiles it
// once for the whole call.
func compileGrep(pattern string) (grepRegexp, error) {
	if len(pattern) > maxPatternBytes {
		return grepRegexp{}, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "pattern %s is %d bytes, more than the %d-byte limit of a pattern", quoteStart(pattern), len(pattern), maxPatternBytes)
	}
	bad := func(err error) error {
		return artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "pattern %s is not a regular expression (RE2 syntax): %v", quoteStart(pattern), strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	// The program's size, as regexp compiles it.
	p, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return grepRegexp{}, bad(err)
	}
	prog, err := syntax.Compile(p.Simplify())
	if err != nil {
		return grepRegexp{}, bad(err)
	}
	if n := len(prog.Inst); n > maxRegexpInsts {
		return grepRegexp{}, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "pattern %s compiles to %d instructions, more than the limit of %d; use smaller counted repetitions ({n}) or fewer alternatives", quoteStart(pattern), n, maxRegexpInsts)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return grepRegexp{}, bad(err)
	}
	return grepRegexp{re: re, insts: max(len(prog.Inst), 1)}, nil
}

// grepBudget decides when grep looks at its context: after grepWork of
// matching or grepLines lines, whichever comes first.
type grepBudget struct {
	ctx   context.Context
	insts int
	work  int
	lines int
}

// spend books matching one line of n bytes and reports the context's
// error when the budget since the last look ran out and the context is
// done.
func (b *grepBudget) spend(n int) error {
	b.work += (n + 1) * b.insts
	b.lines++
	if b.work < grepWork && b.lines < grepLines {
		return nil
	}
	b.work, b.lines = 0, 0
	return artifacts.CheckContext(b.ctx, "mcp")
}

// match reports whether line matches. A line whose matching would take
// more than grepWork is matched through a reader that looks at the
// context every grepWork, so that a cancelled or timed-out call stops
// within one line; the answer is then meaningless and the caller sees the
// context's error on its next spend.
func (g grepRegexp) match(ctx context.Context, line []byte) bool {
	if len(line)*g.insts <= grepWork {
		return g.re.Match(line)
	}
	return g.re.MatchReader(&ctxRunes{ctx: ctx, b: line, every: max(grepWork/g.insts, 1)})
}

// ctxRunes reads the runes of b as bytes.Reader does (an invalid byte is
// utf8.RuneError of width 1) and ends early, as if at the end of b, once
// ctx is done; it looks at ctx every every runes.
type ctxRunes struct {
	ctx   context.Context
	b     []byte
	every int
	n     int
}

// ReadRune implements io.RuneReader.
func (r *ctxRunes) ReadRune() (rune, int, error) {
	if len(r.b) == 0 {
		return 0, 0, io.EOF
	}
	if r.n++; r.n >= r.every {
		r.n = 0
		if r.ctx.Err() != nil {
			r.b = nil
			return 0, 0, io.EOF
		}
	}
	c, size := utf8.DecodeRune(r.b)
	r.b = r.b[size:]
	return c, size, nil
}
