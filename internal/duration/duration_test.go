package duration

import (
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"0", 0},
		{"0s", 0},
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"1.5s", 1500 * time.Millisecond},
		{"250ms", 250 * time.Millisecond},
		{"10us", 10 * time.Microsecond},
		{"10µs", 10 * time.Microsecond},
		{"5ns", 5},
		{"1d", 24 * time.Hour},
		{"30d", 30 * 24 * time.Hour},
		{"2w", 14 * 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"1w1d1h1m1s", 8*24*time.Hour + time.Hour + time.Minute + time.Second},
		{" 5m ", 5 * time.Minute},
		{"+5m", 5 * time.Minute},
		{"36500d", Max},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "is not a duration: write numbers with units"},
		{"1", "(a unit is required)"},
		{"30", "(a unit is required)"},
		{"1d2", "(a unit is required)"},
		{"-1s", "(negative)"},
		{"5x", "is not a duration"},
		{"d", "is not a duration"},
		{"1..5s", "is not a duration"},
		{"soon", "is not a duration"},
		{"36501d", "(longer than 36500d)"},
		{"9999999999w", "(longer than 36500d)"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error", tt.in, got)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q): %v, want it to contain %q", tt.in, err, tt.want)
		}
		if artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
			t.Errorf("Parse(%q) code %s, want invalid_argument", tt.in, artifacts.CodeOf(err))
		}
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 1500 * time.Millisecond, 90 * time.Minute, 36 * time.Hour, 30 * 24 * time.Hour, 5*time.Minute + 7*time.Microsecond} {
		s := Format(d)
		back, err := Parse(s)
		if err != nil || back != d {
			t.Errorf("Parse(Format(%v) = %q) = %v, %v", d, s, back, err)
		}
	}
	if got := Format(0); got != "0s" {
		t.Errorf("Format(0) = %q, want 0s", got)
	}
}

func TestValue(t *testing.T) {
	var d time.Duration
	v := NewValue(&d, 5*time.Minute)
	if d != 5*time.Minute || v.String() != "5m0s" || v.Type() != "duration" {
		t.Fatalf("NewValue: d=%v String=%q Type=%q", d, v.String(), v.Type())
	}
	if err := v.Set("1d"); err != nil || d != 24*time.Hour {
		t.Fatalf("Set(1d): %v, d=%v", err, d)
	}
	// Go's own parser reads String back (viper and cast do).
	if back, err := time.ParseDuration(v.String()); err != nil || back != d {
		t.Errorf("time.ParseDuration(%q) = %v, %v", v.String(), back, err)
	}
	if err := v.Set("1"); err == nil || d != 24*time.Hour {
		t.Errorf("Set(1) = %v and changed d to %v; want an error and d unchanged", err, d)
	}
	var z time.Duration
	if s := NewValue(&z, 0).String(); s != "0" {
		t.Errorf("zero String = %q, want 0 (no default shown in help)", s)
	}
}
