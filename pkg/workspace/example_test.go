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

// A snapshot of an untouched tree writes nothing, one that cannot hold an
// entry says so, and a hydration refuses to overwrite work no snapshot
// holds until forced.
func ExampleWorkspace_Snapshot() {
	ctx := context.Background()
	base, err := os.MkdirTemp("", "workspace-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Mkdir(base+"/store", 0o700)
	os.Mkdir(base+"/scratch", 0o700)
	st, err := fsstore.Open(base+"/store", fsstore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	m, err := workspace.New(workspace.Options{Scratch: base + "/scratch", Store: artifacts.NewStore(st), Policy: workspace.SnapshotManual})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	w, err := m.Open(ctx, artifacts.SessionScope("demo-a", "user-42", "session-7"))
	if err != nil {
		log.Fatal(err)
	}
	w.Write(ctx, "run-3/out.txt", []byte("42\n"))
	first, _ := w.Snapshot(ctx, workspace.SnapshotOptions{})
	again, _ := w.Snapshot(ctx, workspace.SnapshotOptions{})
	fmt.Printf("v%d, then unchanged=%t v%d\n", first.Version, again.Unchanged, again.Version)

	os.Symlink("run-3", w.Path()+"/latest")
	linked, _ := w.Snapshot(ctx, workspace.SnapshotOptions{})
	fmt.Printf("left out: %+v\n", linked.Omitted)

	w.Write(ctx, "run-3/out.txt", []byte("43\n"))
	_, err = w.Hydrate(ctx, 1, workspace.HydrateOptions{})
	var oe *workspace.OverwriteError
	if errors.As(err, &oe) {
		fmt.Printf("%s: %+v\n", oe.ErrorCode(), oe.Lost)
	}
	_, err = w.Hydrate(ctx, 1, workspace.HydrateOptions{Force: true})
	fmt.Println("forced:", err)
	// Output:
	// v1, then unchanged=true v1
	// left out: [{Path:latest Kind:symlink}]
	// would_overwrite: [{Path:latest Change:symlink} {Path:run-3/out.txt Change:modified}]
	// forced: <nil>
}
