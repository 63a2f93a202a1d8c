//go:build crash

package adkfile_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/crashtest"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
)

// childMigrateEnv, when set, makes the test binary a migrating child over
// the store it names (see runMigrateChild).
const childMigrateEnv = "ADKFILE_MIGRATE_CHILD"

func TestMain(m *testing.M) {
	if root := os.Getenv(childMigrateEnv); root != "" {
		os.Exit(runMigrateChild(root))
	}
	os.Exit(m.Run())
}

// runMigrateChild plans and executes the migration of the store at root,
// reporting "start", then "rename N" before each rename, through a
// crashtest.Reporter, until it is killed or done.
func runMigrateChild(root string) int {
	rep, err := crashtest.NewReporter()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	st, err := adkfile.Open(root, adkfile.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rep.Report("start")
	adkfile.SetMigrateStepHook(func(step int) error {
		rep.Report(fmt.Sprint("rename ", step))
		return nil
	})
	ctx := context.Background()
	m, err := st.PlanMigration(ctx, adkfile.MigrateOptions{From: adkfile.FromLegacy})
	if err == nil {
		_, err = st.ExecuteMigration(ctx, m)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestMigrateKilled kills a migrating process (SIGKILL, at a rename it
// reported: frozen there, or running on past it) again and again, each
// time in the store the last kill left. After every kill each version is
// in exactly one of the two trees with its bytes; a last run, not killed,
// ends with the tree an uninterrupted migration makes.
func TestMigrateKilled(t *testing.T) {
	plant := func(t *testing.T, root string) {
		for n := range 4 {
			for v := range 3 {
				version(t, root, legacySession, fmt.Sprintf("n%d.txt", n), v, fmt.Sprintf("n%d v%d", n, v), fmt.Sprintf("n%d.txt", n))
			}
		}
		// Two names join versions in apps/: one rename per version.
		version(t, root, appsSession, "n0.txt", 9, "apps n0 v9", "n0.txt")
		version(t, root, appsSession, "n1.txt", 9, "apps n1 v9", "n1.txt")
		version(t, root, legacyUser, "u.txt", 0, "u v0", "user:u.txt")
	}
	want := migratedContents(t, plant)
	// Every version, wherever it lies: "n0.txt v1" -> its payload.
	versionsAnywhere := func(t *testing.T, root string) map[string][]string {
		t.Helper()
		out := map[string][]string{}
		for rel, data := range contents(t, root) {
			parts := strings.Split(rel, string(filepath.Separator))
			if len(parts) < 4 || parts[len(parts)-1] == "metadata.json" {
				continue
			}
			k := parts[len(parts)-4] + " v" + parts[len(parts)-2]
			out[k] = append(out[k], data)
		}
		return out
	}
	root := t.TempDir()
	plant(t, root)
	before := versionsAnywhere(t, root) // a move changes no version's place in this map
	kills := 0
	for _, kp := range []crashtest.Point{
		{Kind: "rename", N: 1, Freeze: true},
		{Kind: "rename", N: 2, Freeze: false},
		{Kind: "rename", N: 1, Freeze: true},
		{Kind: "rename", N: 3, Freeze: true},
		{Kind: "rename", N: 1, Freeze: false},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childMigrateEnv+"="+root)
		outcome, last, err := crashtest.Run(cmd, kp, nil)
		if err != nil {
			t.Fatalf("the migrating child: %v", err)
		}
		if outcome == crashtest.Killed {
			kills++
		}
		got := versionsAnywhere(t, root)
		for k, datas := range got {
			if len(datas) != 1 {
				t.Fatalf("after a kill at %s (last report %q): %s is in %d places", kp, last, k, len(datas))
			}
		}
		if !maps.EqualFunc(got, before, func(a, b []string) bool { return a[0] == b[0] }) {
			t.Fatalf("after a kill at %s: versions %v, want %v", kp, got, before)
		}
	}
	if kills == 0 {
		t.Fatal("no run was killed")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childMigrateEnv+"="+root)
	if outcome, _, err := crashtest.Run(cmd, crashtest.Point{Kind: "never"}, nil); err != nil || outcome != crashtest.Finished {
		t.Fatalf("the last run: %v %v", outcome, err)
	}
	if got := contents(t, root); !maps.Equal(got, want) {
		t.Errorf("after the last run the tree differs from an uninterrupted migration:\n got %v\nwant %v", got, want)
	}
	t.Logf("%d of 5 runs killed", kills)
}
