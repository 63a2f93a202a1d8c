package workspace

import (
	"context"
	"os"
	"testing"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// TestDirHold: confined calls hold the directory's shared lock only while
// they run (the first of concurrent calls takes it, the last lets go), so
// a sweep can lock an idle workspace; a directory replaced under the
// workspace fails the call with CodeConflict, and opening again serves
// the new one.
func TestDirHold(t *testing.T) {
	m := newManager(t, nil, Options{})
	scope := artifacts.SessionScope("app", "u", "s")
	w := mustOpen(t, m, scope)
	sweepCanLock := func() bool {
		t.Helper()
		f, err := os.Open(w.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		held, err := osutil.TryLockExclusive(f)
		if err != nil {
			t.Fatal(err)
		}
		return held
	}
	steps := []struct {
		name string
		do   func() error
		want bool // a sweep can lock afterwards
	}{
		{"idle", func() error { return nil }, true},
		{"first call", w.enter, false},
		{"second call", w.enter, false},
		{"second done", func() error { w.leave(); return nil }, false},
		{"first done", func() error { w.leave(); return nil }, true},
		{"a listing", func() error { _, err := w.ReadDir("."); return err }, true},
		{"a stat", func() error { _, err := w.Stat("."); return err }, true},
	}
	w.mu.RLock()
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := sweepCanLock(); got != s.want {
			t.Errorf("after %s: a sweep can lock: %v, want %v", s.name, got, s.want)
		}
		if s.name == "first done" {
			w.mu.RUnlock()
		}
	}

	if err := os.Rename(w.Path(), w.Path()+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(w.Path(), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ReadDir("."); artifacts.CodeOf(err) != artifacts.CodeConflict {
		t.Fatalf("listing a replaced directory: %v", err)
	}
	if !sweepCanLock() {
		t.Error("a refused call kept the lock")
	}
	w2, err := m.Open(context.Background(), scope)
	if err != nil || w2 != w {
		t.Fatalf("open again: %v", err)
	}
	if _, err := w.ReadDir("."); err != nil {
		t.Fatalf("listing after opening again: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.hold.f != nil {
		t.Error("Close left the directory descriptor open")
	}
}
