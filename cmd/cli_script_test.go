package cmd

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// The testscript commands of the CLI scripts (testdata/script/cli_*.txtar):
//
//	tty COLS N OUT PROG ARGS...   run PROG on a pseudo-terminal COLS columns
//	                              wide (util-linux script(1)), require exit
//	                              status N, and write what the terminal
//	                              showed (stdout and stderr; of a line
//	                              redrawn after a carriage return, the
//	                              last drawing) to OUT
//	bigfile FILE N                write N bytes of varied text to FILE
//	put-fs-file STORE APP USER SESSION NAME FILE
//	                              put FILE's content as a version ('' for
//	                              absent scope parts)
//	flipbyte FILE OFFSET          invert the byte at OFFSET of FILE
func init() {
	scriptCmds["tty"] = cmdTTY
	scriptCmds["bigfile"] = cmdBigFile
	scriptCmds["put-fs-file"] = cmdPutFSFile
	scriptCmds["flipbyte"] = cmdFlipByte
}

func cmdBigFile(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "bigfile")
	if len(args) != 2 {
		ts.Fatalf("usage: bigfile FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(b.String()[:n]), 0o644))
}

func cmdPutFSFile(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "put-fs-file")
	if len(args) != 6 {
		ts.Fatalf("usage: put-fs-file STORE APP USER SESSION NAME FILE")
	}
	f, err := os.Open(ts.MkAbs(args[5]))
	ts.Check(err)
	defer f.Close()
	st := openScriptStore(ts, args[0])
	_, err = st.Put(context.Background(), scopeOf(args[1], args[2], args[3]), args[4], f, artifacts.PutOptions{MIMEType: "text/plain"})
	ts.Check(err)
}

func cmdFlipByte(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "flipbyte")
	if len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE OFFSET")
	}
	off, err := strconv.Atoi(args[1])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	b, err := os.ReadFile(path)
	ts.Check(err)
	b[off] ^= 0xff
	ts.Check(os.WriteFile(path, b, 0o644))
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
