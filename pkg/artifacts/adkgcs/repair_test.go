package adkgcs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkgcs"
)

// newFSEmulator starts an in-process fake-gcs-server with its filesystem
// backend below dir, so that tests can damage an object's stored bytes
// behind the CRC32C the emulator computed.
func newFSEmulator(tb testing.TB, dir string) *fakestorage.Server {
	tb.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0, StorageRoot: dir})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: testBucket})
	return srv
}

// flipByte damages one byte in the middle of an object's stored bytes.
func flipByte(tb testing.TB, dir, object string) {
	tb.Helper()
	path := filepath.Join(dir, testBucket, filepath.FromSlash(object))
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

// generations lists every object of the bucket with its generation, size
// and CRC32C: what must not change.
func generations(tb testing.TB, srv *fakestorage.Server) []string {
	tb.Helper()
	var out []string
	eachObject(tb, srv, func(o fakestorage.ObjectAttrs) {
		out = append(out, fmt.Sprintf("%s gen=%d size=%d crc=%s", o.Name, o.Generation, o.Size, o.Crc32c))
	})
	slices.Sort(out)
	return out
}

// TestPlanRepair runs the repair planner over buckets with damaged bytes,
// foreign objects and ambiguous user namespaces, and checks what it
// reports, that the next commands name the damaged versions, that Execute
// removes nothing and says so, and that the bucket is unchanged (every
// object's generation, size and CRC32C).
func TestPlanRepair(t *testing.T) {
	type item struct {
		path string
		code artifacts.Code
		next string // a substring of NextCommand; "" for none
	}
	tests := []struct {
		name    string
		fixture string // loaded at the bucket's root
		extra   []string
		flip    []string
		root    string
		want    []item
		notes   []string // substrings of the notes after NoteRemovesNothing
	}{
		{name: "intact adk-go bucket", fixture: testfixtures.ADKGCSGo},
		{name: "intact ADK JS bucket (user-scope names without user:)", fixture: testfixtures.ADKGCSJS},
		{
			name:    "damaged bytes",
			fixture: testfixtures.ADKGCSGo,
			flip:    []string{"shop-agent/alice/s-0001/chart.png/2", "shop-agent/alice/user/user:profile.json/1"},
			want: []item{
				{"shop-agent/alice/s-0001/chart.png/2", artifacts.CodeCorrupt, "agentstore artifacts delete --store gs://adk-bucket --app shop-agent --user alice --session s-0001 --name chart.png --version 2"},
				{"shop-agent/alice/user/user:profile.json/1", artifacts.CodeCorrupt, "--app shop-agent --user alice --name user:profile.json --version 1"},
			},
		},
		{
			name:    "foreign and shadowed objects",
			fixture: testfixtures.ADKGCSJS,
			extra:   []string{"crm-agent/erin/c-01/notes.txt", "crm-agent/erin/c-01/chart.png/latest", "crm-agent/erin/c-01/x/007", "crm-agent/erin/user/user:prefs.json/0"},
			want: []item{
				{"crm-agent/erin/c-01/chart.png/latest", artifacts.CodeForeign, ""},
				{"crm-agent/erin/c-01/notes.txt", artifacts.CodeForeign, ""},
				{"crm-agent/erin/c-01/x/007", artifacts.CodeForeign, ""},
				// The JS form of a name that also has the form Go reads.
				{"crm-agent/erin/user/prefs.json/0", artifacts.CodeForeign, ""},
				{"crm-agent/erin/user/prefs.json/1", artifacts.CodeForeign, ""},
			},
		},
		{
			name:    "a session named user in an adk-go bucket",
			fixture: testfixtures.ADKGCSGo,
			extra:   []string{"shop-agent/alice/user/draft.txt/1"},
			notes:   []string{`shop-agent/alice/user/ holds 1 object without "user:" in its filename (shop-agent/alice/user/draft.txt/1)`, `a session named "user"`},
		},
		{
			name:  "below a prefix, damaged and foreign",
			root:  "team/",
			extra: []string{"team/a/u/s/x.txt/1", "team/a/u/s/y.txt/1", "team/a/u/s/notes.md", "outside/a/u/s/z/1"},
			flip:  []string{"team/a/u/s/x.txt/1"},
			want: []item{
				{"team/a/u/s/notes.md", artifacts.CodeForeign, ""},
				{"team/a/u/s/x.txt/1", artifacts.CodeCorrupt, "agentstore artifacts delete --store gs://adk-bucket/team --app a --user u --session s --name x.txt --version 1"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			srv := newFSEmulator(t, dir)
			if tt.fixture != "" {
				loadFixture(t, srv, tt.fixture, "")
			}
			for _, o := range tt.extra {
				putObject(srv, o, []byte("bytes of "+o), "text/plain", nil)
			}
			for _, o := range tt.flip {
				flipByte(t, dir, o)
			}
			before := generations(t, srv)
			d := openStore(t, newClient(t, srv), tt.root, adkgcs.Options{})
			st := artifacts.NewStore(d)
			if !st.CanRepair() {
				t.Fatal("CanRepair is false")
			}
			var progress int64
			plan, err := st.PlanRepair(t.Context(), artifacts.RepairOptions{Progress: func(n int64) { progress = n }})
			if err != nil {
				t.Fatal(err)
			}
			rep := plan.Report()
			scanned := int64(0)
			for _, g := range before {
				if strings.HasPrefix(g, tt.root) {
					scanned++
				}
			}
			if rep.Scanned != scanned || progress != scanned {
				t.Errorf("scanned %d (progress %d), want the %d objects below the root", rep.Scanned, progress, scanned)
			}
			var got []item
			for _, c := range rep.CorruptItems {
				got = append(got, item{c.Path, c.Code, c.NextCommand})
				if c.Code == artifacts.CodeCorrupt && (c.Scope == nil || c.Name == "" || !strings.Contains(c.Reason, "CRC32C")) {
					t.Errorf("corrupt item %+v: want its scope, name and a reason naming the CRC32C", c)
				}
			}
			if len(got) != len(tt.want) || rep.Corrupt != int64(len(tt.want)) {
				t.Fatalf("corrupt items (%d counted):\n%v\nwant\n%v", rep.Corrupt, got, tt.want)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.path != w.path || g.code != w.code || (w.next == "") != (g.next == "") || !strings.Contains(g.next, w.next) {
					t.Errorf("item %d = %+v, want %+v", i, g, w)
				}
			}
			wantNotes := 1 // every note of tt.notes is about one namespace
			if len(tt.notes) > 0 {
				wantNotes = 2
			}
			if len(rep.Notes) != wantNotes {
				t.Errorf("notes %q: want %d", rep.Notes, wantNotes)
			}
			if len(rep.Notes) == 0 || rep.Notes[0] != adkgcs.NoteRemovesNothing {
				t.Fatalf("notes %q: want the note that repair removes nothing first", rep.Notes)
			}
			for _, n := range tt.notes {
				if !strings.Contains(strings.Join(rep.Notes[1:], "\n"), n) {
					t.Errorf("notes %q: want %q", rep.Notes[1:], n)
				}
			}
			if !rep.DryRun || rep.Removed != 0 || len(rep.RemovedItems) != 0 || rep.GraceSeconds != 0 {
				t.Errorf("the plan's report: dry run %v, removed %d %v, grace %v", rep.DryRun, rep.Removed, rep.RemovedItems, rep.GraceSeconds)
			}
			done, err := plan.Execute(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if done.DryRun || done.Removed != 0 || len(done.RemovedItems) != 0 || len(done.SkippedItems) != 0 || done.Corrupt != rep.Corrupt || done.Notes[0] != adkgcs.NoteRemovesNothing {
				t.Errorf("Execute's report: %+v", done)
			}
			if _, err := plan.Execute(t.Context()); artifacts.CodeOf(err) != artifacts.CodeConflict {
				t.Errorf("a second Execute: %v, want conflict", err)
			}
			if after := generations(t, srv); !slices.Equal(before, after) {
				t.Errorf("the bucket changed:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// TestPlanRepairFailures checks that a repair that cannot finish its scan
// plans nothing and says why: past the limit, an emulator that is gone
// (unreadable is not corrupt: an error, not a report), a canceled
// context, and an Execute under a canceled context.
func TestPlanRepairFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(srv *fakestorage.Server) (context.Context, artifacts.RepairOptions)
		check func(error) bool
	}{
		{
			name: "limit",
			setup: func(*fakestorage.Server) (context.Context, artifacts.RepairOptions) {
				return context.Background(), artifacts.RepairOptions{Limit: 10}
			},
			check: func(err error) bool {
				var le *artifacts.RepairLimitError
				return errors.As(err, &le) && le.Limit == 10
			},
		},
		{
			name: "emulator gone",
			setup: func(srv *fakestorage.Server) (context.Context, artifacts.RepairOptions) {
				srv.Stop()
				return context.Background(), artifacts.RepairOptions{}
			},
			check: func(err error) bool {
				c := artifacts.CodeOf(err)
				return c == artifacts.CodeUnavailable || c == artifacts.CodeIO
			},
		},
		{
			name: "canceled",
			setup: func(*fakestorage.Server) (context.Context, artifacts.RepairOptions) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, artifacts.RepairOptions{}
			},
			check: func(err error) bool { return artifacts.CodeOf(err) == artifacts.CodeCanceled },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newEmulator(t)
			loadFixture(t, srv, testfixtures.ADKGCSJS, "")
			d := openStore(t, newClient(t, srv), "", adkgcs.Options{})
			ctx, opts := tt.setup(srv)
			opts.Workers = 1
			plan, err := d.PlanRepair(ctx, opts)
			if plan != nil || !tt.check(err) {
				t.Fatalf("PlanRepair = %v, %v (code %q)", plan, err, artifacts.CodeOf(err))
			}
		})
	}
	t.Run("execute canceled", func(t *testing.T) {
		srv := newEmulator(t)
		loadFixture(t, srv, testfixtures.ADKGCSJS, "")
		d := openStore(t, newClient(t, srv), "", adkgcs.Options{})
		plan, err := d.PlanRepair(t.Context(), artifacts.RepairOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := plan.Execute(ctx); artifacts.CodeOf(err) != artifacts.CodeCanceled {
			t.Errorf("Execute under a canceled context: %v", err)
		}
	})
}
