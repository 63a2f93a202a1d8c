package iostreams

import (
	"strings"
	"testing"
)

func TestColorAndProgressDecisions(t *testing.T) {
	tests := []struct {
		name                    string
		outTTY, errTTY          bool
		noColorFlag, noColorEnv bool
		wantColor, wantProgress bool
	}{
		{"all terminals", true, true, false, false, true, true},
		{"stdout piped", false, true, false, false, false, true},
		{"stderr piped", true, false, false, false, true, false},
		{"nothing a terminal", false, false, false, false, false, false},
		{"--no-color", true, true, true, false, false, true},
		{"NO_COLOR", true, true, false, true, false, true},
		{"both", true, true, true, true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := Test()
			ios.SetStdoutTTY(tt.outTTY)
			ios.SetStderrTTY(tt.errTTY)
			ios.SetColorDisabled(tt.noColorFlag)
			ios.SetNoColorEnv(tt.noColorEnv)
			if got := ios.ColorEnabled(); got != tt.wantColor {
				t.Errorf("ColorEnabled() = %v, want %v", got, tt.wantColor)
			}
			if got := ios.ProgressEnabled(); got != tt.wantProgress {
				t.Errorf("ProgressEnabled() = %v, want %v", got, tt.wantProgress)
			}
			bold := ios.Renderer().NewStyle().Bold(true).Render("x")
			if hasEsc := strings.Contains(bold, "\x1b["); hasEsc != tt.wantColor {
				t.Errorf("Renderer bold %q: escape = %v, want %v", bold, hasEsc, tt.wantColor)
			}
		})
	}
}

func TestTestStreams(t *testing.T) {
	ios, in, out, errOut := Test()
	if ios.IsStdinTTY() || ios.IsStdoutTTY() || ios.IsStderrTTY() {
		t.Fatal("Test streams must start as non-terminals")
	}
	in.WriteString("input")
	b := make([]byte, 5)
	if n, _ := ios.In.Read(b); string(b[:n]) != "input" {
		t.Errorf("In read %q", b[:n])
	}
	ios.Out.Write([]byte("o"))
	ios.ErrOut.Write([]byte("e"))
	if out.String() != "o" || errOut.String() != "e" {
		t.Errorf("out %q err %q", out, errOut)
	}
	ios.SetStdinTTY(true)
	if !ios.IsStdinTTY() {
		t.Error("SetStdinTTY(true) not honoured")
	}
}

func TestTerminalWidth(t *testing.T) {
	ios, _, _, _ := Test()
	if got := ios.TerminalWidth(); got != DefaultWidth {
		t.Errorf("default width %d, want %d", got, DefaultWidth)
	}
	ios.SetTerminalWidth(40)
	if got := ios.TerminalWidth(); got != 40 {
		t.Errorf("width %d, want 40", got)
	}
	ios.SetTerminalWidth(0)
	ios.widthFunc = func() (int, bool) { return 0, false }
	if got := ios.TerminalWidth(); got != DefaultWidth {
		t.Errorf("unmeasurable width %d, want %d", got, DefaultWidth)
	}
	ios.widthFunc = func() (int, bool) { return 77, true }
	if got := ios.TerminalWidth(); got != 77 {
		t.Errorf("measured width %d, want 77", got)
	}
}

func TestSystem(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	ios := System()
	ios.SetStdoutTTY(true)
	if ios.ColorEnabled() {
		t.Error("NO_COLOR=1 must disable colour")
	}
	t.Setenv("NO_COLOR", "")
	ios = System()
	ios.SetStdoutTTY(true)
	if !ios.ColorEnabled() {
		t.Error("empty NO_COLOR must not disable colour")
	}
}
