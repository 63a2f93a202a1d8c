package mcpcmd

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

// TestTuneStdioRuntime: the stdio settings are made unless the
// environment names its own, which are kept.
func TestTuneStdioRuntime(t *testing.T) {
	procs, gc, limit := runtime.GOMAXPROCS(0), debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		runtime.GOMAXPROCS(procs)
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	})
	for _, c := range []struct {
		name                   string
		env                    map[string]string
		wantProcs, wantPercent int
		wantLimit              int64
	}{
		{"nothing set", nil, 1, stdioGCPercent, stdioMemoryLimit},
		{"all set", map[string]string{"GOMAXPROCS": "3", "GOGC": "50", "GOMEMLIMIT": "1GiB"}, 3, 50, math.MaxInt64},
		{"GOGC set", map[string]string{"GOGC": "50"}, 1, 50, stdioMemoryLimit},
	} {
		t.Run(c.name, func(t *testing.T) {
			// What the runtime would have from the environment.
			runtime.GOMAXPROCS(3)
			debug.SetGCPercent(50)
			debug.SetMemoryLimit(math.MaxInt64)
			tuneStdioRuntime(func(k string) string { return c.env[k] })
			if got := runtime.GOMAXPROCS(0); got != c.wantProcs {
				t.Errorf("GOMAXPROCS %d, want %d", got, c.wantProcs)
			}
			if got := debug.SetGCPercent(50); got != c.wantPercent {
				t.Errorf("GC percent %d, want %d", got, c.wantPercent)
			}
			if got := debug.SetMemoryLimit(-1); got != c.wantLimit {
				t.Errorf("memory limit %d, want %d", got, c.wantLimit)
			}
		})
	}
}
