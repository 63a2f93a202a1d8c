package artifactscmd

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOutputPath checks where -O writes: a file path as given, a directory
// (existing, or ending in a slash) joined with the name's last element.
func TestOutputPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ o, name, want string }{
		{file, "a/b.txt", file},
		{filepath.Join(dir, "new.txt"), "a/b.txt", filepath.Join(dir, "new.txt")},
		{dir, "a/b.txt", filepath.Join(dir, "b.txt")},
		{dir, "plain", filepath.Join(dir, "plain")},
		{dir, "user:profile.md", filepath.Join(dir, "user:profile.md")},
		{"missing/", "x/y", filepath.Join("missing", "y")},
	} {
		got, err := outputPath(tc.o, tc.name)
		if err != nil || got != tc.want {
			t.Errorf("outputPath(%q, %q) = %q, %v; want %q", tc.o, tc.name, got, err, tc.want)
		}
	}
	if got, err := outputPath(dir, "a/.."); err == nil {
		t.Errorf("outputPath(dir, %q) = %q; want a usage error", "a/..", got)
	}
}
