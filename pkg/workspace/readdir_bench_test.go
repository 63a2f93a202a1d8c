package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// BenchmarkReadDir lists a directory of 1,000 files through the confined
// API, as list_directory does (report the cost per call, with CPU time).
func BenchmarkReadDir(b *testing.B) {
	m := newManager(b, nil, Options{})
	w := mustOpen(b, m, artifacts.SessionScope("app", "u", "s"))
	if err := os.Mkdir(filepath.Join(w.Path(), "list"), 0o700); err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		if err := os.WriteFile(filepath.Join(w.Path(), "list", fmt.Sprintf("f%04d.txt", i)), []byte("x"), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		ents, err := w.ReadDir("list")
		if err != nil || len(ents) != 1000 {
			b.Fatalf("%d entries, %v", len(ents), err)
		}
	}
}
