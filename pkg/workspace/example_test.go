package workspace_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// Two pods share a store: the session moves from one to the other through
// a snapshot, and the per-turn allowance refuses a write that is too big.
func Example() {
	ctx := context.Background()
	base, err := os.MkdirTemp("", "workspace-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)
	for _, d := range []string{"store", "pod-a", "pod-b"} {
		os.Mkdir(base+"/"+d, 0o700)
	}
	st, err := fsstore.Open(base+"/store", fsstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	scope := artifacts.SessionScope("demo-a", "user-42", "session-7")

	// Turn one on pod A.
	a, err := workspace.New(workspace.Options{Scratch: base + "/pod-a", Store: artifacts.NewStore(st)})
	if err != nil {
		log.Fatal(err)
	}
	wa, err := a.Open(ctx, scope)
	if err != nil {
		log.Fatal(err)
	}
	wa.BeginTurn(ctx)
	if err := wa.Write(ctx, "notes/todo.md", []byte("- ship it\n")); err != nil {
		log.Fatal(err)
	}
	snap, err := wa.EndTurn(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("pod A published %s v%d (%d file)\n", workspace.SnapshotName, snap.Version, snap.Files)
	a.Close()

	// Turn two on pod B, with a 1 KiB allowance per turn.
	b, err := workspace.New(workspace.Options{Scratch: base + "/pod-b", Store: artifacts.NewStore(st), Quota: workspace.Quota{TurnBytes: 1024}})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	wb, err := b.Open(ctx, scope) // first touch: hydrates v1
	if err != nil {
		log.Fatal(err)
	}
	wb.BeginTurn(ctx)
	lines, _ := wb.ReadLines("notes/todo.md", 0, 10)
	fmt.Printf("pod B reads %q\n", lines.Lines)
	err = wb.Write(ctx, "big.bin", make([]byte, 2048))
	var ae *artifacts.Error
	if artifacts.CodeOf(err) == artifacts.CodeQuotaExceeded && errors.As(err, &ae) {
		fmt.Printf("refused: %s, %d bytes left\n", ae.Code, ae.Remaining)
	}
	_, err = wb.Open(workspace.IndexName)
	fmt.Println("index:", artifacts.CodeOf(err))
	// Output:
	// pod A published workspace.zip v1 (1 file)
	// pod B reads ["- ship it"]
	// refused: quota_exceeded, 1024 bytes left
	// index: permission_denied
}
