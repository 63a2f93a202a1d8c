package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// wantLimit checks that err is a quota refusal by limit lim.
func wantLimit(t testing.TB, err error, lim Limit) *QuotaExceeded {
	t.Helper()
	wantCode(t, err, artifacts.CodeQuotaExceeded)
	var qe *QuotaExceeded
	if !errors.As(err, &qe) || qe.Limit != lim {
		t.Fatalf("refusal %v, want limit %s", err, lim)
	}
	return qe
}

// TestQuotaCountsAtAnyDepth: the file and entry counts cover the whole
// tree, however deep: files 34 levels down are counted when written, at
// BeginTurn and by a new manager (a new process) measuring the tree, and
// the limit refuses the next one each time. A refusal by the file count
// says what is left of it and no byte allowance when bytes are not
// limited.
func TestQuotaCountsAtAnyDepth(t *testing.T) {
	ctx := context.Background()
	deep := strings.Repeat("d/", 34)
	for _, c := range []struct {
		name  string
		q     Quota
		limit Limit
	}{
		{"files", Quota{MaxFiles: 5}, LimitFiles},
		// 34 directories and 5 files.
		{"entries", Quota{MaxEntries: 34 + 5}, LimitEntries},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := artifacts.NewStore(newStore(t, fsstore.Options{}))
			scratch := t.TempDir()
			open := func() *Workspace {
				m, err := New(Options{Scratch: scratch, Store: st, Quota: c.q, Policy: SnapshotManual})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Close() })
				return mustOpen(t, m, sessionScope("deep"))
			}
			w := open()
			for i := range 5 {
				if err := w.Write(ctx, fmt.Sprintf("%sf%d", deep, i), []byte("x")); err != nil {
					t.Fatal(err)
				}
			}
			refused := func(w *Workspace, when string) {
				t.Helper()
				before := readTree(t, w.Path())
				qe := wantLimit(t, w.Write(ctx, deep+"one-more", []byte("x")), c.limit)
				if qe.RemainingBytes != -1 {
					t.Errorf("%s: remaining bytes %d without a byte limit, want -1", when, qe.RemainingBytes)
				}
				if c.limit == LimitFiles && (qe.RemainingFiles != 0 || qe.RemainingEntries != -1) {
					t.Errorf("%s: %+v, want 0 files and no entry count left", when, qe)
				}
				if c.limit == LimitEntries && (qe.RemainingEntries != 0 || qe.RemainingFiles != -1) {
					t.Errorf("%s: %+v, want 0 entries and no file count left", when, qe)
				}
				if after := readTree(t, w.Path()); len(after) != len(before) {
					t.Errorf("%s: the refused write changed the tree", when)
				}
				if q := w.Quota(); q.Files != 5 || q.Dirs != 34 {
					t.Errorf("%s: ledger counts %d files, %d directories; want 5 and 34", when, q.Files, q.Dirs)
				}
			}
			refused(w, "written")
			if err := w.BeginTurn(ctx); err != nil {
				t.Fatal(err)
			}
			refused(w, "after BeginTurn")
			refused(open(), "in a new manager")
		})
	}
}

