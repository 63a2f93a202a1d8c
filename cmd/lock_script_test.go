package cmd

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/lock/gcslock"
)

// The testscript command of the scripts about Cloud Storage store locks,
// on the emulator gcs-emulator starts:
//
//	gcs-lock hold BUCKET OBJECT     take the lock object in this (live) process
//	gcs-lock release BUCKET OBJECT  release it
//	gcs-lock dead BUCKET OBJECT     write one of a process of this host that is gone
//	gcs-lock old BUCKET OBJECT      write one of another host, last refreshed 7 h ago
func init() {
	scriptCmds["gcs-lock"] = cmdGCSLock
}

// heldGCSLocks are the locks gcs-lock hold took, by bucket and object,
// guarded by heldMu (scripts run in parallel).
var heldGCSLocks = map[string]*lock.Lock{}

func cmdGCSLock(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "gcs-lock")
	if len(args) != 3 {
		ts.Fatalf("usage: gcs-lock hold|release|dead|old BUCKET OBJECT")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The client outlives ctx: a held lock's heartbeat uses it.
	c := emulatorClient(ts, context.Background())
	b := gcslock.New(c, args[1], args[2])
	key := args[1] + "/" + args[2]
	host, _ := os.Hostname()
	write := func(info lock.Info, heartbeat time.Time) {
		raw, err := json.Marshal(info)
		ts.Check(err)
		ts.Check(b.Create(ctx, raw, heartbeat))
		c.Close()
	}
	switch args[0] {
	case "hold":
		l, err := lock.AcquireBackend(ctx, b, lock.Options{Purpose: "fs repair (test holder)"})
		ts.Check(err)
		heldMu.Lock()
		heldGCSLocks[key] = l
		heldMu.Unlock()
		ts.Defer(func() { l.Release(); c.Close() })
	case "release":
		heldMu.Lock()
		l := heldGCSLocks[key]
		delete(heldGCSLocks, key)
		heldMu.Unlock()
		if l == nil {
			ts.Fatalf("lock %s not held", key)
		}
		ts.Check(l.Release())
		c.Close()
	case "dead":
		p := exec.Command("true")
		ts.Check(p.Run())
		write(lock.Info{Host: host, PID: p.Process.Pid, Purpose: "fs repair", Token: "dead", Started: time.Now()}, time.Now())
	case "old":
		write(lock.Info{Host: "elsewhere.invalid", PID: 1, Purpose: "fs repair", Token: "old", Started: time.Now().Add(-8 * time.Hour)}, time.Now().Add(-7*time.Hour))
	default:
		ts.Fatalf("usage: gcs-lock hold|release|dead|old BUCKET OBJECT")
	}
}
