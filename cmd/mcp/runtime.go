package mcpcmd

import "runtime"

// tuneStdioRuntime sets the Go runtime for a stdio server, which serves
// one session's calls one after another, each a few hundred microseconds
// of work: one processor (GOMAXPROCS=1), so that handing a message from
// the reader to the handler to the writer does not wake other threads,
// each wake-up a context switch that costs more than the call's own work.
// A GOMAXPROCS the environment sets is kept. (The TypeScript SDK's stdio
// client passes only a few environment variables to the server it spawns,
// so this is set here rather than left to the runtime's configuration.)
// The garbage collector keeps its defaults: a larger heap goal (GOGC=400,
// with a soft memory limit) made a 1 KiB read slower, not faster; see
// docs/performance.md.
func tuneStdioRuntime(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
