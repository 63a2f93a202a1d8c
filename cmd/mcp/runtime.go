package mcpcmd

import (
	"runtime"
	"runtime/debug"
)

// stdioGCPercent and stdioMemoryLimit are the garbage collector's
// settings for a stdio server (see tuneStdioRuntime).
const (
	stdioGCPercent   = 400
	stdioMemoryLimit = 256 << 20
)

// tuneStdioRuntime sets the Go runtime for a stdio server, which serves
// one session's calls one after another, each a few hundred microseconds
// of work: one processor (GOMAXPROCS=1), so that handing a message from
// the reader to the handler to the writer does not wake other threads,
// each wake-up a context switch that costs more than the call's own work;
// and a collection when the heap has grown to five times what is live
// (GOGC=400) instead of twice, capped by a soft limit of 256 MiB, so that
// a listing's few hundred kilobytes do not start a collection every few
// calls (the live heap of a session is a few megabytes). What the
// environment sets (GOMAXPROCS, GOGC, GOMEMLIMIT) is kept. Note that the
// TypeScript SDK's stdio client passes only a few environment variables
// to the server it spawns, so these settings must be made here.
func tuneStdioRuntime(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(stdioGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(stdioMemoryLimit)
	}
}
