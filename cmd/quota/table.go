package quotacmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/quota"
)

// barWidth is the width of a usage bar in columns: narrow in the default
// table, which fits 80 columns, and wider with -o wide.
const (
	barWidth     = 8
	wideBarWidth = 12
)

// minCut is the narrowest a truncatable column is cut to.
const minCut = 12

// cell is one table cell: its plain text (which decides the width) and
// the text printed, which may carry colour.
type cell struct {
	text   string
	styled string
	right  bool
	// cut allows shortening the cell (in the middle, with an ellipsis) to
	// fit the terminal: ids and hashes, never reasons or numbers.
	cut bool
}

func plain(s string) cell  { return cell{text: s, styled: s} }
func id(s string) cell     { s = sanitize(s); return cell{text: s, styled: s, cut: true} }
func number(s string) cell { return cell{text: s, styled: s, right: true} }

// grid prints aligned columns. Cells may hold colour, which the table
// helper of package output would escape, so quota renders its own.
type grid struct {
	headers []string
	rows    [][]cell
	// fit is the width to fit the table into (the terminal's); 0 for no
	// limit.
	fit int
}

func (g *grid) render(w io.Writer, st output.Styles) {
	widths := make([]int, len(g.headers))
	cuttable := make([]bool, len(g.headers))
	for i, h := range g.headers {
		widths[i] = lipgloss.Width(h)
	}
	for _, r := range g.rows {
		for i, c := range r {
			widths[i] = max(widths[i], lipgloss.Width(c.text))
			cuttable[i] = cuttable[i] || c.cut
		}
	}
	if g.fit > 0 {
		g.cut(widths, cuttable)
	}
	var b strings.Builder
	line := func(cells []cell) {
		for i, c := range cells {
			if c.cut && lipgloss.Width(c.text) > widths[i] {
				c.text = output.Truncate(c.text, widths[i])
				c.styled = c.text
				cells[i] = c
			}
		}
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

// cut narrows the truncatable columns, widest first and never below
// minCut (or the header), until the table fits g.fit columns.
func (g *grid) cut(widths []int, cuttable []bool) {
	total := 2 * (len(widths) - 1)
	for _, w := range widths {
		total += w
	}
	for total > g.fit {
		best := -1
		for i, w := range widths {
			if cuttable[i] && w > max(minCut, lipgloss.Width(g.headers[i])) && (best < 0 || w > widths[best]) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		widths[best]--
		total--
	}
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

// usage renders a usage bar of width columns and the percentage, coloured
// by threshold: green, yellow at or above --warn, red above --fail-over.
func usage(st output.Styles, width int, pct float64, warn, over bool) cell {
	filled := int(pct / 100 * float64(width)) // full only at 100%
	filled = min(max(filled, 0), width)
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	text := fmt.Sprintf("%s %6.2f%%", bar, pct)
	colour := st.OK
	switch {
	case over:
		colour = st.Bad
	case warn:
		colour = st.Warn
	}
	return cell{text: text, styled: colour(strings.Repeat("█", filled)) + st.Faint(strings.Repeat("░", width-filled)) + fmt.Sprintf(" %6.2f%%", pct)}
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

// printTable prints the report as text. The scope and workspace tables
// have the columns that fit 80 columns; wide adds the largest version, name
// slots, fullest name, reservations and binding limit. On a terminal, ids
// are cut to fit its width.
func printTable(ios *iostreams.IOStreams, store string, r *quota.Report, now time.Time, wide bool) error {
	w := ios.Out
	st := output.NewStyles(ios)
	fit := 0
	if ios.IsStdoutTTY() {
		fit = ios.TerminalWidth()
	}
	bar := barWidth
	if wide {
		bar = wideBarWidth
	}
	s := r.Store
	slots := ""
	if s.ScopeSlots >= 0 {
		slots = fmt.Sprintf(" (%d slots, %d directories)", s.ScopeSlots, s.ScopeDirs)
	}
	u := usage(st, bar, s.UsagePercent, s.Warn, s.Over)
	fmt.Fprintln(w, cmdutil.StoreName{URI: store, Layout: s.Layout}.Line(st))
	switch {
	case s.NoCeilings:
		fmt.Fprintf(w, "%d scopes; the layout has no lifetime ceilings (no scope, name or reservation capacity to use up)", s.Scopes)
	case s.PerShard:
		fmt.Fprintf(w, "%d scopes, one per shard; fullest shard %d of %d scope slots  %s", s.ScopeDirs, s.Scopes, s.ScopeCapacity, u.styled)
	default:
		fmt.Fprintf(w, "%d of %d scopes%s  %s", s.Scopes, s.ScopeCapacity, slots, u.styled)
	}
	if m := mark(st, s.Warn, s.Over); m.text != "" {
		fmt.Fprintf(w, "  %s", m.styled)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d names, %d published versions, %s\n", s.Names, s.Versions, output.Size(s.Bytes))
	if s.Foreign > 0 {
		fmt.Fprintf(w, "%s\n", st.Warn(fmt.Sprintf("%d %s not part of the layout skipped; see agentstore fs verify", s.Foreign, plural(s.Foreign, "object", "objects"))))
	}
	if !s.NoCeilings {
		fmt.Fprintf(w, "at most %d names per scope, %d reservations per name\n", s.NameCapacity, s.ReservationCapacity)
	}
	if s.Problems > 0 {
		fmt.Fprintf(w, "%s\n", st.Warn(fmt.Sprintf("%d broken %s not counted; see agentstore fs verify", s.Problems, plural(s.Problems, "record", "records"))))
	}
	if s.Unreadable > 0 {
		fmt.Fprintf(w, "%s\n", st.Warn(fmt.Sprintf("%d unreadable %s not counted (not known to be broken)", s.Unreadable, plural(s.Unreadable, "version", "versions"))))
	}

	if len(r.Scopes) > 0 {
		fmt.Fprintln(w)
		g := &grid{fit: fit, headers: []string{"SCOPE", "NAMES", "VERSIONS", "SIZE", "USAGE", ""}}
		if wide {
			g.headers = []string{"SCOPE", "NAMES", "VERSIONS", "SIZE", "LARGEST", "NAME SLOTS", "FULLEST NAME", "RESERVED", "USAGE", "LIMIT", ""}
		}
		for _, sc := range r.Scopes {
			row := []cell{id(sc.Label()), number(strconv.Itoa(sc.Names)), number(strconv.FormatInt(sc.Versions, 10)), number(output.Size(sc.Bytes))}
			if wide {
				largest, fullest, reserved := plain("-"), plain("-"), "-"
				if sc.Largest != nil {
					largest = id(fmt.Sprintf("%s v%d (%s)", sc.Largest.Name, sc.Largest.Version, output.Size(sc.Largest.Size)))
				}
				if f := sc.FullestName; f != nil {
					name := f.Name
					if name == "" {
						name = "name " + f.Hash[:12]
					}
					fullest = id(name)
					reserved = fmt.Sprintf("%d/%d", f.Reservations, f.Capacity)
				}
				row = append(row, largest, number(fmt.Sprintf("%d/%d", sc.NameSlots, sc.NameCapacity)), fullest, number(reserved))
			}
			if r.Store.NoCeilings {
				row = append(row, plain("no ceiling"))
			} else {
				row = append(row, usage(st, bar, sc.UsagePercent, sc.Warn, sc.Over))
			}
			if wide {
				row = append(row, plain(sc.BindingLimit))
			}
			g.rows = append(g.rows, append(row, mark(st, sc.Warn, sc.Over)))
		}
		g.render(w, st)
		if len(r.Scopes) < r.ScopesTotal {
			fmt.Fprintf(w, "%s\n", st.Faint(fmt.Sprintf("showing the %d fullest of %d scopes", len(r.Scopes), r.ScopesTotal)))
		}
		if !wide {
			fmt.Fprintf(w, "%s\n", st.Faint("-o wide adds each scope's largest version, fullest name and limit"))
		}
	}
	checkpointTable(w, st, fit, r.Scopes)
	if err := snapshotTable(ios, r); err != nil {
		return err
	}

	if r.Scratch != "" {
		fmt.Fprintln(w)
		l := r.WorkspaceLimits
		fmt.Fprintf(w, "%s %s: %d %s; at most %s and %d files each\n", st.Bold("Scratch"), sanitize(r.Scratch),
			r.WorkspacesTotal, plural(r.WorkspacesTotal, "workspace", "workspaces"), output.Size(l.MaxBytes), l.MaxFiles)
		if len(r.Workspaces) > 0 {
			g := &grid{fit: fit, headers: []string{"WORKSPACE", "SCOPE", "FILES", "SIZE", "IDLE", "USAGE", "LIMIT", ""}}
			for _, ws := range r.Workspaces {
				scope := ws.State
				if ws.Scope != nil {
					scope = ws.Scope.String()
				}
				idle := output.RelativeTime(now, now.Add(-ws.Idle))
				if !ios.IsStdoutTTY() {
					idle = strconv.FormatInt(int64(ws.Idle/time.Second), 10) + "s"
				}
				g.rows = append(g.rows, []cell{id(ws.Dir), id(scope), number(strconv.Itoa(ws.Files)), number(output.Size(ws.Bytes)), plain(idle),
					usage(st, bar, ws.UsagePercent, ws.Warn, ws.Over), plain(ws.BindingLimit), mark(st, ws.Warn, ws.Over)})
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

// checkpointTable prints what the incremental snapshots of each session
// scope hold: manifests, packs, stored bytes, and the live and dead parts
// of the packs.
func checkpointTable(w io.Writer, st output.Styles, fit int, scopes []quota.ScopeUsage) {
	g := &grid{fit: fit, headers: []string{"CHECKPOINTS OF", "MANIFESTS", "PACKS", "STORED", "LIVE", "DEAD"}}
	var problems []string
	for _, sc := range scopes {
		c := sc.Checkpoints
		if c == nil {
			continue
		}
		g.rows = append(g.rows, []cell{id(sc.Label()), number(strconv.Itoa(c.Manifests)), number(strconv.Itoa(c.Packs)),
			number(output.Size(c.StoredBytes)), number(output.Size(c.LiveBytes)), number(output.Size(c.DeadBytes))})
		if sc.CheckpointsProblem != "" {
			problems = append(problems, sc.Label()+": "+sc.CheckpointsProblem)
		}
	}
	if len(g.rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	g.render(w, st)
	for _, p := range problems {
		fmt.Fprintf(w, "%s\n", st.Warn(sanitize(p)))
	}
}

// snapshotTable prints what each session's snapshots hold against the
// limits that stop the next one (quota.SnapshotUsage), and under it the
// warning of each row that warns.
func snapshotTable(ios *iostreams.IOStreams, r *quota.Report) error {
	if len(r.Snapshots) == 0 {
		return nil
	}
	w := ios.Out
	st := output.NewStyles(ios)
	fmt.Fprintln(w)
	t := output.NewTable(ios, "SNAPSHOTS OF", "FORMAT", "KEPT", "UNREFERENCED", "STORED", "HEADROOM", "USAGE", "LIMIT", "")
	t.NoTruncate(1, 2, 3, 4, 5, 6, 7, 8)
	var warnings []string
	for _, s := range r.Snapshots {
		unref := "?"
		if s.UnreferencedPacks >= 0 {
			unref = fmt.Sprintf("%d (%s)", s.UnreferencedPacks, output.Size(s.UnreferencedBytes))
		}
		headroom, use, limit := "-", "-", "-"
		if s.StoreHeadroom >= 0 {
			headroom = output.Size(s.StoreHeadroom)
		}
		if s.MaxStoreBytes > 0 || s.BindingLimit != quota.LimitStoreBytes {
			use, limit = fmt.Sprintf("%.2f%%", s.UsagePercent), s.BindingLimit
		}
		t.Row(s.Scope.String(), s.Format, fmt.Sprintf("%d/%d", s.Checkpoints, s.MaxSnapshots), unref,
			output.Size(s.StoredBytes), headroom, use, limit, mark(st, s.Warn, s.Over).text)
		if s.Warning != "" {
			warnings = append(warnings, s.Scope.String()+": "+s.Warning)
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, x := range warnings {
		fmt.Fprintf(w, "%s\n", st.Warn(sanitize(x)))
	}
	if len(r.Snapshots) < r.SnapshotsTotal {
		fmt.Fprintf(w, "%s\n", st.Faint(fmt.Sprintf("showing the %d closest of %d sessions", len(r.Snapshots), r.SnapshotsTotal)))
	}
	return nil
}
