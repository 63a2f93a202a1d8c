package cmd

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// The testscript commands of the CLI scripts (testdata/script/cli_*.txtar):
//
//	tty COLS N OUT PROG ARGS...   run PROG on a pseudo-terminal COLS columns
//	                              wide (util-linux script(1)), require exit
//	                              status N, and write what the terminal
//	                              showed (stdout and stderr; of a line
//	                              redrawn after a carriage return, the
//	                              last drawing) to OUT
func init() {
	scriptCmds["tty"] = cmdTTY
}

// ttyEnv are the environment variables a tty run passes on.
var ttyEnv = []string{"PATH", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "TMPDIR", "WORK", "GORACE",
	"NO_COLOR", "TERM", "STORAGE_EMULATOR_HOST",
	"AGENTSTORE_STORE", "AGENTSTORE_SCRATCH", "AGENTSTORE_CONFIG", "AGENTSTORE_OUTPUT", "AGENTSTORE_NO_COLOR",
	"AGENTSTORE_TIMEOUT", "AGENTSTORE_VERBOSE", "AGENTSTORE_LOG_FORMAT"}

func cmdTTY(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "tty")
	if len(args) < 4 {
		ts.Fatalf("usage: tty COLS N OUT PROG [ARGS...]")
	}
	cols, err := strconv.Atoi(args[0])
	ts.Check(err)
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	if _, err := exec.LookPath("script"); err != nil {
		ts.Fatalf("tty needs script(1) from util-linux: %v", err)
	}
	quoted := make([]string, len(args)-3)
	for i, a := range args[3:] {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	line := "stty cols " + strconv.Itoa(cols) + " rows 50; exec " + strings.Join(quoted, " ")
	c := exec.Command("script", "-qefc", line, "/dev/null")
	c.Dir = ts.MkAbs(".")
	c.Env = []string{"SHELL=/bin/sh"}
	for _, k := range ttyEnv {
		if v := ts.Getenv(k); v != "" {
			c.Env = append(c.Env, k+"="+v)
		}
	}
	out, err := c.Output()
	got := 0
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		got = ee.ExitCode()
	default:
		ts.Fatalf("tty: %v", err)
	}
	// What the terminal shows: of a line redrawn after a carriage return,
	// the last drawing.
	lines := strings.Split(strings.ReplaceAll(string(out), "\r\n", "\n"), "\n")
	for i, l := range lines {
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			lines[i] = strings.TrimRight(l[j+1:], " ")
		}
	}
	text := strings.Join(lines, "\n")
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(text), 0o644))
	if got != want {
		ts.Fatalf("exit status %d, want %d; the terminal showed:\n%s", got, want, text)
	}
}
