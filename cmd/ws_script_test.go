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
//	wsdir [-legacy] APP USER SESSION VAR  set $VAR to the session's directory name (-legacy: the name before app-bound names)
//	backdate DIR [RFC3339]    set the modification time of every entry below DIR
//	                          (symbolic links excepted, DIR itself too) to the
//	                          time given, default 2020-01-01T00:00:00Z: files
//	                          untouched since then
func init() {
	scriptCmds["wsdir"] = cmdWsDir
	scriptCmds["backdate"] = cmdBackdate
}

func cmdWsDir(ts *testscript.TestScript, neg bool, args []string) {
	switch {
	case !neg && len(args) == 4:
		ts.Setenv(args[3], workspace.DirName(args[0], args[1], args[2]))
	case !neg && len(args) == 4+1 && args[0] == "-legacy":
		ts.Setenv(args[4], workspace.LegacyDirName(args[2], args[3]))
	default:
		ts.Fatalf("usage: wsdir [-legacy] APP USER SESSION VAR")
	}
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
