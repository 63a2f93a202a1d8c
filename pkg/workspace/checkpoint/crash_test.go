//go:build crash

package checkpoint_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/crashtest"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/shardedfs"
	"github.com/agentstore/agentstore/pkg/repair"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// The crash tests run this test binary again as a child process that
// snapshots a changing tree in a loop until it is killed.
const (
	crashRootEnv   = "CHECKPOINT_CRASH_ROOT"
	crashLayoutEnv = "CHECKPOINT_CRASH_LAYOUT"
	crashTreeEnv   = "CHECKPOINT_CRASH_TREE"
	// crashSnapshots bounds a child's loop: a kill point it never reaches
	// ends in Finished, not in a hang.
	crashSnapshots = 200
)

func init() {
	crashChild = func() (int, bool) {
		root := os.Getenv(crashRootEnv)
		if root == "" {
			return 0, false
		}
		return runCrashChild(root, os.Getenv(crashLayoutEnv), os.Getenv(crashTreeEnv)), true
	}
}

// crashOptions are the checkpoint options of child and parent: small packs
// (a snapshot stores several), few kept snapshots (retention deletes on
// every snapshot) and the default compaction threshold.
func crashOptions(st *artifacts.Store) checkpoint.Options {
	return checkpoint.Options{Store: st, Scope: scope, MaxSnapshots: 3, PackBytes: 64 << 10}
}

// openLayout opens the driver of a layout on root.
func openLayout(layout, root string) (artifacts.Driver, error) {
	switch layout {
	case "erlang-fs":
		return fsstore.Open(root, fsstore.Options{})
	case "erlang-fs-sharded":
		return shardedfs.Open(root, shardedfs.Options{})
	}
	return nil, fmt.Errorf("no layout %q", layout)
}

// crashTree is the tree of a seed: a log that grows (and now and then
// starts again), files that change every 2^i seeds, one of them only
// present two seeds in three, and a file long enough to be chunked that
// changes every 16 seeds.
func crashTree(seed uint64) map[string][]byte {
	log := random(0, 2000+int(seed%50)*700)
	files := map[string][]byte{"log.txt": log}
	for i := range 8 {
		s := seed >> i
		files[fmt.Sprintf("d%d/f%d.bin", i%3, i)] = random(s*8+uint64(i), 500+int(s%40)*1000)
	}
	if seed%3 == 0 {
		delete(files, "d1/f7.bin")
	}
	files["big.bin"] = random(1<<40+seed/16, 700<<10)
	return files
}

// writeCrashTree makes dir hold the tree of seed, rewriting only the files
// that differ.
func writeCrashTree(dir string, seed uint64) error {
	files := crashTree(seed)
	for p, b := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, b) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return err
		}
	}
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			return os.Remove(p)
		}
		return nil
	})
}

// reportingDriver reports the child's store calls: "pack-read N" and
// "manifest-read N" while a Put reads its payload, "pack-put NAME V" and
// "manifest-put NAME V" when it is published, "range NAME V" for a ranged read (only compaction reads packs
// in a snapshot), "delete NAME V" when a version is deleted (retention).
type reportingDriver struct {
	artifacts.Driver
	rep *crashtest.Reporter
}

type kindReader struct {
	r    io.Reader
	kind string
	rep  *crashtest.Reporter
}

func (k *kindReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if n > 0 {
		k.rep.Report(fmt.Sprintf("%s-read %d", k.kind, n))
	}
	return n, err
}

func (d *reportingDriver) Put(ctx context.Context, sc artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions) (artifacts.Record, error) {
	kind := "pack"
	if strings.HasPrefix(name, checkpoint.ManifestName) {
		kind = "manifest"
	}
	rec, err := d.Driver.Put(ctx, sc, name, &kindReader{r: r, kind: kind, rep: d.rep}, opts)
	if err == nil {
		d.rep.Report(fmt.Sprintf("%s-put %s %d", kind, name, rec.Version))
	}
	return rec, err
}

