package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/pkg/workspace"
)

// The testscript command of store_naming.txtar:
//
//	store-named STORE URI LAYOUT APP USER SESSION NAME
//
// runs every command whose output names the store (artifacts list,
// store-wide and per scope, versions, delete's plan and its result,
// prune's plan, quota report, and ws list, snapshot, hydrate, sweep and
// delete) with --store STORE on the session scope APP/USER/SESSION and its
// artifact NAME (which must have at least two versions), once with
// -o table and once with -o json. Each must exit with the status the
// table below gives in both modes, its table must start with the line
// "Store URI (LAYOUT)" (the ws commands' with "Scratch DIR" next, or a plan
// naming the scratch root), and its
// JSON object must hold "store": URI and "layout": LAYOUT at the top level
// (quota report: "uri" and "layout" inside "store"; the ws commands also
// "scratch": DIR). The scratch root is $WORK/scratch-LAYOUT, made with one
// workspace for the session.
func init() {
	scriptCmds["store-named"] = cmdStoreNamed
}

// namedRun is one command of store-named: its arguments after the global
// ones, the exit status it must end with, whether it is a ws command
// (naming the scratch root), and whether its JSON names the store inside
// "store" (quota report).
type namedRun struct {
	args   []string
	status int
	ws     bool
	nested bool
}

func cmdStoreNamed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 7 {
		ts.Fatalf("usage: store-named STORE URI LAYOUT APP USER SESSION NAME")
	}
	store, uri, layout, app, user, session, name := args[0], args[1], args[2], args[3], args[4], args[5], args[6]
	scratch := ts.MkAbs("scratch-" + layout)
	dir := filepath.Join(scratch, workspace.DirName(app, user, session))
	ts.Check(os.MkdirAll(dir, 0o700))
	index := fmt.Sprintf(`{"format":"agentstore-workspace-index/1","app":%q,"user":%q,"session":%q,"created":"2020-01-01T00:00:00Z","last_access":"2020-01-01T00:00:00Z"}`, app, user, session)
	ts.Check(os.WriteFile(filepath.Join(dir, ".agentstore-index"), []byte(index), 0o600))
	ts.Check(os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("store naming\n"), 0o600))
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	ts.Check(os.Chtimes(filepath.Join(dir, "notes.txt"), old, old))
	ts.Check(os.Chtimes(dir, old, old))

	global := []string{"--store", store, "--scratch", scratch}
	scope := []string{"--app", app, "--user", user, "--session", session}
	versions := namedVersions(ts, global, scope, name)
	if len(versions) < 2 {
		ts.Fatalf("store-named: %q has %d versions, want at least 2", name, len(versions))
	}
	del := append(append([]string{"artifacts", "delete"}, scope...), "--name", name, "--allow-number-reuse")
	runs := []namedRun{
		{args: []string{"artifacts", "list"}},
		{args: append([]string{"artifacts", "list"}, scope...)},
		{args: append(append([]string{"artifacts", "versions"}, scope...), "--name", name)},
		{args: append(del[:len(del):len(del)], "--version", strconv.FormatInt(versions[0], 10)), status: 4},
		{args: []string{"artifacts", "prune", "--app", app, "--keep-last", "1"}, status: 4},
		{args: []string{"quota", "report"}, nested: true},
		{args: []string{"ws", "list"}, ws: true},
		{args: append([]string{"ws", "snapshot"}, scope...), ws: true},
		{args: append([]string{"ws", "hydrate"}, scope...), ws: true},
		{args: []string{"ws", "sweep", "--idle", "1h", "--dry-run"}, ws: true},
		{args: append([]string{"ws", "delete", "--discard"}, scope...), ws: true, status: 4},
	}
	for _, r := range runs {
		for _, format := range []string{"table", "json"} {
			out := namedExec(ts, r.status, append(append(append([]string{}, global...), "-o", format), r.args...))
			checkNamed(ts, r, format, out, uri, layout, scratch)
		}
	}
	// The result of a confirmed delete: one version in each mode.
	for i, format := range []string{"table", "json"} {
		plan := append(del[:len(del):len(del)], "--version", strconv.FormatInt(versions[i], 10))
		namedExec(ts, 4, append(append(append([]string{}, global...), "-o", "json"), plan...))
		var p struct {
			PlanID string `json:"plan_id"`
			Layout string `json:"layout"`
		}
		ts.Check(json.Unmarshal([]byte(ts.ReadFile("stdout")), &p))
		if p.Layout != layout {
			ts.Fatalf("delete plan: layout %q, want %q", p.Layout, layout)
		}
		r := namedRun{args: append(plan, "--confirm", p.PlanID)}
		out := namedExec(ts, 0, append(append(append([]string{}, global...), "-o", format), r.args...))
		checkNamed(ts, r, format, out, uri, layout, scratch)
	}
}

// namedVersions returns the versions of name, oldest first.
func namedVersions(ts *testscript.TestScript, global, scope []string, name string) []int64 {
	out := namedExec(ts, 0, append(append(append(append([]string{}, global...), "-o", "json", "artifacts", "versions"), scope...), "--name", name))
	var res struct {
		Items []struct {
			Version int64 `json:"version"`
		} `json:"items"`
	}
	ts.Check(json.Unmarshal([]byte(out), &res))
	var vs []int64
	for _, it := range res.Items {
		vs = append(vs, it.Version)
	}
	return vs
}

// namedExec runs agentstore with args, checks its exit status and returns
// its stdout.
func namedExec(ts *testscript.TestScript, status int, args []string) string {
	got := 0
	if err := ts.Exec("agentstore", args...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%q: %v", args, err)
		}
		got = ee.ExitCode()
	}
	if got != status {
		ts.Fatalf("%q: exit status %d, want %d; stderr:\n%s", args, got, status, ts.ReadFile("stderr"))
	}
	return ts.ReadFile("stdout")
}

// checkNamed checks that out, the output of r in format, names the store
// uri, its layout and (for ws commands) the scratch root.
func checkNamed(ts *testscript.TestScript, r namedRun, format, out, uri, layout, scratch string) {
	what := strings.Join(r.args, " ") + " -o " + format
	if format == "table" {
		lines := strings.SplitN(out, "\n", 3)
		if want := "Store " + uri + " (" + layout + ")"; lines[0] != want {
			ts.Fatalf("%s: first line %q, want %q", what, lines[0], want)
		}
		// The scratch line, which a dry run marks as such; a plan names
		// the scratch root among its own lines.
		want := "Scratch " + scratch
		if r.ws && (len(lines) < 2 || (lines[1] != want && !strings.HasPrefix(lines[1], want+" (") &&
			!strings.Contains(out, "\n  scratch:  "+scratch+"\n"))) {
			ts.Fatalf("%s: second line %q, want %q", what, lines[1:], want)
		}
		return
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		ts.Fatalf("%s: %v\n%s", what, err, out)
	}
	names := v
	if r.nested {
		names, _ = v["store"].(map[string]any)
		if names["uri"] != uri {
			ts.Fatalf("%s: store.uri %v, want %q", what, names["uri"], uri)
		}
	} else if v["store"] != uri {
		ts.Fatalf("%s: store %v, want %q", what, v["store"], uri)
	}
	if names["layout"] != layout {
		ts.Fatalf("%s: layout %v, want %q", what, names["layout"], layout)
	}
	if r.ws && v["scratch"] != scratch {
		ts.Fatalf("%s: scratch %v, want %q", what, v["scratch"], scratch)
	}
}
