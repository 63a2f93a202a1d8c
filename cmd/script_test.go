package cmd

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var updateScripts = flag.Bool("update-scripts", false, "rewrite the testscript files with the actual stdout/stderr")

// scriptCmds are the extra testscript commands available to every script in
// testdata/script. Add yours from an init function in your own _test.go
// file of package cmd:
//
//	func init() { scriptCmds["mycmd"] = func(ts *testscript.TestScript, neg bool, args []string) { ... } }
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"validjson": cmdValidJSON,
	"exitcode":  cmdExitCode,
}

// scriptSetups run, in order, after the standard environment of every
// script is set up. Add to it from an init function like scriptCmds.
var scriptSetups []func(env *testscript.Env) error

// scriptPrograms are the programs the scripts run, each this test binary
// under another name. Add to it from an init function like scriptCmds.
var scriptPrograms = map[string]func(){
	"agentstore": func() { os.Exit(Main()) },
}

func TestMain(m *testing.M) {
	testscript.Main(m, scriptPrograms)
}

// smokeScripts are the scripts of testdata/script that TestScripts runs in
// the default test tier (go test ./...): one or two per area, the commands
// users run most and the error paths every command shares. Every other
// script runs in the integration tier (go test -tags integration ./cmd,
// TestScriptsIntegration).
var smokeScripts = []string{
	"root_errors",
	"fs_verify",
	"artifacts_list",
	"artifacts_delete",
	"gcs_artifacts_list",
	"ws_snapshot_hydrate",
	"mcp_errors",
}

// TestScripts runs the smoke scripts (smokeScripts) with agentstore as a
// command; a name without its file fails the test.
func TestScripts(t *testing.T) {
	var files []string
	for _, name := range smokeScripts {
		f := filepath.Join("testdata", "script", name+".txtar")
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("smoke script %s: %v", name, err)
		}
		files = append(files, f)
	}
	runScripts(t, files)
}

// runScripts runs the end-to-end scripts files (testdata/script/*.txtar)
// with agentstore as a command. Each script gets a clean environment: HOME
// and XDG_CONFIG_HOME inside its work directory, no AGENTSTORE_* variables
// and no NO_COLOR.
func runScripts(t *testing.T, files []string) {
	if len(files) == 0 {
		t.Fatal("no scripts to run")
	}
	testscript.Run(t, testscript.Params{
		Files:         files,
		UpdateScripts: *updateScripts,
		Cmds:          scriptCmds,
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", env.WorkDir)
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			for _, k := range []string{"STORE", "SCRATCH", "CONFIG", "OUTPUT", "NO_COLOR", "TIMEOUT", "VERBOSE", "LOG_FORMAT"} {
				env.Setenv("AGENTSTORE_"+k, "")
			}
			env.Setenv("NO_COLOR", "")
			if os.Getenv("GORACE") == "" {
				// Under -race every run of the binary would sleep a second
				// at exit; races are still reported (exit status 66).
				env.Setenv("GORACE", "atexit_sleep_ms=0")
			}
			for _, s := range scriptSetups {
				if err := s(env); err != nil {
					return err
				}
			}
			return nil
		},
	})
}

// cmdValidJSON checks that stdout, stderr or a file holds one or more
// JSON values: validjson stdout|stderr|FILE.
func cmdValidJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: validjson stdout|stderr|FILE")
	}
	dec := json.NewDecoder(strings.NewReader(ts.ReadFile(args[0])))
	err := errors.New("no JSON value")
	for dec.More() {
		var v any
		if err = dec.Decode(&v); err != nil {
			break
		}
	}
	switch {
	case neg && err == nil:
		ts.Fatalf("%s is valid JSON", args[0])
	case !neg && err != nil:
		ts.Fatalf("%s is not valid JSON: %v", args[0], err)
	}
}

// cmdExitCode runs a program like exec and checks its exit status:
// exitcode N PROG [ARGS...]. Its stdout and stderr are then available to
// the stdout and stderr commands, as after exec.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: bad status %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}
