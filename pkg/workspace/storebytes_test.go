package workspace

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// noise returns n incompressible bytes.
func noise(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestMaxStoreBytes: under SnapshotOnWrite, a write whose snapshot would
// pass the session's store-bytes ceiling is applied in the workspace and
// answered CodeNotPersisted wrapping CodeQuotaExceeded; the scope's
// other artifacts are charged; once the workspace shrinks, the next
// change persists the tree. FormatAuto writes incremental snapshots
// under a ceiling, even for a small tree.
func TestMaxStoreBytes(t *testing.T) {
	ctx := context.Background()
	st, _ := clockStore(t)
	scope := sessionScope("s1")
	if _, err := st.Put(ctx, scope, "report.csv", bytes.NewReader(noise(1, 10_000)), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, st, Options{SnapshotFormat: FormatAuto, Policy: SnapshotOnWrite, MaxStoreBytes: 40_000})
	w := mustOpen(t, m, scope)
	if err := w.Write(ctx, "small.txt", noise(2, 5_000)); err != nil {
		t.Fatal(err)
	}
	if ix := w.Index(); ix.SnapshotFormat() != FormatIncremental {
		t.Fatalf("format %q under a ceiling, want incremental", ix.SnapshotFormat())
	}
	// 5 kB stored + 10 kB of report.csv + 30 kB > 40 kB.
	err := w.Write(ctx, "big.bin", noise(3, 30_000))
	wantCode(t, err, artifacts.CodeNotPersisted)
	var ae *artifacts.Error
	if !errors.As(err, &ae) || artifacts.CodeOf(ae.Err) != artifacts.CodeQuotaExceeded {
		t.Fatalf("cause of %v: want quota_exceeded", err)
	}
	if _, serr := os.Stat(filepath.Join(w.Path(), "big.bin")); serr != nil {
		t.Fatalf("the refused snapshot's change is not in the workspace: %v", serr)
	}
	cp, err := checkpoint.New(checkpoint.Options{Store: st, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if refs, err := cp.List(ctx); err != nil || len(refs) != 1 {
		t.Fatalf("checkpoints %v, %v: want only the first", refs, err)
	}
	if err := w.Remove(ctx, "big.bin"); err != nil {
		t.Fatalf("the next change does not persist once the tree fits: %v", err)
	}
	if _, err := w.EndTurn(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMaxStoreBytesNeedsIncremental: a ceiling with zip snapshots, whose
// size is not known before they are stored, is refused.
func TestMaxStoreBytesNeedsIncremental(t *testing.T) {
	st, _ := clockStore(t)
	for _, f := range []SnapshotFormat{"", FormatZip} {
		_, err := New(Options{Scratch: t.TempDir(), Store: st, SnapshotFormat: f, MaxStoreBytes: 1 << 20})
		wantCode(t, err, artifacts.CodeInvalidArgument)
	}
}
