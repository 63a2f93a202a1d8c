package mcpcmd

import (
	"runtime"
	"testing"
)

// TestTuneStdioRuntime: one processor unless the environment names its
// own GOMAXPROCS, which is kept.
func TestTuneStdioRuntime(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	for _, c := range []struct {
		name      string
		env       map[string]string
		wantProcs int
	}{
		{"nothing set", nil, 1},
		{"GOMAXPROCS set", map[string]string{"GOMAXPROCS": "3"}, 3},
		{"only other variables set", map[string]string{"GOGC": "50"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			runtime.GOMAXPROCS(3) // what the runtime would have from the environment
			tuneStdioRuntime(func(k string) string { return c.env[k] })
			if got := runtime.GOMAXPROCS(0); got != c.wantProcs {
				t.Errorf("GOMAXPROCS %d, want %d", got, c.wantProcs)
			}
		})
	}
}
