package zipsafe_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// TestInstall: the tree fill makes replaces the target whole, with the
// keep names carried over; a failing fill leaves the target as it was
// and no temporary directory behind.
func TestInstall(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		fill    func(r *os.Root) error
		wantErr error
		want    map[string]string
	}{
		{"success", func(r *os.Root) error { return r.WriteFile("new", []byte("n"), 0o600) }, nil, map[string]string{"new": "n", "kept": "k"}},
		{"fill fails", func(r *os.Root) error {
			r.WriteFile("half", []byte("h"), 0o600)
			return boom
		}, boom, map[string]string{"old": "o", "kept": "k"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			target := filepath.Join(parent, "t")
			os.Mkdir(target, 0o700)
			os.WriteFile(filepath.Join(target, "old"), []byte("o"), 0o600)
			os.WriteFile(filepath.Join(target, "kept"), []byte("k"), 0o600)
			err := zipsafe.Install(target, []string{"kept"}, tc.fill)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Install: %v, want %v", err, tc.wantErr)
			}
			ents, _ := os.ReadDir(target)
			got := map[string]string{}
			for _, e := range ents {
				b, _ := os.ReadFile(filepath.Join(target, e.Name()))
				got[e.Name()] = string(b)
			}
			if len(got) != len(tc.want) {
				t.Errorf("target holds %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("target holds %v, want %v", got, tc.want)
				}
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 1 {
				t.Errorf("the parent holds %d entries: temporary directories left", len(ents))
			}
		})
	}
	if err := zipsafe.Install(filepath.Join(t.TempDir(), "x"), []string{"a/b"}, func(*os.Root) error { return nil }); zipsafe.CodeOf(err) != zipsafe.CodeUnsafePath {
		t.Errorf("a keep name with a slash: %v", err)
	}
}