func (d *reportingDriver) GetRange(ctx context.Context, sc artifacts.Scope, name string, version, offset, length int64) (*artifacts.Reader, error) {
	d.rep.Report(fmt.Sprintf("range %s %d", name, version))
	return d.Driver.GetRange(ctx, sc, name, version, offset, length)
}

func (d *reportingDriver) Delete(ctx context.Context, sc artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	recs, err := d.Driver.Delete(ctx, sc, name, sel)
	if err == nil {
		d.rep.Report(fmt.Sprintf("delete %s %d", name, sel.Version))
	}
	return recs, err
}

// nextSeed is the seed after the latest checkpoint's (its turn), 1 when
// there is none.
func nextSeed(ctx context.Context, c *checkpoint.Checkpoints) (uint64, error) {
	_, m, err := c.Latest(ctx)
	if artifacts.IsNotFound(err) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	seed, err := strconv.ParseUint(m.Turn, 10, 64)
	return seed + 1, err
}

// runCrashChild snapshots the tree of seed after seed (continuing from the
// latest checkpoint) until it is killed, reporting "start", its store
// calls (reportingDriver) and "snap NAME@V" after each snapshot.
func runCrashChild(root, layout, dir string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rep, err := crashtest.NewReporter()
	if err != nil {
		return fail(err)
	}
	d, err := openLayout(layout, root)
	if err != nil {
		return fail(err)
	}
	c, err := checkpoint.New(crashOptions(artifacts.NewStore(&reportingDriver{Driver: d, rep: rep})))
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	seed, err := nextSeed(ctx, c)
	if err != nil {
		return fail(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fail(err)
	}
	rep.Report("start")
	for range crashSnapshots {
		if err := writeCrashTree(dir, seed); err != nil {
			return fail(err)
		}
		res, err := c.Snapshot(ctx, r, checkpoint.SnapshotOptions{Turn: strconv.FormatUint(seed, 10)})
		if err != nil {
			return fail(err)
		}
		rep.Report("snap " + res.Ref.String())
		seed++
	}
	return 0
}

// crashPoints are where the kills land, in turn: in the middle of a pack's
// upload, after a pack is published (between packs, or between the packs
// and the manifest), in the middle of the manifest's upload, after the
// manifest is published (before its parent is checked and retention
// runs), between retention's deletes, while compaction reads an older
// pack, and anywhere (running on).
var crashPoints = []struct {
	kind   string
	n      int
	freeze bool
}{
	{"pack-read", 12, true},
	{"pack-put", 6, true},
	{"manifest-read", 3, true},
	{"manifest-put", 3, true},
	{"delete", 6, true},
	{"range", 3, true},
	{"", 60, false},
}

// checkAfterCrash checks the store after a kill: every listed checkpoint
// loads and restores to exactly the tree of its seed; verify finds
// nothing corrupt or broken before and after a repair without grace; a
// second repair removes nothing; and the next snapshot (of the next
// seed's tree) succeeds and restores. It returns how many items repair
// removed.
func checkAfterCrash(t *testing.T, st *artifacts.Store, dir string) int64 {
	t.Helper()
	cx := ctx(t)
	c := newCP(t, st, crashOptions(st))
	checkAll := func(when string) {
		refs, err := c.List(cx)
		if err != nil {
			t.Fatalf("%s: list: %v", when, err)
		}
		for _, ref := range refs {
			m, err := c.Load(cx, ref)
			if err != nil {
				t.Fatalf("%s: checkpoint %s does not load: %v", when, ref, err)
			}
			seed, err := strconv.ParseUint(m.Turn, 10, 64)
			if err != nil {
				t.Fatalf("%s: checkpoint %s: turn %q", when, ref, m.Turn)
			}
			got, _ := restore(t, c, m)
			want := filepath.Join(t.TempDir(), "want")
			if err := os.Mkdir(want, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := writeCrashTree(want, seed); err != nil {
				t.Fatal(err)
			}
			sameTree(t, want, got)
			if t.Failed() {
				t.Fatalf("%s: checkpoint %s does not restore the tree of seed %d", when, ref, seed)
			}
		}
	}
	verify := func(when string) {
		v, err := repair.Verify(cx, st, repair.VerifyOptions{})
		if err != nil {
			t.Fatalf("verify %s: %v", when, err)
		}
		if v.Corrupt != 0 || v.BrokenCheckpoints != 0 || v.Unreadable != 0 || len(v.CheckpointNotes) != 0 {
			t.Fatalf("verify %s: %d corrupt %+v, %d broken checkpoints %+v, %d unreadable, notes %v",
				when, v.Corrupt, v.CorruptItems, v.BrokenCheckpoints, v.CheckpointItems, v.Unreadable, v.CheckpointNotes)
		}
	}
	checkAll("after the kill")
	verify("after the kill")
	rep, err := repair.Run(cx, st, repair.Options{Grace: repair.NoGrace})
	if err != nil || rep.Corrupt != 0 || len(rep.SkippedItems) != 0 || len(rep.Notes) != 0 {
		t.Fatalf("repair: %v %+v", err, rep)
	}
	verify("after repair")
	checkAll("after repair")
	again, err := repair.Run(cx, st, repair.Options{Grace: repair.NoGrace})
	if err != nil || again.Removed != 0 {
		t.Fatalf("second repair: %v %+v", err, again)
	}
	seed, err := nextSeed(cx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCrashTree(dir, seed); err != nil {
		t.Fatal(err)
	}
	res, err := c.Snapshot(cx, openRoot(t, dir), checkpoint.SnapshotOptions{Turn: strconv.FormatUint(seed, 10)})
	if err != nil {
		t.Fatalf("the snapshot after repair: %v", err)
	}
	got, _ := restore(t, c, res.Manifest)
	sameTree(t, dir, got)
	return rep.Removed
}

// TestSnapshotCrash kills a child that snapshots incrementally (about 60
// times per layout, 14 with -short) at points chosen from its store calls:
// during a pack's upload, between packs and the manifest, during the
// manifest's upload, after it, during retention and during compaction.
// After each kill no checkpoint is lost or half-visible (every listed one
// restores byte-exact), verify finds nothing before and after repair, and
// the next snapshot succeeds. Every kind of point must have been hit and
// repair must have had something to remove, or the test tested nothing.
func TestSnapshotCrash(t *testing.T) {
	for _, layout := range []string{"erlang-fs", "erlang-fs-sharded"} {
		t.Run(layout, func(t *testing.T) {
			runs := 60
			if testing.Short() {
				runs = 14
			}
			root, dir := t.TempDir(), t.TempDir()
			d, err := openLayout(layout, root)
			if err != nil {
				t.Fatal(err)
			}
			st := artifacts.NewStore(d)
			rng := rand.New(rand.NewPCG(28, uint64(len(layout))))
			killed := map[string]int{}
			var removed int64
			for i := range runs {
				cp := crashPoints[i%len(crashPoints)]
				kp := crashtest.Point{Kind: cp.kind, N: 1 + rng.IntN(cp.n), Freeze: cp.freeze}
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), crashRootEnv+"="+root, crashLayoutEnv+"="+layout, crashTreeEnv+"="+dir)
				outcome, last, err := crashtest.Run(cmd, kp, nil)
				if err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
				if outcome == crashtest.Killed {
					killed[cp.kind]++
				} else {
					t.Logf("run %d: the child finished %d snapshots before its kill point %s (last report %q)", i, crashSnapshots, kp, last)
				}
				removed += checkAfterCrash(t, st, dir)
			}
			for _, cp := range crashPoints {
				if killed[cp.kind] == 0 {
					t.Errorf("no kill landed at %q", cp.kind)
				}
			}
			if removed == 0 {
				t.Errorf("%d kills left nothing for repair to remove", runs)
			}
			refs, err := newCP(t, st, crashOptions(st)).List(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d kills %v: repair removed %d items; %d checkpoints listed at the end", runs, killed, removed, len(refs))
		})
	}
}
