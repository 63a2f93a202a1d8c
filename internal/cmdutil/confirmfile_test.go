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
