package quotacmd

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/quota"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "1048576": 1 << 20, "512MiB": 512 << 20, "4GiB": 4 << 30, "1.5K": 1536, "2 gib": 2 << 30, "5GB": 5_000_000_000, "5G": 5 << 30,
		"500kb": 500_000, "1.5MB": 1_500_000, "3TiB": 3 << 40, "2TB": 2_000_000_000_000} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"12parsecs", "-1", "0", "GiB", "1e30", "5GBs", "5 XB", "1.5.2M"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func testReport() *quota.Report {
	s := artifacts.SessionScope("a", "u\nx", "s")
	return &quota.Report{
		Store:       quota.StoreUsage{Adapter: "fs", Scopes: 4800, ScopeCapacity: 5000, ScopeSlots: 4800, ScopeDirs: 1, UsagePercent: 96, Warn: true, Over: true, NameCapacity: 5000, ReservationCapacity: 3333},
		Scopes:      []quota.ScopeUsage{{Scope: &s, Hash: s.Hash(), Names: 1, NameSlots: 1, NameCapacity: 5000, FullestName: &quota.FullestName{Name: "log.txt", Reservations: 3000, Capacity: 3333}, BindingLimit: quota.LimitReservations, UsagePercent: 90.01, Warn: true}},
		ScopesTotal: 1, WarnPercent: 80, FailOverPercent: 95, Warnings: 2, Over: 1,
	}
}

// TestTableColour checks that bars are coloured on a terminal with colour
// and plain otherwise, and that ids stay on one line.
func TestTableColour(t *testing.T) {
	for _, tty := range []bool{true, false} {
		ios, _, out, errOut := iostreams.Test()
		ios.SetStdoutTTY(tty)
		ios.SetTerminalWidth(300)
		if err := printTable(ios, "/s", testReport(), time.Unix(0, 0), true); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if strings.Contains(got, "\x1b[") != tty {
			t.Errorf("tty %v: escapes %v:\n%s", tty, !tty, got)
		}
		if !strings.Contains(got, `session("a","u\nx","s")`) || !strings.Contains(got, "3000/3333") || errOut.Len() != 0 {
			t.Errorf("tty %v:\n%s", tty, got)
		}
		plain := got
		if !tty {
			if !strings.Contains(plain, "OVER") || !strings.Contains(plain, "███████████░  96.00%") || !strings.Contains(plain, "1 above --fail-over 95%") {
				t.Errorf("plain table:\n%s", plain)
			}
		}
	}
	ios, _, out, _ := iostreams.Test()
	ios.SetStdoutTTY(true)
	ios.SetColorDisabled(true)
	if err := printTable(ios, "/s", testReport(), time.Unix(0, 0), false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Errorf("--no-color table has escapes:\n%s", out.String())
	}
}

// TestTableFits checks that the default table fits the terminal, cutting
// ids with an ellipsis, and that -o wide adds the wide columns.
func TestTableFits(t *testing.T) {
	r := testReport()
	long := artifacts.SessionScope("an-app-with-a-long-name", "user-0123456789abcdef", "session-0123456789abcdef")
	r.Scopes = append(r.Scopes, quota.ScopeUsage{Scope: &long, Hash: long.Hash(), Names: 12345, NameSlots: 1, NameCapacity: 5000, UsagePercent: 1})
	r.ScopesTotal = 2
	tests := []struct {
		width      int
		wide       bool
		want, lose []string
	}{
		{80, false, []string{"SCOPE", "USAGE", "…", "12345", "-o wide adds each"}, []string{"FULLEST NAME", "LIMIT", "3000/3333"}},
		{200, false, []string{`session("an-app-with-a-long-name","user-0123456789abcdef","session-0123456789abcdef")`}, []string{"…", "FULLEST NAME"}},
		{200, true, []string{"FULLEST NAME", "3000/3333", "reservations", "LIMIT"}, []string{"…", "-o wide adds each"}},
	}
	for _, tt := range tests {
		ios, _, out, _ := iostreams.Test()
		ios.SetStdoutTTY(true)
		ios.SetColorDisabled(true)
		ios.SetTerminalWidth(tt.width)
		if err := printTable(ios, "/s", r, time.Unix(0, 0), tt.wide); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		for line := range strings.Lines(got) {
			if w := lipgloss.Width(strings.TrimRight(line, "\n")); w > tt.width {
				t.Errorf("width %d wide %v: line of %d columns: %q", tt.width, tt.wide, w, line)
			}
		}
		for _, s := range tt.want {
			if !strings.Contains(got, s) {
				t.Errorf("width %d wide %v: no %q in\n%s", tt.width, tt.wide, s, got)
			}
		}
		for _, s := range tt.lose {
			if strings.Contains(got, s) {
				t.Errorf("width %d wide %v: %q in\n%s", tt.width, tt.wide, s, got)
			}
		}
	}
}
