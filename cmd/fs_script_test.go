package cmd

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/promfile"
	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Script commands of the fs_*.txtar scripts.
func init() {
	scriptCmds["fsfixture"] = cmdFSFixture
	scriptCmds["listing"] = cmdListing
	scriptCmds["lockfile"] = cmdLockFile
	scriptCmds["promcheck"] = cmdPromCheck
}

// cmdFSFixture copies the Erlang filesystem fixture to DIR and ages, as its
// README says, the crashed staging files and the orphan payload of ok.bin
// past the grace period (v-5.data.tmp-* stays fresh): fsfixture DIR.
func cmdFSFixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: fsfixture DIR")
	}
	root, err := testfixtures.CopyFSStore(ts.MkAbs(args[0]))
	ts.Check(err)
	okBin := artifacts.NameHash("ok.bin")
	old := time.Now().Add(-time.Hour)
	var aged []string
	ts.Check(filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n := d.Name()
		if filepath.Base(filepath.Dir(p)) != okBin {
			return nil
		}
		if strings.HasPrefix(n, "v-3.data.tmp-") || n == "v-4.data" || strings.HasPrefix(n, "v-4.meta.tmp-") {
			aged = append(aged, p)
			return os.Chtimes(p, old, old)
		}
		return nil
	}))
	if len(aged) != 3 {
		ts.Fatalf("aged %d files, want 3", len(aged))
	}
}

// cmdListing writes every file and directory below DIR with its mode, size
// and modification time to FILE, for cmp: listing DIR FILE.
func cmdListing(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: listing DIR FILE")
	}
	root := ts.MkAbs(args[0])
	var lines []string
	ts.Check(filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		lines = append(lines, fmt.Sprintf("%s %v %d %d", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano()))
		return nil
	}))
	slices.Sort(lines)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
}

// heldLocks are the locks lockfile hold took, by path; scripts run in
// parallel, so heldMu guards it.
var (
	heldMu    sync.Mutex
	heldLocks = map[string]*lock.Lock{}
)

// cmdLockFile manages a repair lock file:
//
//	lockfile hold PATH     take it in this (live) process
//	lockfile release PATH  release it
//	lockfile dead PATH     write one of a process of this host that is gone
//	lockfile old PATH      write one of another host, last refreshed 7 h ago
func cmdLockFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: lockfile hold|release|dead|old PATH")
	}
	path := ts.MkAbs(args[1])
	host, _ := os.Hostname()
	write := func(info lock.Info, mtime time.Time) {
		b, err := json.Marshal(info)
		ts.Check(err)
		ts.Check(os.WriteFile(path, b, 0o600))
		ts.Check(os.Chtimes(path, mtime, mtime))
	}
	switch args[0] {
	case "hold":
		l, err := lock.Acquire(path, lock.Options{Purpose: "fs repair (test holder)"})
		ts.Check(err)
		heldMu.Lock()
		heldLocks[path] = l
		heldMu.Unlock()
		ts.Defer(func() { l.Release() })
	case "release":
		heldMu.Lock()
		l := heldLocks[path]
		delete(heldLocks, path)
		heldMu.Unlock()
		if l == nil {
			ts.Fatalf("lock %s not held", path)
		}
		ts.Check(l.Release())
	case "dead":
		c := exec.Command("true")
		ts.Check(c.Run())
		write(lock.Info{Host: host, PID: c.Process.Pid, Purpose: "fs repair", Token: "dead", Started: time.Now()}, time.Now())
	case "old":
		write(lock.Info{Host: "elsewhere.invalid", PID: 1, Purpose: "fs repair", Token: "old", Started: time.Now().Add(-8 * time.Hour)}, time.Now().Add(-7*time.Hour))
	default:
		ts.Fatalf("usage: lockfile hold|release|dead|old PATH")
	}
}

// cmdPromCheck checks that FILE is a Prometheus text-format file with no
// duplicate series and that it names every metric given: promcheck FILE
// [METRIC...].
func cmdPromCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: promcheck FILE [METRIC...]")
	}
	fams, err := promfile.Parse([]byte(ts.ReadFile(args[0])))
	if err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	for _, m := range args[1:] {
		f, ok := fams[m]
		if !ok || len(f.Series) != 1 {
			ts.Fatalf("%s: metric %s missing or not one series", args[0], m)
		}
	}
}
