package cmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/pkg/workspace"
)

// The testscript commands of the ws scripts (testdata/script/ws_*.txtar):
//
//	wsdir USER SESSION VAR    set $VAR to the session's directory name under a scratch root
//	backdate DIR [RFC3339]    set the modification time of every entry below DIR
//	                          (symbolic links excepted, DIR itself too) to the
//	                          time given, default 2020-01-01T00:00:00Z: files
//	                          untouched since then
func init() {
	scriptCmds["wsdir"] = cmdWsDir
	scriptCmds["backdate"] = cmdBackdate
}

func cmdWsDir(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: wsdir USER SESSION VAR")
	}
	ts.Setenv(args[2], workspace.DirName(args[0], args[1]))
}

func cmdBackdate(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: backdate DIR [RFC3339]")
	}
	when := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if len(args) == 2 {
		var err error
		when, err = time.Parse(time.RFC3339, args[1])
		ts.Check(err)
	}
	top := ts.MkAbs(args[0])
	var paths []string
	ts.Check(filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink == 0 {
			paths = append(paths, p)
		}
		return err
	}))
	for i := len(paths) - 1; i >= 0; i-- { // entries before their directories
		ts.Check(os.Chtimes(paths[i], when, when))
	}
}
