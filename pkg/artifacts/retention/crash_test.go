//go:build crash

package retention

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/crashtest"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/repair"
)

// childStoreEnv, when set, makes the test binary a pruning child over the
// store it names (see runChild).
const childStoreEnv = "RETENTION_CHILD_STORE"

// crashPolicy is what the child prunes by.
var crashPolicy = Policy{KeepLast: 1}

func TestMain(m *testing.M) {
	if root := os.Getenv(childStoreEnv); root != "" {
		os.Exit(runChild(root))
	}
	os.Exit(m.Run())
}

// runChild plans and executes a prune of the store at root, reporting
// "start", "planned" and "name i/n" after each name through a
// crashtest.Reporter, until it is killed or done.
func runChild(root string) int {
	rep, err := crashtest.NewReporter()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st := artifacts.NewStore(d)
	rep.Report("start")
	ctx := context.Background()
	p, err := ComputePlan(ctx, st, Options{Store: "file://" + root, Policy: crashPolicy})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rep.Report("planned")
	res, err := Execute(ctx, st, p, ExecOptions{Progress: func(done, total int) { rep.Report(fmt.Sprintf("name %d/%d", done, total)) }})
	if err != nil || len(res.Failed) > 0 {
		fmt.Fprintln(os.Stderr, err, res.Failed)
		return 1
	}
	return 0
}

// TestCrashSafety kills a pruning child with SIGKILL 100 times (20 with
// -short), at points taken from its own progress reports (frozen at a
// report, or running on past it), adding versions whenever little is left
// to prune. After every kill, fs repair (no grace) and fs verify find a
// store where every version listed reads back whole, every version the
// policy keeps is there, and nothing else appeared: a version is either
// listed with its payload or gone.
func TestCrashSafety(t *testing.T) {
	runs := 100
	if testing.Short() {
		runs = 20
	}
	ctx := context.Background()
	root := t.TempDir()
	d, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(d)
	rng := rand.New(rand.NewPCG(3, 5))
	scopes := []artifacts.Scope{artifacts.AppScope("a"), artifacts.UserScope("a", "u"), artifacts.SessionScope("a", "u", "s1"), artifacts.SessionScope("b", "u", "s2")}
	type key struct {
		scope artifacts.Scope
		name  string
	}
	latest := map[key]int64{}
	ever := map[string]bool{}
	repaired := int64(0) // files repair removed after a kill: half-deleted versions
	add := func() {
		for _, sc := range scopes {
			for n := range 8 {
				name := fmt.Sprintf("n%d.txt", n)
				for range 1 + rng.IntN(3) {
					rec, err := st.Put(ctx, sc, name, strings.NewReader(strings.Repeat("x", 1+rng.IntN(4000))), artifacts.PutOptions{})
					if err != nil {
						t.Fatal(err)
					}
					latest[key{sc, name}] = rec.Version
					ever[fmt.Sprintf("%s|%s|%d", sc, name, rec.Version)] = true
				}
			}
		}
	}
	check := func(when string) (prunable int) {
		t.Helper()
		rrep, err := repair.Repair(ctx, root, repair.Options{Grace: repair.NoGrace, Now: time.Now})
		if err != nil {
			t.Fatalf("%s: repair: %v", when, err)
		}
		repaired += rrep.Removed
		if rrep.Corrupt != 0 {
			t.Fatalf("%s: repair found %d corrupt versions: %+v", when, rrep.Corrupt, rrep.CorruptItems)
		}
		vrep, err := repair.Verify(ctx, st, repair.VerifyOptions{})
		if err != nil {
			t.Fatalf("%s: verify: %v", when, err)
		}
		if vrep.Corrupt != 0 || vrep.Unreadable != 0 {
			t.Fatalf("%s: verify: %+v", when, vrep)
		}
		listed := listAll(t, st)
		for k := range listed {
			if !ever[k] {
				t.Fatalf("%s: %s is listed but was never put", when, k)
			}
		}
		for k, v := range latest {
			if !listed[fmt.Sprintf("%s|%s|%d", k.scope, k.name, v)] {
				t.Fatalf("%s: the latest version v%d of %q in %s is gone", when, v, k.name, k.scope)
			}
		}
		return len(listed) - len(latest)
	}
	add()
	kills, finished := 0, 0
	for kills < runs {
		if left := check(fmt.Sprintf("kill %d", kills)); left < 20 {
			add()
			check("after adding")
		}
		names := len(latest)
		var kp crashtest.Point
		switch kills % 3 {
		case 0:
			kp = crashtest.Point{Kind: "name", N: 1 + rng.IntN(names/2), Freeze: true}
		case 1:
			kp = crashtest.Point{Kind: "name", N: 1 + rng.IntN(names/2), Freeze: false}
		default:
			kp = crashtest.Point{N: 1 + rng.IntN(3), Freeze: false}
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childStoreEnv+"="+root)
		outcome, last, err := crashtest.Run(cmd, kp, nil)
		if err != nil {
			t.Fatalf("the pruning child: %v", err)
		}
		if outcome == crashtest.Finished {
			if finished++; finished > runs {
				t.Fatalf("the child finished %d times before its kill point %s (its last report %q)", finished, kp, last)
			}
			continue
		}
		kills++
	}
	check("after the last kill")
	// A last prune, not killed, leaves exactly the latest versions.
	p, err := ComputePlan(ctx, st, Options{Store: "file://" + root, Policy: crashPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Execute(ctx, st, p, ExecOptions{}); err != nil || len(res.Failed) > 0 {
		t.Fatalf("the last prune: %v %+v", err, res)
	}
	if left := check("after the last prune"); left != 0 {
		t.Fatalf("%d versions beyond the latest are left", left)
	}
	t.Logf("%d kills, %d runs finished before their kill point; repair removed %d files of half-deleted versions", kills, finished, repaired)
}
