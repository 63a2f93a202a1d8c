package quotacmd

import (
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/quota"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "1048576": 1 << 20, "512MiB": 512 << 20, "4GiB": 4 << 30, "1.5K": 1536, "2 gb": 2 << 30} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"12parsecs", "-1", "0", "GiB", "1e30"} {
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
		if err := printTable(ios, "/s", testReport(), time.Unix(0, 0)); err != nil {
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
	if err := printTable(ios, "/s", testReport(), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Errorf("--no-color table has escapes:\n%s", out.String())
	}
}
