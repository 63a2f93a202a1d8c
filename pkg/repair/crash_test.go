//go:build crash

package repair_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/crashtest"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/repair"
)

// The crash test runs this test binary again as a child process that puts
// artifacts in a loop until it is killed.
const childRootEnv = "REPAIR_TEST_CHILD_ROOT"

func init() {
	crashChild = func() (int, bool) {
		root := os.Getenv(childRootEnv)
		if root == "" {
			return 0, false
		}
		return runChild(root), true
	}
}

var crashScope = artifacts.SessionScope("crash", "u", "s")

// payload returns the deterministic bytes of a seed, so that what is read
// back can be checked against what was written.
func payload(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, int(seed%150000))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// runChild puts artifacts until it is killed, reporting its progress
// through a crashtest.Reporter: "start" once the store is open, then for
// every put a "read N" per chunk of payload the store reads, "eof" when it
// has read it all, and "put V" when the version is published.
func runChild(root string) int {
	rep, err := crashtest.NewReporter()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	names := []string{"a.bin", "dir/b.bin", "c"}
	seed := uint64(time.Now().UnixNano())
	rep.Report("start")
	for {
		seed++
		rec, err := s.Put(context.Background(), crashScope, names[seed%3], rep.Reader(bytes.NewReader(payload(seed))),
			artifacts.PutOptions{Metadata: artifacts.Metadata{"seed": strconv.FormatUint(seed, 10)}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		rep.Report(fmt.Sprintf("put %d", rec.Version))
	}
}

// checkIntact reads every visible version and checks its bytes are those
// its seed says.
func checkIntact(t *testing.T, s *artifacts.Store, scope artifacts.Scope, names []string) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for _, name := range names {
		cursor := ""
		for {
			page, err := s.ListVersions(ctx, scope, name, artifacts.ListOptions{Limit: 1000, Cursor: cursor})
			if artifacts.IsNotFound(err) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range page.Items {
				r, err := s.Get(ctx, scope, name, rec.Version)
				if err != nil {
					t.Fatalf("%s v%d: %v", name, rec.Version, err)
				}
				h := sha256.New()
				if _, err := io.Copy(h, r); err != nil {
					t.Fatalf("%s v%d: %v", name, rec.Version, err)
				}
				r.Close()
				seed, _ := strconv.ParseUint(rec.Metadata["seed"].(string), 10, 64)
				want := sha256.Sum256(payload(seed))
				if artifacts.DigestHex(want[:]) != rec.Digest {
					t.Fatalf("%s v%d holds the wrong bytes", name, rec.Version)
				}
				n++
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
	}
	return n
}

// TestCheckRepairCheck damages a store the way crashes do (a writer killed
// with SIGKILL many times, at points chosen from its own progress reports:
// half of them in the middle of a put), then: verify finds nothing
// corrupt, repair with no grace removes the garbage, verify still finds
// nothing and every visible version is intact, and a second repair has
// nothing to remove.
func TestCheckRepairCheck(t *testing.T) {
	runs := 120
	if testing.Short() {
		runs = 30
	}
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range runs {
		// Every other kill stops the child in the middle of reading a
		// payload (so garbage is certain); the others land after a random
		// report while it runs on.
		kp := crashtest.Point{Kind: "read", N: 1 + rng.IntN(4), Freeze: true}
		if i%2 == 1 {
			kp = crashtest.Point{N: 1 + rng.IntN(12), Freeze: rng.IntN(2) == 0}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childRootEnv+"="+root)
		outcome, last, err := crashtest.Run(cmd, kp, nil)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if outcome != crashtest.Killed {
			t.Fatalf("run %d: the child, which never stops, finished before its kill point %s (last report %q)", i, kp, last)
		}
	}
	s, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names := []string{"a.bin", "dir/b.bin", "c"}

	before, err := repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{})
	if err != nil || before.Corrupt != 0 {
		t.Fatalf("verify before repair: %v %+v", err, before.CorruptItems)
	}
	dry, err := repair.Repair(ctx, root, repair.Options{Grace: repair.NoGrace, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := repair.Repair(ctx, root, repair.Options{Grace: repair.NoGrace})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != dry.Removed || rep.Corrupt != 0 || len(rep.SkippedItems) != 0 {
		t.Fatalf("repair: %+v (dry run said %d)", rep, dry.Removed)
	}
	if rep.Removed == 0 {
		t.Fatalf("%d kills left no garbage: the test did not test anything", runs)
	}
	after, err := repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{})
	if err != nil || after.Corrupt != 0 || after.Checked != before.Checked {
		t.Fatalf("verify after repair: %v, checked %d (before %d), %+v", err, after.Checked, before.Checked, after.CorruptItems)
	}
	visible := checkIntact(t, artifacts.NewStore(s), crashScope, names)
	if int64(visible) != after.Versions {
		t.Fatalf("%d versions readable, verify saw %d", visible, after.Versions)
	}
	again, err := repair.Repair(ctx, root, repair.Options{Grace: repair.NoGrace})
	if err != nil || again.Removed != 0 || again.Scanned != rep.Scanned-rep.Removed {
		t.Fatalf("second repair: %+v %v", again, err)
	}
	t.Logf("%d kills: %d versions visible, repair scanned %d and removed %d", runs, visible, rep.Scanned, rep.Removed)
}

// TestRepairWhileWriting runs repair over and over (30 times, 10 with
// -short) while four goroutines put artifacts into directories that also
// hold garbage older than the grace: repair removes the garbage and
// nothing else, every put succeeds and every version verifies afterwards.
// The grace (30 minutes, the garbage being an hour old) is far longer than
// any put, however slow the machine: files of live writers are never
// within reach.
func TestRepairWhileWriting(t *testing.T) {
	root := t.TempDir()
	s, err := fsstore.Open(root, fsstore.Options{MaxScanEntries: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names := []string{"shared", "w/1", "w/2", "w/3"}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var puts atomic.Int64
	errs := make(chan error, 4)
	warm := make(chan struct{}) // closed at the 8th put
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seed := uint64(w) << 40
			for !stop.Load() {
				seed++
				name := names[w]
				if seed%2 == 0 {
					name = "shared"
				}
				_, err := s.Put(ctx, crashScope, name, bytes.NewReader(payload(seed%20000)),
					artifacts.PutOptions{Metadata: artifacts.Metadata{"seed": strconv.FormatUint(seed%20000, 10)}})
				if err != nil {
					errs <- err
					return
				}
				if puts.Add(1) == 8 {
					close(warm)
				}
			}
		}()
	}
	// Old garbage of crashed writers in the same directories: repair must
	// remove exactly these while the live writers go on.
	select {
	case <-warm:
	case err := <-errs:
		stop.Store(true)
		wg.Wait()
		t.Fatalf("a put failed before repair ran: %v", err)
	}
	planted := map[string]bool{}
	old := time.Now().Add(-time.Hour)
	for _, name := range names {
		dir := s.NameDir(crashScope, name)
		for i := range 3 {
			for _, f := range []string{fsstore.VersionFile(int64(900000+i), "data"), fsstore.VersionFile(int64(900000+i), "meta") + fsstore.TmpMarker + strings.Repeat("ab", 32)} {
				p := filepath.Join(dir, f)
				if err := os.WriteFile(p, []byte("garbage"), 0o600); err != nil {
					t.Fatal(err)
				}
				os.Chtimes(p, old, old)
				planted[p] = true
			}
		}
	}
	runs := 30
	if testing.Short() {
		runs = 10
	}
	var removed int64
	for range runs {
		rep, err := repair.Repair(ctx, root, repair.Options{Grace: 30 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		removed += rep.Removed
		for _, it := range rep.RemovedItems {
			if !planted[it.Path] {
				t.Errorf("repair removed %s, which a live writer made", it.Path)
			}
		}
		if rep.Corrupt != 0 {
			t.Fatalf("repair saw a record without payload while writers were active: %+v", rep.CorruptItems)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a put failed while repair ran: %v", err)
	}
	if removed != int64(len(planted)) {
		t.Fatalf("repair removed %d files, %d were garbage", removed, len(planted))
	}
	visible := checkIntact(t, artifacts.NewStore(s), crashScope, names)
	if int64(visible) != puts.Load() {
		t.Fatalf("%d puts, %d versions visible", puts.Load(), visible)
	}
	rep, err := repair.Verify(ctx, artifacts.NewStore(s), repair.VerifyOptions{})
	if err != nil || rep.Corrupt != 0 || rep.Checked != puts.Load() {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	t.Logf("%d puts by 4 writers during %d repair runs", puts.Load(), runs)
}
