package cmd

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/retention"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// Script commands for incremental snapshots (checkpoints) in a
// filesystem store, until a command writes them:
//
//	ckpt snap STORE APP USER SESSION DIR     snapshot DIR as a checkpoint
//	ckpt orphan STORE APP USER SESSION AGE   store a pack no manifest
//	                                         names, created AGE ago
//	ckpt drop-pack STORE APP USER SESSION    delete the first pack the
//	                                         latest manifest names
func init() {
	scriptCmds["ckpt"] = cmdCkpt
}

func cmdCkpt(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "ckpt")
	usage := "usage: ckpt snap STORE APP USER SESSION DIR | ckpt orphan STORE APP USER SESSION AGE | ckpt drop-pack STORE APP USER SESSION"
	if len(args) < 5 {
		ts.Fatalf("%s", usage)
	}
	ctx := context.Background()
	now := time.Now()
	if args[0] == "orphan" && len(args) == 6 {
		age, err := retention.ParseDuration(args[5])
		ts.Check(err)
		now = now.Add(-age)
	}
	d, err := fsstore.Open(ts.MkAbs(args[1]), fsstore.Options{Now: func() time.Time { return now }})
	ts.Check(err)
	st := artifacts.NewStore(d)
	scope := scopeOf(args[2], args[3], args[4])
	c, err := checkpoint.New(checkpoint.Options{Store: st, Scope: scope})
	ts.Check(err)
	switch {
	case args[0] == "snap" && len(args) == 6:
		root, err := os.OpenRoot(ts.MkAbs(args[5]))
		ts.Check(err)
		defer root.Close()
		res, err := c.Snapshot(ctx, root, checkpoint.SnapshotOptions{})
		ts.Check(err)
		ts.Logf("checkpoint %s with packs %v", res.Ref, res.Packs)
	case args[0] == "orphan" && len(args) == 6:
		rec, err := st.Put(ctx, scope, checkpoint.PackName, strings.NewReader("orphan pack"), artifacts.PutOptions{
			MIMEType: checkpoint.PackMIMEType, Metadata: artifacts.Metadata{checkpoint.MetaKind: "pack/1"}})
		ts.Check(err)
		ts.Logf("orphan pack %s@%d", rec.Name, rec.Version)
	case args[0] == "drop-pack" && len(args) == 5:
		_, m, err := c.Latest(ctx)
		ts.Check(err)
		p := m.Packs[0]
		_, err = st.Delete(ctx, scope, p.Name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: p.Version})
		ts.Check(err)
		ts.Logf("deleted %s", p.Ref)
	default:
		ts.Fatalf("%s", usage)
	}
}
