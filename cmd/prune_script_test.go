package cmd

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/retention"
)

// The testscript commands of the prune and ws delete scripts:
//
//	put-aged STORE APP USER SESSION NAME CONTENT AGE MIME
//	                         put a version into a filesystem store as
//	                         created AGE ago (30d, 12h), with MIME type
//	                         MIME; USER and SESSION may be '' for an app
//	                         or user scope
//	errnext FILE VAR         set $VAR to the command a JSON error object in
//	                         FILE (stderr) says to run ("...; run: CMD")
func init() {
	scriptCmds["put-aged"] = cmdPutAged
	scriptCmds["errnext"] = cmdErrNext
}

func cmdPutAged(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "put-aged")
	if len(args) != 8 {
		ts.Fatalf("usage: put-aged STORE APP USER SESSION NAME CONTENT AGE MIME")
	}
	age, err := retention.ParseDuration(args[6])
	ts.Check(err)
	created := time.Now().Add(-age)
	d, err := fsstore.Open(ts.MkAbs(args[0]), fsstore.Options{Now: func() time.Time { return created }})
	ts.Check(err)
	rec, err := artifacts.NewStore(d).Put(context.Background(), scopeOf(args[1], args[2], args[3]), args[4], strings.NewReader(args[5]), artifacts.PutOptions{MIMEType: args[7]})
	ts.Check(err)
	ts.Logf("put %s %q v%d created %s", rec.Scope, rec.Name, rec.Version, rec.Created().Format(time.RFC3339))
}

var runNext = regexp.MustCompile(`run: (agentstore [^;]*)`)

func cmdErrNext(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "errnext")
	if len(args) != 2 {
		ts.Fatalf("usage: errnext FILE VAR")
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &e))
	m := runNext.FindStringSubmatch(e.Error.Message)
	if m == nil {
		ts.Fatalf("errnext: no \"run: agentstore ...\" in %q", e.Error.Message)
	}
	ts.Setenv(args[1], m[1])
}
