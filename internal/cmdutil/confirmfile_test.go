package cmdutil

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/plan"
)

func TestReadConfirmFile(t *testing.T) {
	read := func(r io.Reader) (string, error) {
		b, err := io.ReadAll(r)
		return string(b), err
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, []byte("from the file"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadConfirmFile(strings.NewReader("from stdin"), "-", read); err != nil || got != "from stdin" {
		t.Errorf("-: %q, %v", got, err)
	}
	if got, err := ReadConfirmFile(strings.NewReader("from stdin"), file, read); err != nil || got != "from the file" {
		t.Errorf("file: %q, %v", got, err)
	}
	_, err := ReadConfirmFile(nil, filepath.Join(t.TempDir(), "missing.json"), read)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--confirm-file") {
		t.Errorf("missing file: %v, want a usage error naming --confirm-file", err)
	}
	boom := errors.New("boom")
	if _, err := ReadConfirmFile(strings.NewReader(""), "-", func(io.Reader) (int, error) { return 0, boom }); err != boom {
		t.Errorf("read's error: %v, want it unchanged", err)
	}
}

func TestConfirmUsage(t *testing.T) {
	var ue *UsageError
	if err := ConfirmUsage(&plan.ParseError{}); !errors.As(err, &ue) {
		t.Errorf("parse error: %v, want a usage error", err)
	}
	other := errors.New("other")
	if err := ConfirmUsage(other); err != other {
		t.Errorf("other: %v, want it unchanged", err)
	}
	if ConfirmUsage(nil) != nil {
		t.Error("nil")
	}
}

func TestReadConfirmation(t *testing.T) {
	parse := func(s string) (string, error) {
		if s == "" {
			return "", &plan.ParseError{}
		}
		return "parsed " + s, nil
	}
	read := func(r io.Reader) (string, error) {
		b, err := io.ReadAll(r)
		return "read " + string(b), err
	}
	other := errors.New("other")
	tests := []struct {
		name      string
		set       bool
		value     string
		file      string
		read      func(io.Reader) (string, error)
		want      string // "" for nil
		usage     bool
		unchanged error
	}{
		{name: "neither flag", read: read},
		{name: "--confirm", set: true, value: "p1", read: read, want: "parsed p1"},
		{name: "--confirm wins over a file", set: true, value: "p1", file: "-", read: read, want: "parsed p1"},
		{name: "--confirm not a plan", set: true, read: read, usage: true},
		{name: "--confirm-file -", file: "-", read: read, want: "read from stdin"},
		{name: "--confirm-file missing", file: filepath.Join(t.TempDir(), "missing.json"), read: read, usage: true},
		{name: "--confirm-file not a plan", file: "-", read: func(io.Reader) (string, error) { return "", &plan.ParseError{} }, usage: true},
		{name: "other errors unchanged", file: "-", read: func(io.Reader) (string, error) { return "", other }, unchanged: other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadConfirmation(tt.set, tt.value, tt.file, strings.NewReader("from stdin"), parse, tt.read)
			var ue *UsageError
			switch {
			case tt.usage:
				if !errors.As(err, &ue) || got != nil {
					t.Errorf("got %v, %v; want a usage error and no plan", got, err)
				}
			case tt.unchanged != nil:
				if err != tt.unchanged || got != nil {
					t.Errorf("got %v, %v; want %v unchanged", got, err, tt.unchanged)
				}
			case err != nil:
				t.Errorf("error %v", err)
			case tt.want == "" && got != nil:
				t.Errorf("got %q, want nil", *got)
			case tt.want != "" && (got == nil || *got != tt.want):
				t.Errorf("got %v, want %q", got, tt.want)
			}
		})
	}
}
