package output

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/agentstore/agentstore/internal/iostreams"
)

func TestJSON(t *testing.T) {
	var b bytes.Buffer
	if err := JSON(&b, map[string]any{"a": "<x&y>", "b": []int{1}}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": \"<x&y>\",\n  \"b\": [\n    1\n  ]\n}\n"
	if b.String() != want {
		t.Errorf("JSON = %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := JSONLine(&b, map[string]string{"k": "<v>"}); err != nil {
		t.Fatal(err)
	}
	if b.String() != "{\"k\":\"<v>\"}\n" {
		t.Errorf("JSONLine = %q", b.String())
	}
}

func TestSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1024*1024 - 1, "1.0 MiB"},
		{3 * 1024 * 1024, "3.0 MiB"},
		{5 << 30, "5.0 GiB"},
		{1 << 40, "1.0 TiB"},
		{math.MaxInt64, "8.0 EiB"},
		{-1536, "-1.5 KiB"},
	}
	for _, tt := range tests {
		if got := Size(tt.n); got != tt.want {
			t.Errorf("Size(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestTime(t *testing.T) {
	tm := time.Date(2026, 11, 29, 23, 12, 21, 123456789, time.FixedZone("CET", 3600))
	if got := Time(tm); got != "2026-11-29T22:12:21.123Z" {
		t.Errorf("Time = %q", got)
	}
	if got := Time(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); got != "2026-01-02T03:04:05.000Z" {
		t.Errorf("Time whole second = %q", got)
	}
	if got := TimeMS(tm.UnixMilli()); got != "2026-11-29T22:12:21.123Z" {
		t.Errorf("TimeMS = %q", got)
	}
	if Time(time.Time{}) != "" {
		t.Error("zero time must format as empty")
	}
}

func TestRelativeTime(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		d    time.Duration
		want string
	}{
		{10 * time.Second, "just now"},
		{-10 * time.Second, "just now"},
		{time.Minute, "1 minute ago"},
		{5 * time.Minute, "5 minutes ago"},
		{-2 * time.Hour, "in 2 hours"},
		{3 * 24 * time.Hour, "3 days ago"},
		{60 * 24 * time.Hour, "2 months ago"},
		{400 * 24 * time.Hour, "2025-10-25"},
	}
	for _, tt := range tests {
		if got := RelativeTime(now, now.Add(-tt.d)); got != tt.want {
			t.Errorf("RelativeTime(-%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	ios, _, _, _ := iostreams.Test()
	at := now.Add(-5 * time.Minute)
	if got := HumanTime(ios, now, at); got != "2026-11-29T11:55:00.000Z" {
		t.Errorf("HumanTime off a terminal = %q", got)
	}
	ios.SetStdoutTTY(true)
	if got := HumanTime(ios, now, at); got != "5 minutes ago" {
		t.Errorf("HumanTime on a terminal = %q", got)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		s     string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 10, "abcde…ijkl"},
		{"abcdefghijkl", 2, "a…"},
		{"abcdefghijkl", 1, "…"},
		{"abcdefghijkl", 0, ""},
		{"日本語のなまえです", 9, "日本…です"},
		{"line\nbreak-and-more", 12, `line\n…-more`},
	}
	for _, tt := range tests {
		got := Truncate(tt.s, tt.width)
		if got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
		if w := lipgloss.Width(got); w > max(tt.width, 0) {
			t.Errorf("Truncate(%q, %d) is %d wide", tt.s, tt.width, w)
		}
	}
}

func TestTableNonTerminal(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetTerminalWidth(20) // ignored off a terminal
	tb := NewTable(ios, "NAME", "SIZE", "CREATED")
	tb.Row("report.pdf", Size(1536), "2026-11-29T22:12:21.123Z")
	tb.Row("a-very-long-name-that-is-never-truncated-off-a-terminal", "12 B")
	tb.Row("tab\there")
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME                                                     SIZE     CREATED\n" +
		"report.pdf                                               1.5 KiB  2026-11-29T22:12:21.123Z\n" +
		"a-very-long-name-that-is-never-truncated-off-a-terminal  12 B\n" +
		"tab\\there\n"
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestTableTerminalTruncates(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetStdoutTTY(true)
	ios.SetColorDisabled(true)
	ios.SetTerminalWidth(40)
	tb := NewTable(ios, "ID", "NAME", "N")
	tb.NoTruncate(2)
	tb.Row("0123456789abcdef0123456789abcdef", "some/long/artifact/name.txt", "12345")
	tb.Row("x", "y", "1")
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if w := lipgloss.Width(line); w > 40 {
			t.Errorf("line %q is %d wide, more than 40", line, w)
		}
	}
	if !strings.Contains(out.String(), "…") || !strings.Contains(out.String(), "12345") {
		t.Errorf("want a truncated id and the whole counter:\n%s", out.String())
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("colour off but escapes printed:\n%q", out.String())
	}
}

func TestTableColorHeader(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	ios.SetStdoutTTY(true)
	tb := NewTable(ios, "NAME", "SIZE")
	tb.Row("a", "1 B")
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "\x1b[1m") {
		t.Errorf("header not bold: %q", lines[0])
	}
	if strings.Contains(lines[1], "\x1b") {
		t.Errorf("row styled: %q", lines[1])
	}
	if got := lipgloss.Width(lines[0]); got != len("NAME  SIZE") {
		t.Errorf("styled header is %d wide: %q", got, lines[0])
	}
}

func TestTableEmpty(t *testing.T) {
	ios, _, out, _ := iostreams.Test()
	tb := NewTable(ios, "NAME")
	if err := tb.Render(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "NAME\n" {
		t.Errorf("empty table = %q", out.String())
	}
	if tb.Len() != 0 {
		t.Errorf("Len = %d", tb.Len())
	}
}

func TestStyles(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	s := NewStyles(ios)
	if s.Bold("x") != "x" || s.Bad("x") != "x" || s.Warn("x") != "x" || s.OK("x") != "x" || s.Faint("x") != "x" {
		t.Error("styles must be plain without colour")
	}
	ios.SetStdoutTTY(true)
	s = NewStyles(ios)
	if !strings.Contains(s.Bad("x"), "\x1b[") {
		t.Errorf("Bad with colour = %q", s.Bad("x"))
	}
}

func TestProgress(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	p := NewProgress(ios)
	if _, ok := p.(NoProgress); !ok {
		t.Fatalf("off a terminal NewProgress = %T, want NoProgress", p)
	}
	p.Start("x")
	p.Update(1, 2)
	p.Done()
	if errOut.Len() != 0 {
		t.Errorf("NoProgress wrote %q", errOut)
	}

	ios.SetStderrTTY(true)
	if _, ok := NewProgress(ios).(*TextProgress); !ok {
		t.Fatal("on a terminal NewProgress must be a *TextProgress")
	}
	now := time.Unix(0, 0)
	var b bytes.Buffer
	tp := &TextProgress{W: &b, Now: func() time.Time { return now }, Interval: time.Second}
	tp.Update(9, 9) // before Start: ignored
	tp.Start("snapshot")
	tp.Update(1, 2048)             // too soon: not drawn
	now = now.Add(2 * time.Second) //
	tp.Update(12, 1536)
	tp.Done()
	tp.Done()
	tp.Update(5, 5)
	want := "\rsnapshot: 0 files, 0 B" +
		"\rsnapshot: 12 files, 1.5 KiB" +
		"\rsnapshot: 12 files, 1.5 KiB\n"
	if b.String() != want {
		t.Errorf("progress = %q, want %q", b.String(), want)
	}
}

// TestJSONEscapesHidden: DEL, C1 controls and bidirectional controls are
// written as \u escapes, and the value decodes back unchanged.
func TestJSONEscapesHidden(t *testing.T) {
	in := map[string]string{"name": "a\x7fb\u009bc\u202ed\U000E0001e\x1bf ü"}
	for _, write := range []func(io.Writer, any) error{JSON, JSONLine} {
		var buf bytes.Buffer
		if err := write(&buf, in); err != nil {
			t.Fatal(err)
		}
		got := buf.String()
		for _, raw := range []string{"\x7f", "\u009b", "\u202e", "\U000E0001", "\x1b"} {
			if strings.Contains(got, raw) {
				t.Errorf("%q holds %q raw", got, raw)
			}
		}
		if !strings.Contains(got, `a\u007fb\u009bc\u202ed\udb40\udc01e\u001bf ü`) {
			t.Errorf("escapes: %s", got)
		}
		var back map[string]string
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back["name"] != in["name"] {
			t.Errorf("round trip: %q %v", back["name"], err)
		}
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain ü 中":    "plain ü 中",
		"a\x1b[2Jb":    `a\x1b[2Jb`,
		"bell\a":       `bell\a`,
		"x\nnext: y":   `x\nnext: y`,
		"rtl\u202eexe": `rtl\u202eexe`,
		"c1\u009b":     `c1\u009b`,
		"bad\xff":      `bad\xff`,
		"sep\u2028":    `sep\u2028`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := EscapeLines("line one\x1b\n\tline two\u202e"); got != "line one\\x1b\n\tline two\\u202e" {
		t.Errorf("EscapeLines: %q", got)
	}
}

// TestJSONIndent: JSON writes what an Encoder with SetIndent("", "  ")
// writes, byte for byte, for values of every JSON shape, including strings
// that hold JSON punctuation, escapes and non-ASCII text.
func TestJSONIndent(t *testing.T) {
	type item struct {
		Name     string            `json:"name"`
		Versions []int64           `json:"versions"`
		Meta     map[string]string `json:"meta,omitempty"`
		Raw      json.RawMessage   `json:"raw,omitempty"`
		Next     *item             `json:"next,omitempty"`
	}
	tests := []struct {
		name string
		v    any
	}{
		{"empty object", map[string]any{}},
		{"empty array", []int{}},
		{"null", nil},
		{"number", 12.5},
		{"string", "a \"quoted\" {[,:]} \\ back\\\\slash"},
		{"nested empties", map[string]any{"a": map[string]any{}, "b": []any{}, "c": []any{map[string]any{}, []any{}}}},
		{"items", []item{
			{Name: `x{"y":[1,2]}`, Versions: []int64{0, 1}, Meta: map[string]string{"k:": ",v\\", "ü": "中 \u202e \x7f"}},
			{Name: "", Versions: nil, Raw: json.RawMessage(` { "a" : [ 1 , 2 ] , "b" : { } } `)},
			{Name: "n", Next: &item{Name: "deep", Versions: []int64{3}}},
		}},
		{"strings in arrays", [][]string{{"", "]", "\\", "\"", "\\\""}, {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(tt.v); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := JSON(&got, tt.v); err != nil {
				t.Fatal(err)
			}
			if w := escapeHidden(want.Bytes()); !bytes.Equal(got.Bytes(), w) {
				t.Errorf("JSON wrote\n%s\nwant\n%s", got.Bytes(), w)
			}
		})
	}
}

// FuzzIndent: for any JSON value, indent of its compact form (as an
// Encoder writes it, newline included) is byte for byte json.Indent's with
// prefix "" and indent "  "; input that is not JSON is skipped. Seeds:
// testdata/fuzz/FuzzIndent.
func FuzzIndent(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `null`, `"a\"b\\"`, `{"a":[1,{"b":{}},[]],"c":"x,y:{z}"}`, `[[[]],{"":""}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, in); err != nil {
			t.Fatal(err)
		}
		compact.WriteByte('\n')
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indent(nil, compact.Bytes()); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("indent(%q) =\n%q\nwant\n%q", compact.Bytes(), got, want.Bytes())
		}
	})
}
