package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

func TestReadDir(t *testing.T) {
	m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{})
	w := mustOpen(t, m, artifacts.SessionScope("app", "u", "s"))
	outside := t.TempDir()
	for _, p := range []string{"b.txt", "d/x.txt"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(w.Path(), p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.Path(), p), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(w.Path(), "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(w.Path(), "in")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want string
		code artifacts.Code
	}{
		{name: ".", want: "b.txt:file d:dir in:link out:link"},
		{name: "d", want: "x.txt:file"},
		{name: "b.txt", code: artifacts.CodeInvalidArgument},
		{name: "in", code: artifacts.CodeInvalidArgument},
		{name: "out", code: artifacts.CodePermission},
		{name: "none", code: artifacts.CodeNotFound},
		{name: "../x", code: artifacts.CodeInvalidArgument},
		{name: IndexName, code: artifacts.CodePermission},
	}
	kindOf := func(typ fs.FileMode) string {
		switch {
		case typ.IsDir():
			return "dir"
		case typ&os.ModeSymlink != 0:
			return "link"
		}
		return "file"
	}
	for _, tt := range tests {
		ents, err := w.ReadDir(tt.name)
		// EachEntry lists the same entries and fails the same way.
		var each []string
		eerr := w.EachEntry(tt.name, func(name []byte, typ fs.FileMode) { each = append(each, string(name)+":"+kindOf(typ)) })
		if tt.code != "" {
			if artifacts.CodeOf(err) != tt.code {
				t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
			}
			if eerr == nil || eerr.Error() != err.Error() {
				t.Errorf("%s: EachEntry: %v, want %v", tt.name, eerr, err)
			}
			continue
		}
		if eerr != nil || strings.Join(each, " ") != tt.want {
			t.Errorf("%s: EachEntry: %v, %v, want %s", tt.name, each, eerr, tt.want)
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name()+":"+kindOf(e.Type()))
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, got, tt.want)
		}
	}
	ref, err := OpenReference(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ents, err := ref.ReadDir(".")
	if err != nil || len(ents) != 5 { // the reference tree hides nothing
		t.Errorf("reference ReadDir: %d entries, %v", len(ents), err)
	}
	n := 0
	if err := ref.EachEntry(".", func([]byte, fs.FileMode) { n++ }); err != nil || n != 5 {
		t.Errorf("reference EachEntry: %d entries, %v", n, err)
	}
	if err := ref.EachEntry("b.txt", func([]byte, fs.FileMode) {}); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Errorf("reference EachEntry of a file: %v", err)
	}
}
