package cmd

import (
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/pkg/workspace"
)

// The testscript commands of the ws scripts (testdata/script/ws_*.txtar):
//
//	wsdir USER SESSION VAR    set $VAR to the session's directory name under a scratch root
func init() {
	scriptCmds["wsdir"] = cmdWsDir
}

func cmdWsDir(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: wsdir USER SESSION VAR")
	}
	ts.Setenv(args[2], workspace.DirName(args[0], args[1]))
}
