package cmd

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// Commands of the store-hardening scripts (FIFOs and symbolic links in the
// layout, unreadable records, hostile names, impossible sizes).
func init() {
	scriptCmds["mkfifo"] = cmdMkfifo
	scriptCmds["escaped"] = cmdEscaped
	scriptCmds["set-size"] = cmdSetSize
	scriptCmds["flip-data"] = cmdFlipData
	scriptCmds["jsonnext"] = cmdJSONNext
	scriptCmds["shareable"] = cmdShareable
}

// cmdMkfifo makes a named pipe: mkfifo PATH.
func cmdMkfifo(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "mkfifo")
	if len(args) != 1 {
		ts.Fatalf("usage: mkfifo PATH")
	}
	ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o600))
}

// cmdEscaped runs another script command with its arguments unquoted as Go
// string literals, so scripts can pass ESC, BEL, newlines and U+202E:
// escaped CMD ARGS...
func cmdEscaped(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: escaped CMD ARGS...")
	}
	cmd := scriptCmds[args[0]]
	if cmd == nil {
		ts.Fatalf("escaped: no script command %q", args[0])
	}
	un := make([]string, len(args)-1)
	for i, a := range args[1:] {
		s, err := strconv.Unquote(`"` + strings.ReplaceAll(a, `"`, `\"`) + `"`)
		ts.Check(err)
		un[i] = s
	}
	cmd(ts, neg, un)
}

// versionPath is the file of version v of a name in an fs store.
func versionPath(ts *testscript.TestScript, args []string, kind string) string {
	st := openScriptStore(ts, args[0])
	v, err := strconv.ParseInt(args[5], 10, 64)
	ts.Check(err)
	return filepath.Join(st.NameDir(scopeOf(args[1], args[2], args[3]), args[4]), fsstore.VersionFile(v, kind))
}

// cmdSetSize rewrites a version's record to state another payload size:
// set-size STORE APP USER SESSION NAME VERSION SIZE.
func cmdSetSize(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "set-size")
	if len(args) != 7 {
		ts.Fatalf("usage: set-size STORE APP USER SESSION NAME VERSION SIZE")
	}
	path := versionPath(ts, args, "meta")
	b, err := os.ReadFile(path)
	ts.Check(err)
	rec, err := artifacts.DecodeRecord(b)
	ts.Check(err)
	rec.Size, err = strconv.ParseInt(args[6], 10, 64)
	ts.Check(err)
	b, err = artifacts.EncodeRecord(rec)
	ts.Check(err)
	ts.Check(os.WriteFile(path, b, 0o600))
}

// cmdFlipData flips the first byte of a version's payload (same size,
// wrong digest): flip-data STORE APP USER SESSION NAME VERSION.
func cmdFlipData(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "flip-data")
	if len(args) != 6 {
		ts.Fatalf("usage: flip-data STORE APP USER SESSION NAME VERSION")
	}
	path := versionPath(ts, args, "data")
	b, err := os.ReadFile(path)
	ts.Check(err)
	b[0] ^= 0xff
	ts.Check(os.WriteFile(path, b, 0o600))
}

// cmdJSONNext sets VAR to the first next_command among the corrupt items
// of a saved "fs verify -o json" or "fs repair -o json": jsonnext FILE VAR.
func cmdJSONNext(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "jsonnext")
	if len(args) != 2 {
		ts.Fatalf("usage: jsonnext FILE VAR")
	}
	var out struct {
		Items []struct {
			Next string `json:"next_command"`
		} `json:"corrupt_items"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &out))
	for _, it := range out.Items {
		if it.Next != "" {
			ts.Setenv(args[1], it.Next)
			return
		}
	}
	ts.Fatalf("jsonnext: %s has no next_command", args[0])
}

// cmdShareable lets an unprivileged user (setpriv --reuid=65534) reach DIR
// and run agentstore: every directory above DIR and above the agentstore
// binary gets o+x, and everything below DIR o+r (o+x for directories), so
// that a test then takes read access away from exactly the files it means
// to: shareable DIR.
func cmdShareable(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "shareable")
	if len(args) != 1 {
		ts.Fatalf("usage: shareable DIR")
	}
	dir := ts.MkAbs(args[0])
	bin, err := exec.LookPath("agentstore")
	if err == nil && !filepath.IsAbs(bin) {
		bin, err = filepath.Abs(bin)
	}
	ts.Check(err)
	for _, p := range []string{dir, filepath.Dir(bin)} {
		for d := p; ; d = filepath.Dir(d) {
			addMode(ts, d, 0o001)
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	addMode(ts, bin, 0o005)
	ts.Check(filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&(fs.ModeSymlink|fs.ModeNamedPipe) != 0 {
			return err
		}
		add := fs.FileMode(0o004)
		if d.IsDir() {
			add = 0o005
		}
		addMode(ts, p, add)
		return nil
	}))
}

// addMode adds permission bits to path when it lacks them, keeping the
// sticky, setuid and setgid bits (/tmp keeps its sticky bit).
func addMode(ts *testscript.TestScript, path string, add fs.FileMode) {
	fi, err := os.Stat(path)
	ts.Check(err)
	if fi.Mode().Perm()&add == add {
		return
	}
	ts.Check(os.Chmod(path, fi.Mode()&(fs.ModePerm|fs.ModeSticky|fs.ModeSetuid|fs.ModeSetgid)|add))
}
