package workspace

import (
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
	for _, tt := range tests {
		ents, err := w.ReadDir(tt.name)
		if tt.code != "" {
			if artifacts.CodeOf(err) != tt.code {
				t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []string
		for _, e := range ents {
			kind := "file"
			switch {
			case e.IsDir():
				kind = "dir"
			case e.Type()&os.ModeSymlink != 0:
				kind = "link"
			}
			got = append(got, e.Name()+":"+kind)
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
}
