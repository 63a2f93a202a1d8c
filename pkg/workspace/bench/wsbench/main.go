// Command wsbench runs one workspace snapshot or hydration of session
// bench/bench/s with a filesystem store, for compare.sh to time next to
// zip and unzip:
//
//	wsbench -op snapshot -scratch SCRATCH -store STORE
//	wsbench -op hydrate -scratch TARGET -store STORE
//	wsbench -op dir
//
// -op dir prints the session's directory name (workspace.DirName), where
// the tree to snapshot must lie under SCRATCH.
// With -cpuprofile FILE it writes a CPU profile of the operation (for go
// tool pprof); -level N snapshots at Deflate level N instead of
// zipsafe.DefaultLevel.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
)

func main() {
	op := flag.String("op", "", "snapshot or hydrate")
	scratch := flag.String("scratch", "", "scratch root")
	store := flag.String("store", "", "filesystem store root")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	level := flag.Int("level", 0, "Deflate level of a snapshot (0: zipsafe.DefaultLevel)")
	flag.Parse()
	if *op == "dir" {
		fmt.Println(workspace.DirName("bench", "bench", "s"))
		return
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "wsbench:", err)
			os.Exit(1)
		}
		defer f.Close()
	}
	err := run(*op, *scratch, *store, *level)
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wsbench:", err)
		os.Exit(1)
	}
}

func run(op, scratch, store string, level int) error {
	ctx := context.Background()
	st, err := fsstore.Open(store, fsstore.Options{MaxArtifactBytes: 4 << 30})
	if err != nil {
		return err
	}
	m, err := workspace.New(workspace.Options{Scratch: scratch, Store: artifacts.NewStore(st), Level: level})
	if err != nil {
		return err
	}
	defer m.Close()
	scope := artifacts.SessionScope("bench", "bench", "s")
	switch op {
	case "snapshot":
		res, err := m.Snapshot(ctx, scope, workspace.SnapshotOptions{})
		if err != nil {
			return err
		}
		fmt.Printf("snapshot v%d: %d files, %d bytes, archive %d bytes\n", res.Version, res.Files, res.Bytes, res.Record.Size)
	case "hydrate":
		res, err := m.Hydrate(ctx, scope, artifacts.Latest, workspace.HydrateOptions{})
		if err != nil {
			return err
		}
		fmt.Printf("hydrate v%d: %d files, %d bytes\n", res.Version, res.Files, res.Bytes)
	default:
		return fmt.Errorf("-op must be snapshot, hydrate or dir")
	}
	return nil
}
