// Package iostreams holds the standard streams of a command together with
// the decisions that depend on them: which stream is a terminal, whether
// colour and progress output are allowed, and how wide the terminal is.
//
// Everything that styles output asks an *IOStreams; nothing writes to
// os.Stdout directly, so tests can swap in buffers with chosen TTY flags.
package iostreams

import (
	"bytes"
	"io"
	"os"
	"sync"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"golang.org/x/term"
)

// DefaultWidth is the terminal width assumed when it cannot be measured.
const DefaultWidth = 120

// IOStreams carries stdin, stdout and stderr and the per-stream decisions
// made about them. Build one with System or Test.
type IOStreams struct {
	// In is standard input.
	In io.Reader
	// Out is standard output: data only.
	Out io.Writer
	// ErrOut is standard error: progress, logs, warnings and errors.
	ErrOut io.Writer

	mu            sync.Mutex
	inTTY         bool
	outTTY        bool
	errTTY        bool
	colorDisabled bool // --no-color or AGENTSTORE_NO_COLOR
	noColorEnv    bool // NO_COLOR set to a non-empty value
	width         int  // 0: measure (System) or DefaultWidth (Test)
	widthFunc     func() (int, bool)
	renderer      *lipgloss.Renderer
}

// System returns the IOStreams of the running process: os.Stdin,
// os.Stdout and os.Stderr, with terminal detection through golang.org/x/term
// and the NO_COLOR environment variable honoured. TERM=dumb (a terminal
// that understands no escape sequences) turns colour and styling off too.
func System() *IOStreams {
	s := &IOStreams{
		In:         os.Stdin,
		Out:        os.Stdout,
		ErrOut:     os.Stderr,
		inTTY:      isTerminal(os.Stdin),
		outTTY:     isTerminal(os.Stdout),
		errTTY:     isTerminal(os.Stderr),
		noColorEnv: os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb",
	}
	s.widthFunc = func() (int, bool) {
		for _, f := range []*os.File{os.Stdout, os.Stderr} {
			if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
				return w, true
			}
		}
		return 0, false
	}
	return s
}

// Test returns IOStreams over in-memory buffers, with every stream a
// non-terminal, colour allowed (subject to the TTY flags) and a width of
// DefaultWidth. Use the Set* methods to pretend streams are terminals.
func Test() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	ios = &IOStreams{In: in, Out: out, ErrOut: errOut}
	return ios, in, out, errOut
}

func isTerminal(f *os.File) bool {
	return f != nil && term.IsTerminal(int(f.Fd()))
}

// IsStdinTTY reports whether standard input is a terminal.
func (s *IOStreams) IsStdinTTY() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.inTTY }

// IsStdoutTTY reports whether standard output is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.outTTY }

// IsStderrTTY reports whether standard error is a terminal.
func (s *IOStreams) IsStderrTTY() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.errTTY }

// SetStdinTTY overrides the terminal decision for standard input.
func (s *IOStreams) SetStdinTTY(v bool) { s.mu.Lock(); defer s.mu.Unlock(); s.inTTY = v }

// SetStdoutTTY overrides the terminal decision for standard output.
func (s *IOStreams) SetStdoutTTY(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outTTY = v
	s.renderer = nil
}

// SetStderrTTY overrides the terminal decision for standard error.
func (s *IOStreams) SetStderrTTY(v bool) { s.mu.Lock(); defer s.mu.Unlock(); s.errTTY = v }

// SetColorDisabled records --no-color (or its config key / environment
// variable). Disabling is sticky only while v is true.
func (s *IOStreams) SetColorDisabled(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.colorDisabled = v
	s.renderer = nil
}

// SetNoColorEnv records whether the NO_COLOR environment variable is set to
// a non-empty value (or TERM is dumb). System reads it from the process
// environment.
func (s *IOStreams) SetNoColorEnv(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noColorEnv = v
	s.renderer = nil
}

// ColorEnabled reports whether styled output is allowed on standard output:
// it is a terminal, --no-color was not given and NO_COLOR is not set.
func (s *IOStreams) ColorEnabled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.colorEnabledLocked()
}

func (s *IOStreams) colorEnabledLocked() bool {
	return s.outTTY && !s.colorDisabled && !s.noColorEnv
}

// ProgressEnabled reports whether progress output may be drawn: only when
// standard error is a terminal.
func (s *IOStreams) ProgressEnabled() bool { return s.IsStderrTTY() }

// SetTerminalWidth fixes the terminal width; 0 goes back to measuring it.
func (s *IOStreams) SetTerminalWidth(w int) { s.mu.Lock(); defer s.mu.Unlock(); s.width = w }

// TerminalWidth returns the width of the terminal in columns, or
// DefaultWidth when it is unknown.
func (s *IOStreams) TerminalWidth() int {
	s.mu.Lock()
	w, f := s.width, s.widthFunc
	s.mu.Unlock()
	if w > 0 {
		return w
	}
	if f != nil {
		if w, ok := f(); ok {
			return w
		}
	}
	return DefaultWidth
}

// Renderer returns a lipgloss renderer for standard output whose colour
// profile follows ColorEnabled: ANSI colours when colour is on, plain text
// otherwise. It never probes the real terminal.
func (s *IOStreams) Renderer() *lipgloss.Renderer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renderer == nil {
		r := lipgloss.NewRenderer(s.Out)
		if s.colorEnabledLocked() {
			r.SetColorProfile(termenv.ANSI)
		} else {
			r.SetColorProfile(termenv.Ascii)
		}
		r.SetHasDarkBackground(true)
		s.renderer = r
	}
	return s.renderer
}