// TestDirectoriesCountAndCharge: a directory is an entry and costs
// DirBytes of the turn and the total; creating directories stops at the
// limit (the loop would make 25,000), whether they come from Mkdir,
// nested Mkdir or a write's parents, and a refused call leaves none of
// its directories behind.
func TestDirectoriesCountAndCharge(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		q       Quota
		limit   Limit
		allowed int // directories made before the refusal
	}{
		{"entries", Quota{MaxEntries: 40}, LimitEntries, 40},
		{"total bytes", Quota{TotalBytes: 40 * DirBytes}, LimitBytes, 40},
		{"turn bytes", Quota{TurnBytes: 40 * DirBytes}, LimitTurnBytes, 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{Quota: c.q})
			w := mustOpen(t, m, sessionScope("dirs"))
			var err error
			made := 0
			for i := 0; i < 25_000 && err == nil; i++ {
				// One directory at the top, then three nested ones.
				if i%2 == 0 {
					err = w.Mkdir(ctx, fmt.Sprintf("d%05d", i))
				} else {
					err = w.Mkdir(ctx, fmt.Sprintf("n%05d/a/b", i))
				}
				if err == nil {
					made += 1 + 2*(i%2)
				}
			}
			wantLimit(t, err, c.limit)
			walked, werr := measure(w.root)
			if werr != nil {
				t.Fatal(werr)
			}
			if walked.dirs != made || made > c.allowed || made < c.allowed-3 {
				t.Fatalf("%d directories on disk, %d made, limit %d", walked.dirs, made, c.allowed)
			}
			if q := w.Quota(); q.Dirs != made || q.Usage != int64(made)*DirBytes {
				t.Fatalf("ledger %+v, want %d directories of %d bytes", q, made, DirBytes)
			}
			before := readTree(t, w.Path())
			wantLimit(t, w.Mkdir(ctx, "x/y/z/w"), c.limit)
			wantLimit(t, w.Write(ctx, "x/y/z/f", nil), c.limit)
			wantLimit(t, w.Append(ctx, "x/y/z/f", nil), c.limit)
			if got := readTree(t, w.Path()); len(got) != len(before) {
				t.Fatalf("refused calls left %d entries, want %d", len(got), len(before))
			}
			// Removing directories frees what they cost.
			if err := w.Remove(ctx, "d00000"); err != nil {
				t.Fatal(err)
			}
			if q := w.Quota(); q.Dirs != made-1 {
				t.Fatalf("after a remove the ledger counts %d directories, want %d", q.Dirs, made-1)
			}
		})
	}
}

// TestQuotaRaceOverwrite: eight goroutines overwrite (mostly shrinking)
// and remove one 2 MiB file under a 2 MiB total limit at once, round
// after round. The ledger books each change against what the file holds
// when the change is made, so it always equals a walk of the tree, the
// tree never holds more than the limit, and a new file that would go
// over it is refused. Before changes were serialized, two overwrites
// both booked against the same old size and the ledger drifted below the
// tree, letting later writes store many times the limit.
func TestQuotaRaceOverwrite(t *testing.T) {
	raceOverwrite(t, 30)
}

func raceOverwrite(t *testing.T, rounds int) {
	ctx := context.Background()
	const limit = 2 << 20
	m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{Quota: Quota{TotalBytes: limit}})
	w := mustOpen(t, m, sessionScope("race"))
	full := bytes.Repeat([]byte("f"), limit)
	if err := w.Write(ctx, "sub/big", full[:limit-DirBytes]); err != nil {
		t.Fatal(err)
	}
	for round := range rounds {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				var err error
				switch g {
				case 0:
					err = w.Remove(ctx, "sub/big")
				case 1, 2:
					_, err = w.WriteFrom(ctx, "sub/big", bytes.NewReader(full[:limit/2+g]))
				case 3:
					err = w.Write(ctx, "sub/big", full[:limit-DirBytes])
				default:
					err = w.Write(ctx, "sub/big", full[:limit/4+g])
				}
				// Refusals and a remove that finds nothing are expected.
				if err != nil && artifacts.CodeOf(err) != artifacts.CodeQuotaExceeded && !artifacts.IsNotFound(err) {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		walked, err := measure(w.root)
		if err != nil {
			t.Fatal(err)
		}
		held := walked.bytes + int64(walked.dirs)*DirBytes
		if q := w.Quota(); q.Usage != held || q.Files != walked.files || q.Dirs != walked.dirs {
			t.Fatalf("round %d: ledger %+v, the tree holds %d bytes, %d files, %d directories", round, q, held, walked.files, walked.dirs)
		}
		if held > limit {
			t.Fatalf("round %d: the tree holds %d bytes over a limit of %d", round, held, limit)
		}
		wantLimit(t, w.Write(ctx, "extra", full[:limit-held+1]), LimitBytes)
		if t.Failed() {
			return
		}
	}
	// Nothing was left at the top by the writes' temporary files.
	ents, err := os.ReadDir(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != IndexName && e.Name() != "sub" {
			t.Errorf("left at the top: %s", e.Name())
		}
	}
}
