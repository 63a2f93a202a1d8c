package output

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/mattn/go-runewidth"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/shell"
)

// TimeLayout is RFC 3339 in UTC with milliseconds, the layout of every time
// the command line prints: 2026-11-29T22:12:21.123Z.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Time formats t as RFC 3339 in UTC with milliseconds. The zero time
// formats as the empty string.
func Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(TimeLayout)
}

// TimeMS formats a Unix time in milliseconds like Time.
func TimeMS(ms int64) string { return Time(time.UnixMilli(ms)) }

// HumanTime formats t for a table cell: relative to now ("3 minutes ago")
// when standard output is a terminal, RFC 3339 (Time) otherwise.
func HumanTime(ios *iostreams.IOStreams, now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if ios.IsStdoutTTY() {
		return RelativeTime(now, t)
	}
	return Time(t)
}

// RelativeTime describes t relative to now in friendly words: "just now",
// "5 minutes ago", "in 2 hours", "3 days ago". Beyond a year it falls back
// to the date.
func RelativeTime(now, t time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		s = plural(int(d/time.Minute), "minute")
	case d < 24*time.Hour:
		s = plural(int(d/time.Hour), "hour")
	case d < 30*24*time.Hour:
		s = plural(int(d/(24*time.Hour)), "day")
	case d < 365*24*time.Hour:
		s = plural(int(d/(30*24*time.Hour)), "month")
	default:
		return t.UTC().Format("2006-01-02")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// Size formats a byte count with binary units and one decimal:
// "512 B", "1.5 KiB", "3.0 MiB". Negative sizes keep their sign.
func Size(n int64) string {
	if n < 0 {
		if n == math.MinInt64 {
			return "-8.0 EiB"
		}
		return "-" + Size(-n)
	}
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n) / 1024
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	// Avoid printing "1024.0 KiB" after rounding.
	if v >= 1023.95 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// Ellipsis is the mark Truncate puts where it cut text out.
const Ellipsis = "…"

// Truncate shortens s to at most width display columns by cutting out its
// middle and putting an ellipsis there, so that both the start and the end
// of long ids stay visible. Strings that fit are returned unchanged; a
// width below 1 yields "".
func Truncate(s string, width int) string {
	if width < 1 {
		return ""
	}
	if lipgloss.Width(s) <= width {
		return s
	}
	if width == 1 {
		return Ellipsis
	}
	// Control and escape characters would make widths lie; cells should
	// not carry them, so make them visible first.
	s = sanitize(s)
	if runewidth.StringWidth(s) <= width {
		return s
	}
	budget := width - runewidth.StringWidth(Ellipsis)
	headW := (budget + 1) / 2
	tailW := budget - headW
	runes := []rune(s)
	var head strings.Builder
	w := 0
	i := 0
	for ; i < len(runes); i++ {
		rw := runewidth.RuneWidth(runes[i])
		if w+rw > headW {
			break
		}
		head.WriteRune(runes[i])
		w += rw
	}
	j := len(runes)
	w = 0
	for j > i {
		rw := runewidth.RuneWidth(runes[j-1])
		if w+rw > tailW {
			break
		}
		w += rw
		j--
	}
	return head.String() + Ellipsis + string(runes[j:])
}

// sanitize replaces control characters (newlines, tabs, escapes),
// bidirectional overrides and other invisible format characters, and
// invalid UTF-8 with visible escapes, so a cell occupies exactly one line
// and shows what it holds.
func sanitize(s string) string { return Escape(s) }

// Escape makes s safe to print on a terminal, on one line: every character
// a terminal would act on or that would hide or reorder text (see
// shell.Hidden: ESC, BEL, newlines, C0 and C1 controls, U+202E and the
// other bidirectional controls) and every byte that is not valid UTF-8 is
// replaced by a Go escape (\x1b, \n, \u202e). Other text is unchanged.
// Every id, name, path and reason the command line prints goes through it
// (tables do it themselves).
func Escape(s string) string {
	if !shell.NeedsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case shell.Hidden(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

// EscapeLines is Escape for a message of several lines: newlines and tabs
// are kept, everything else Escape replaces is replaced.
func EscapeLines(s string) string {
	if !shell.NeedsEscape(s) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j, p := range parts {
			parts[j] = Escape(p)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n")
}
