package quotacmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/quota"
)

// barWidth is the width of a usage bar in columns.
const barWidth = 12

// cell is one table cell: its plain text (which decides the width) and
// the text printed, which may carry colour.
type cell struct {
	text   string
	styled string
	right  bool
}

func plain(s string) cell  { return cell{text: s, styled: s} }
func number(s string) cell { return cell{text: s, styled: s, right: true} }

// grid prints aligned columns. Cells may hold colour, which the table
// helper of package output would escape, so quota renders its own.
type grid struct {
	headers []string
	rows    [][]cell
}

func (g *grid) render(w io.Writer, st output.Styles) {
	widths := make([]int, len(g.headers))
	for i, h := range g.headers {
		widths[i] = lipgloss.Width(h)
	}
	for _, r := range g.rows {
		for i, c := range r {
			widths[i] = max(widths[i], lipgloss.Width(c.text))
		}
	}
	var b strings.Builder
	line := func(cells []cell) {
		var l strings.Builder
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-lipgloss.Width(c.text))
			if i > 0 {
				l.WriteString("  ")
			}
			if c.right {
				l.WriteString(pad + c.styled)
			} else {
				l.WriteString(c.styled + pad)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	hs := make([]cell, len(g.headers))
	for i, h := range g.headers {
		hs[i] = cell{text: h, styled: st.Bold(h)}
	}
	line(hs)
	for _, r := range g.rows {
		line(r)
	}
	io.WriteString(w, b.String())
}

// sanitize makes control characters visible so a cell stays on one line.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// ident sanitizes an id for a cell and, on a terminal, cuts it to width.
func ident(ios *iostreams.IOStreams, s string, width int) string {
	s = sanitize(s)
	if ios.IsStdoutTTY() {
		s = output.Truncate(s, width)
	}
	return s
}

// usage renders a usage bar and percentage, coloured by threshold: green,
// yellow at or above --warn, red above --fail-over.
func usage(st output.Styles, pct float64, warn, over bool) cell {
	filled := int(pct / 100 * barWidth) // full only at 100%
	filled = min(max(filled, 0), barWidth)
	bar := strings.Repeat("█", filled) + strings.Repeat("░", barWidth-filled)
	text := fmt.Sprintf("%s %6.2f%%", bar, pct)
	colour := st.OK
	switch {
	case over:
		colour = st.Bad
	case warn:
		colour = st.Warn
	}
	return cell{text: text, styled: colour(strings.Repeat("█", filled)) + st.Faint(strings.Repeat("░", barWidth-filled)) + fmt.Sprintf(" %6.2f%%", pct)}
}

// mark is the last column: "warn" or "OVER".
func mark(st output.Styles, warn, over bool) cell {
	switch {
	case over:
		return cell{text: "OVER", styled: st.Bad("OVER")}
	case warn:
		return cell{text: "warn", styled: st.Warn("warn")}
	}
	return plain("")
}

func printTable(ios *iostreams.IOStreams, store string, r *quota.Report, now time.Time) error {
	w := ios.Out
	st := output.NewStyles(ios)
	s := r.Store
	slots := ""
	if s.ScopeSlots >= 0 {
		slots = fmt.Sprintf(" (%d slots, %d directories)", s.ScopeSlots, s.ScopeDirs)
	}
	u := usage(st, s.UsagePercent, s.Warn, s.Over)
	if s.PerShard {
		fmt.Fprintf(w, "%s %s (%s): %d scopes, one per shard; fullest shard %d of %d scope slots  %s", st.Bold("Store"), sanitize(store), s.Layout, s.ScopeDirs, s.Scopes, s.ScopeCapacity, u.styled)
	} else {
		fmt.Fprintf(w, "%s %s (%s): %d of %d scopes%s  %s", st.Bold("Store"), sanitize(store), s.Layout, s.Scopes, s.ScopeCapacity, slots, u.styled)
	}
	if m := mark(st, s.Warn, s.Over); m.text != "" {
		fmt.Fprintf(w, "  %s", m.styled)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d names, %d published versions, %s; at most %d names per scope, %d reservations per name\n",
		s.Names, s.Versions, output.Size(s.Bytes), s.NameCapacity, s.ReservationCapacity)
	if s.Problems > 0 {
		fmt.Fprintf(w, "%s\n", st.Warn(fmt.Sprintf("%d broken %s not counted; see agentstore fs verify", s.Problems, plural(s.Problems, "record", "records"))))
	}

	if len(r.Scopes) > 0 {
		fmt.Fprintln(w)
		g := &grid{headers: []string{"SCOPE", "NAMES", "VERSIONS", "SIZE", "LARGEST", "NAME SLOTS", "FULLEST NAME", "RESERVED", "USAGE", "LIMIT", ""}}
		for _, sc := range r.Scopes {
			largest, fullest, reserved := "-", "-", "-"
			if sc.Largest != nil {
				largest = fmt.Sprintf("%s v%d (%s)", ident(ios, sc.Largest.Name, 24), sc.Largest.Version, output.Size(sc.Largest.Size))
			}
			if f := sc.FullestName; f != nil {
				fullest = f.Name
				if fullest == "" {
					fullest = "name " + f.Hash[:12]
				}
				fullest = ident(ios, fullest, 24)
				reserved = fmt.Sprintf("%d/%d", f.Reservations, f.Capacity)
			}
			g.rows = append(g.rows, []cell{
				plain(ident(ios, sc.Label(), 48)),
				number(strconv.Itoa(sc.Names)),
				number(strconv.FormatInt(sc.Versions, 10)),
				number(output.Size(sc.Bytes)),
				plain(largest),
				number(fmt.Sprintf("%d/%d", sc.NameSlots, sc.NameCapacity)),
				plain(fullest),
				number(reserved),
				usage(st, sc.UsagePercent, sc.Warn, sc.Over),
				plain(sc.BindingLimit),
				mark(st, sc.Warn, sc.Over),
			})
		}
		g.render(w, st)
		if len(r.Scopes) < r.ScopesTotal {
			fmt.Fprintf(w, "%s\n", st.Faint(fmt.Sprintf("showing the %d fullest of %d scopes", len(r.Scopes), r.ScopesTotal)))
		}
	}

	if r.Scratch != "" {
		fmt.Fprintln(w)
		l := r.WorkspaceLimits
		fmt.Fprintf(w, "%s %s: %d %s; at most %s and %d files each\n", st.Bold("Scratch"), sanitize(r.Scratch),
			r.WorkspacesTotal, plural(r.WorkspacesTotal, "workspace", "workspaces"), output.Size(l.MaxBytes), l.MaxFiles)
		if len(r.Workspaces) > 0 {
			g := &grid{headers: []string{"WORKSPACE", "SCOPE", "FILES", "SIZE", "IDLE", "USAGE", "LIMIT", ""}}
			for _, ws := range r.Workspaces {
				scope := ws.State
				if ws.Scope != nil {
					scope = ws.Scope.String()
				}
				idle := output.RelativeTime(now, now.Add(-ws.Idle))
				if !ios.IsStdoutTTY() {
					idle = strconv.FormatInt(int64(ws.Idle/time.Second), 10) + "s"
				}
				g.rows = append(g.rows, []cell{
					plain(ws.Dir),
					plain(ident(ios, scope, 48)),
					number(strconv.Itoa(ws.Files)),
					number(output.Size(ws.Bytes)),
					plain(idle),
					usage(st, ws.UsagePercent, ws.Warn, ws.Over),
					plain(ws.BindingLimit),
					mark(st, ws.Warn, ws.Over),
				})
			}
			g.render(w, st)
			if len(r.Workspaces) < r.WorkspacesTotal {
				fmt.Fprintf(w, "%s\n", st.Faint(fmt.Sprintf("showing the %d fullest of %d workspaces", len(r.Workspaces), r.WorkspacesTotal)))
			}
		}
	}

	fmt.Fprintln(w)
	summary := fmt.Sprintf("%d %s at or above %v%%", r.Warnings, plural(r.Warnings, "usage", "usages"), r.WarnPercent)
	if r.FailOverPercent > 0 {
		summary += fmt.Sprintf("; %d above --fail-over %v%%", r.Over, r.FailOverPercent)
	}
	switch {
	case r.Over > 0:
		fmt.Fprintln(w, st.Bad(summary))
	case r.Warnings > 0:
		fmt.Fprintln(w, st.Warn(summary))
	default:
		fmt.Fprintln(w, st.OK(summary))
	}
	return nil
}
