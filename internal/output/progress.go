package output

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/agentstore/agentstore/internal/iostreams"
)

// Progress reports the advance of a long operation on standard error.
// Implementations are safe for concurrent use.
type Progress interface {
	// Start begins reporting under a short label ("snapshot", "repair").
	Start(label string)
	// Update reports the running totals of files and bytes processed.
	Update(files, bytes int64)
	// Done ends the report; later calls do nothing.
	Done()
}

// NewProgress returns a text progress line redrawn in place on standard
// error when ios allows progress (stderr is a terminal), and a no-op
// Progress otherwise.
func NewProgress(ios *iostreams.IOStreams) Progress {
	if !ios.ProgressEnabled() {
		return NoProgress{}
	}
	return &TextProgress{W: ios.ErrOut, Now: time.Now, Interval: 100 * time.Millisecond}
}

// NoProgress is a Progress that prints nothing.
type NoProgress struct{}

// Start does nothing.
func (NoProgress) Start(string) {}

// Update does nothing.
func (NoProgress) Update(int64, int64) {}

// Done does nothing.
func (NoProgress) Done() {}

// TextProgress draws "label: N files, SIZE" on one line of W, redrawing it
// in place with a carriage return at most once per Interval, and ends the
// line on Done.
type TextProgress struct {
	// W receives the progress line; a terminal.
	W io.Writer
	// Now is the clock used for throttling.
	Now func() time.Time
	// Interval is the minimum time between two redraws.
	Interval time.Duration

	mu       sync.Mutex
	label    string
	files    int64
	bytes    int64
	last     time.Time
	started  bool
	done     bool
	drawnLen int
}

// Start begins the report and draws the first line.
func (p *TextProgress) Start(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label, p.started, p.done = label, true, false
	p.drawLocked()
}

// Update records the totals and redraws when Interval has passed.
func (p *TextProgress) Update(files, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started || p.done {
		return
	}
	p.files, p.bytes = files, bytes
	if p.Now().Sub(p.last) >= p.Interval {
		p.drawLocked()
	}
}

// Done draws the final totals and ends the line.
func (p *TextProgress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started || p.done {
		return
	}
	p.done = true
	p.drawLocked()
	fmt.Fprint(p.W, "\n")
}

func (p *TextProgress) drawLocked() {
	p.last = p.Now()
	s := fmt.Sprintf("%s: %s, %s", p.label, plural(int(p.files), "file"), Size(p.bytes))
	pad := ""
	if w := lipgloss.Width(s); w < p.drawnLen {
		pad = fmt.Sprintf("%*s", p.drawnLen-w, "")
	}
	p.drawnLen = lipgloss.Width(s)
	fmt.Fprint(p.W, "\r"+s+pad)
}
