package cmd

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// Script commands of the sharded_*.txtar and layout_*.txtar scripts.
func init() {
	scriptCmds["shardedfixture"] = cmdShardedFixture
	scriptCmds["sharded-check-fixture"] = cmdShardedCheckFixture
	scriptCmds["scopehash"] = cmdScopeHash
	scriptCmds["every-command"] = cmdEveryCommand
}

// storeCommands are the commands that open --store, with the arguments
// each needs besides --store and -o json; writers last (writeCommands).
var storeCommands = [][]string{
	{"artifacts", "list"},
	{"artifacts", "list", "--app", "a", "--user", "u", "--session", "s"},
	{"artifacts", "versions", "--app", "a", "--user", "u", "--session", "s", "--name", "n"},
	{"artifacts", "delete", "--app", "a", "--user", "u", "--session", "s", "--name", "n", "--latest"},
	{"fs", "verify"},
	{"fs", "repair"},
	{"fs", "repair", "--dry-run"},
	{"quota", "report"},
	{"ws", "list", "--scratch", "scratch"},
	{"ws", "hydrate", "--scratch", "scratch", "--app", "a", "--user", "u", "--session", "s"},
	{"ws", "snapshot", "--scratch", "scratch", "--app", "a", "--user", "u", "--session", "s"},
	{"ws", "sweep", "--scratch", "scratch", "--idle", "1h"},
}

// writeCommands is how many of storeCommands, at its end, write (and so
// may make a store where there is none).
const writeCommands = 2

// cmdEveryCommand runs every command that opens a store against STORE and
// checks that each exits with status N and reports error CODE, with the
// message matching PATTERN: every-command [-reads] STORE N CODE PATTERN.
// With -reads only the commands that never write run. The scripts check
// separately that nothing changed.
func cmdEveryCommand(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "every-command")
	cmds := storeCommands
	if len(args) > 0 && args[0] == "-reads" {
		cmds, args = storeCommands[:len(storeCommands)-writeCommands], args[1:]
	}
	if len(args) != 4 {
		ts.Fatalf("usage: every-command [-reads] STORE N CODE PATTERN")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	re, err := regexp.Compile(args[3])
	ts.Check(err)
	for _, c := range cmds {
		argv := append(slices.Clone(c), "--store", args[0], "-o", "json")
		err := ts.Exec("agentstore", argv...)
		got := 0
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			got = ee.ExitCode()
		default:
			ts.Fatalf("%s: %v", strings.Join(argv, " "), err)
		}
		var e struct {
			Error struct{ Code, Message string }
		}
		stderr := ts.ReadFile("stderr")
		_ = json.Unmarshal([]byte(stderr), &e)
		if got != want || e.Error.Code != args[2] || !re.MatchString(e.Error.Message) {
			ts.Fatalf("agentstore %s: exit %d, stderr %q; want exit %d, code %s, message matching %q", strings.Join(argv, " "), got, stderr, want, args[2], args[3])
		}
	}
}

// cmdScopeHash sets $VAR to the hash of a scope (” for absent parts):
// scopehash APP USER SESSION VAR.
func cmdScopeHash(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "scopehash")
	if len(args) != 4 {
		ts.Fatalf("usage: scopehash APP USER SESSION VAR")
	}
	sc := artifacts.AppScope(args[0])
	switch {
	case args[2] != "":
		sc = artifacts.SessionScope(args[0], args[1], args[2])
	case args[1] != "":
		sc = artifacts.UserScope(args[0], args[1])
	}
	ts.Setenv(args[3], sc.Hash())
}

// cmdShardedFixture copies the Erlang sharded fixture (Erlang ADK 0.10
// durable_local) to DIR and ages, as its README says, the orphan payload
// of the interrupted put (bulk/s-3 log.txt v-9.data) past the grace
// period: shardedfixture DIR.
func cmdShardedFixture(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "shardedfixture")
	if len(args) != 1 {
		ts.Fatalf("usage: shardedfixture DIR")
	}
	root, err := testfixtures.CopyShardedFSStore(ts.MkAbs(args[0]))
	ts.Check(err)
	sc := artifacts.SessionScope("shard-a", "bulk", "s-3")
	p := filepath.Join(root, "scope-shards", sc.Hash(), fsstore.LayoutDir, fsstore.ScopesDir, sc.Hash(), fsstore.NamesDir, artifacts.NameHash("log.txt"), fsstore.VersionFile(9, "data"))
	old := time.Now().Add(-time.Hour)
	ts.Check(os.Chtimes(p, old, old))
}

// cmdShardedCheckFixture checks with agentstore, exactly, every version of
// every name of the sharded fixture copied to DIR against what the Erlang
// library decoded: sharded-check-fixture DIR.
func cmdShardedCheckFixture(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "sharded-check-fixture")
	if len(args) != 1 {
		ts.Fatalf("usage: sharded-check-fixture DIR")
	}
	exp, err := testfixtures.ExpectedShardedFS()
	ts.Check(err)
	checkFixture(ts, ts.MkAbs(args[0]), exp, 28, 66)
}
