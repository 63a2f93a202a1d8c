package output

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/agentstore/agentstore/internal/iostreams"
)

// minColumnWidth is the narrowest a column is squeezed to when a table
// does not fit the terminal.
const minColumnWidth = 8

// columnGap is the space between two columns.
const columnGap = "  "

// Table collects rows and prints them as an aligned, borderless table.
//
// On a terminal the header is bold (when colour is on) and long cells are
// cut in the middle (see Truncate) so the table fits TerminalWidth. Off a
// terminal (the user asked for -o table explicitly) the table is plain:
// no styling and no truncation. Control characters in cells are always
// escaped so every row is one line.
type Table struct {
	ios     *iostreams.IOStreams
	headers []string
	rows    [][]string
	keep    map[int]bool
}

// NewTable starts a table with the given column headers (printed as given;
// use upper case by convention).
func NewTable(ios *iostreams.IOStreams, headers ...string) *Table {
	return &Table{ios: ios, headers: headers, keep: map[int]bool{}}
}

// Row appends one row. Missing cells are empty; extra cells are dropped.
func (t *Table) Row(cells ...string) {
	row := make([]string, len(t.headers))
	copy(row, cells)
	t.rows = append(t.rows, row)
}

// NoTruncate marks columns (0-based) that must never be shortened, such as
// short counters; the other columns give up space first.
func (t *Table) NoTruncate(cols ...int) {
	for _, c := range cols {
		t.keep[c] = true
	}
}

// Len returns the number of rows added so far.
func (t *Table) Len() int { return len(t.rows) }

// Render writes the table to the IOStreams' standard output.
func (t *Table) Render() error {
	headers := make([]string, len(t.headers))
	for i, h := range t.headers {
		headers[i] = sanitize(h)
	}
	rows := make([][]string, len(t.rows))
	for i, r := range t.rows {
		rows[i] = make([]string, len(r))
		for j, c := range r {
			rows[i][j] = sanitize(c)
		}
	}
	tty := t.ios.IsStdoutTTY()
	if tty {
		widths := fitWidths(headers, rows, t.keep, t.ios.TerminalWidth())
		for _, r := range rows {
			for j := range r {
				r[j] = Truncate(r[j], widths[j])
			}
		}
		for j := range headers {
			headers[j] = Truncate(headers[j], widths[j])
		}
		if t.ios.ColorEnabled() {
			bold := t.ios.Renderer().NewStyle().Bold(true)
			for j := range headers {
				headers[j] = bold.Render(headers[j])
			}
		}
	}

	var buf bytes.Buffer
	cell := tw.CellConfig{
		Formatting: tw.CellFormatting{AutoFormat: tw.Off, AutoWrap: tw.WrapNone},
		Alignment:  tw.CellAlignment{Global: tw.AlignLeft},
		Padding:    tw.CellPadding{Global: tw.Padding{Left: "", Right: columnGap, Overwrite: true}},
	}
	tb := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{ShowHeader: tw.Off, ShowFooter: tw.Off, BetweenRows: tw.Off, BetweenColumns: tw.Off},
				Lines:      tw.Lines{ShowTop: tw.Off, ShowBottom: tw.Off, ShowHeaderLine: tw.Off, ShowFooterLine: tw.Off},
			},
		})),
		tablewriter.WithConfig(tablewriter.Config{Header: cell, Row: cell}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	if len(headers) > 0 {
		h := make([]any, len(headers))
		for i, s := range headers {
			h[i] = s
		}
		tb.Header(h...)
	}
	for _, r := range rows {
		if err := tb.Append(r); err != nil {
			return err
		}
	}
	if err := tb.Render(); err != nil {
		return err
	}
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(trimTrailing(strings.TrimSuffix(line, "\n")))
		out.WriteByte('\n')
	}
	_, err := t.ios.Out.Write([]byte(out.String()))
	return err
}

// trailingBlank matches the padding at the end of a rendered line,
// including the colour resets the renderer puts around it.
var trailingBlank = regexp.MustCompile(`(?: |\x1b\[[0-9;]*m)+$`)

// trimTrailing removes the padding at the end of line; when that removed
// escape sequences, a single reset closes the line.
func trimTrailing(line string) string {
	loc := trailingBlank.FindStringIndex(line)
	if loc == nil {
		return line
	}
	cut := line[loc[0]:]
	line = line[:loc[0]]
	if strings.Contains(cut, "\x1b") {
		line += "\x1b[0m"
	}
	return line
}

// fitWidths returns the width of every column so that the whole table,
// gaps included, fits in total columns: the widest truncatable column
// gives up one column at a time, never below minColumnWidth (or its
// header's width when that is smaller).
func fitWidths(headers []string, rows [][]string, keep map[int]bool, total int) []int {
	n := len(headers)
	widths := make([]int, n)
	for j, h := range headers {
		widths[j] = lipgloss.Width(h)
	}
	for _, r := range rows {
		for j, c := range r {
			if j < n {
				widths[j] = max(widths[j], lipgloss.Width(c))
			}
		}
	}
	avail := total - len(columnGap)*max(n-1, 0)
	sum := 0
	for _, w := range widths {
		sum += w
	}
	for sum > avail {
		best := -1
		for j, w := range widths {
			if keep[j] || w <= minColumnWidth {
				continue
			}
			if best < 0 || w > widths[best] {
				best = j
			}
		}
		if best < 0 {
			break // cannot shrink further; let the terminal wrap
		}
		widths[best]--
		sum--
	}
	return widths
}
