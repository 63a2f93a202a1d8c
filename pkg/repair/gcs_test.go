package repair_test

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
	"github.com/agentstore/agentstore/pkg/repair"
)

const gcsBucket = "repair-test"

// gcsFixture starts an in-process emulator holding the Erlang ADK Cloud
// Storage fixture, every object created an hour before now, and opens a
// Store on it.
func gcsFixture(t *testing.T, now time.Time) (*gcsstore.Store, *fakestorage.Server, int) {
	t.Helper()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: gcsBucket})
	objs, err := testfixtures.GCSObjectsList()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatal("the fixture has no objects")
	}
	for _, o := range objs {
		putObject(srv, o.Name, o.Data, now.Add(-time.Hour))
	}
	c, err := storage.NewClient(context.Background(),
		option.WithEndpoint(srv.URL()+"/storage/v1/"),
		option.WithoutAuthentication(),
		storage.WithJSONReads(),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	st, err := gcsstore.Open(context.Background(), c, gcsBucket, "", gcsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st, srv, len(objs)
}

func putObject(srv *fakestorage.Server, name string, data []byte, created time.Time) {
	srv.CreateObject(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{BucketName: gcsBucket, Name: name, Created: created, Updated: created},
		Content:     data,
	})
}

// objectSet lists every object of the bucket with its generation.
func objectSet(t *testing.T, st *gcsstore.Store) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	it := st.Client().Bucket(st.Bucket()).Objects(context.Background(), nil)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[a.Name] = a.Generation
	}
}

func countSuffix(objs []testfixtures.GCSObject, suffix string) int64 {
	n := int64(0)
	for _, o := range objs {
		if strings.HasSuffix(o.Name, suffix) {
			n++
		}
	}
	return n
}

// verifyFixture reads every version of the fixture through gcsstore Get
// and checks its payload against the record.
func verifyFixture(t *testing.T, st *gcsstore.Store) {
	t.Helper()
	exp, err := testfixtures.ExpectedGCS()
	if err != nil {
		t.Fatal(err)
	}
	if len(exp) == 0 {
		t.Fatal("expected.tsv is empty")
	}
	for _, e := range exp {
		sc := artifacts.Scope{Kind: artifacts.Kind(e.Kind), App: e.App, User: e.User, Session: e.Session}
		r, err := st.Get(context.Background(), sc, e.Name, e.Version)
		if err != nil {
			t.Fatalf("%s %s v%d: %v", sc, e.Name, e.Version, err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s %s v%d: %v", sc, e.Name, e.Version, err)
		}
		if int64(len(b)) != e.Size {
			t.Fatalf("%s %s v%d: %d bytes, want %d", sc, e.Name, e.Version, len(b), e.Size)
		}
	}
}

func TestRepairGCS(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	st, srv, nfix := gcsFixture(t, now)
	objs, _ := testfixtures.GCSObjectsList()
	reserves := countSuffix(objs, ".reserve")

	scope := artifacts.Scope{Kind: artifacts.KindSession, App: "demo-a", User: "user-42", Session: "session-7"}
	// An orphan payload an hour old: a write that never published.
	orphan := st.ObjectName(scope, "log.txt", 31, gcsstore.SuffixData)
	putObject(srv, st.ObjectName(scope, "log.txt", 31, gcsstore.SuffixReserve), nil, now.Add(-time.Hour))
	putObject(srv, orphan, []byte("xx"), now.Add(-time.Hour))
	// A young orphan payload: a write in progress.
	young := st.ObjectName(scope, "log.txt", 32, gcsstore.SuffixData)
	putObject(srv, st.ObjectName(scope, "log.txt", 32, gcsstore.SuffixReserve), nil, now.Add(-time.Second))
	putObject(srv, young, []byte("yy"), now.Add(-time.Second))
	// A record without its payload.
	rec := artifacts.Record{Scope: scope, Name: "notes.txt", Version: 1, MIMEType: "text/plain",
		Digest: strings.Repeat("a", 64), Size: 2, CreatedAt: now.UnixMilli()}
	b, err := artifacts.EncodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := st.ObjectName(scope, "notes.txt", 1, gcsstore.SuffixMeta)
	putObject(srv, st.ObjectName(scope, "notes.txt", 1, gcsstore.SuffixReserve), nil, now.Add(-time.Hour))
	putObject(srv, corrupt, b, now.Add(-time.Hour))
	scanned := int64(nfix + 6)
	opts := repair.Options{Now: func() time.Time { return now }}

	check := func(t *testing.T, rep repair.Report, removed int64) {
		t.Helper()
		if rep.Scanned != scanned || rep.Removed != removed || rep.ReservationsPreserved != reserves+3 || rep.Corrupt != 1 || rep.Young != 1 {
			t.Fatalf("scanned %d removed %d reservations %d corrupt %d young %d, want %d %d %d 1 1",
				rep.Scanned, rep.Removed, rep.ReservationsPreserved, rep.Corrupt, rep.Young, scanned, removed, reserves+3)
		}
		if rep.Root != "gs://"+gcsBucket+"/"+gcsstore.DefaultPrefix {
			t.Fatalf("root %q", rep.Root)
		}
		c := rep.CorruptItems[0]
		if c.Path != corrupt || c.Scope == nil || *c.Scope != scope || c.Name != "notes.txt" || c.Version != 1 {
			t.Fatalf("corrupt item %+v", c)
		}
		want := "agentstore artifacts delete --store gs://" + gcsBucket + "/" + gcsstore.DefaultPrefix +
			" --app demo-a --user user-42 --session session-7 --name notes.txt --version 1"
		if c.NextCommand != want {
			t.Fatalf("next command %q, want %q", c.NextCommand, want)
		}
	}

	// A dry run reports the same and removes nothing.
	before := objectSet(t, st)
	rep, err := repair.RepairGCS(ctx, st, repair.Options{Now: opts.Now, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	check(t, rep, 1)
	if !rep.DryRun || len(rep.RemovedItems) != 1 || rep.RemovedItems[0].Path != orphan || rep.RemovedItems[0].Reason != repair.ReasonOrphan {
		t.Fatalf("dry run: %+v", rep)
	}
	if after := objectSet(t, st); len(after) != len(before) {
		t.Fatalf("a dry run changed the bucket: %d objects, then %d", len(before), len(after))
	}

	// The limit stops the run before anything is removed.
	_, err = repair.RepairGCS(ctx, st, repair.Options{Now: opts.Now, Limit: 10})
	var le *repair.LimitError
	if !errors.As(err, &le) || le.Limit != 10 {
		t.Fatalf("limit: %v", err)
	}
	if after := objectSet(t, st); len(after) != len(before) {
		t.Fatal("a limited run changed the bucket")
	}

	// The real run removes the old orphan only.
	rep, err = repair.RepairGCS(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	check(t, rep, 1)
	if len(rep.RemovedItems) != 1 || rep.RemovedItems[0].Path != orphan || rep.RemovedItems[0].Size != 2 || len(rep.SkippedItems) != 0 {
		t.Fatalf("removed %+v skipped %+v", rep.RemovedItems, rep.SkippedItems)
	}
	after := objectSet(t, st)
	if _, ok := after[orphan]; ok {
		t.Fatal("the orphan payload is still there")
	}
	if len(after) != len(before)-1 {
		t.Fatalf("%d objects, then %d", len(before), len(after))
	}
	for _, keep := range []string{young, corrupt} {
		if _, ok := after[keep]; !ok {
			t.Fatalf("%s was removed", keep)
		}
	}
	verifyFixture(t, st)

	// A second run has nothing left to remove.
	scanned--
	rep, err = repair.RepairGCS(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	check(t, rep, 0)

	// With no grace the young orphan goes too.
	rep, err = repair.RepairGCS(ctx, st, repair.Options{Now: opts.Now, Grace: repair.NoGrace})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 1 || rep.Young != 0 || rep.RemovedItems[0].Path != young {
		t.Fatalf("no grace: %+v", rep)
	}
	verifyFixture(t, st)
}

// TestRepairGCSRewrittenOrNowPublished checks the execution's guards: a
// payload written again after the listing (a new generation) and a
// payload whose record was published after the listing are left alone.
func TestRepairGCSRewrittenOrNowPublished(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	st, srv, _ := gcsFixture(t, now)
	scope := artifacts.Scope{Kind: artifacts.KindApp, App: "demo-a"}
	rewritten := st.ObjectName(scope, "a.bin", 1, gcsstore.SuffixData)
	published := st.ObjectName(scope, "b.bin", 1, gcsstore.SuffixData)
	putObject(srv, rewritten, []byte("old"), now.Add(-time.Hour))
	putObject(srv, published, []byte("pay"), now.Add(-time.Hour))
	rep, err := repair.RepairGCS(ctx, st, repair.Options{
		Now: func() time.Time { return now },
		BeforeExecute: func() error {
			putObject(srv, rewritten, []byte("new!"), now.Add(-time.Hour))
			putObject(srv, st.ObjectName(scope, "b.bin", 1, gcsstore.SuffixMeta), []byte("record"), now)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 0 || len(rep.SkippedItems) != 2 {
		t.Fatalf("removed %+v skipped %+v", rep.RemovedItems, rep.SkippedItems)
	}
	after := objectSet(t, st)
	for _, keep := range []string{rewritten, published} {
		if _, ok := after[keep]; !ok {
			t.Fatalf("%s was removed", keep)
		}
	}
}

// TestRepairGCSUndecodableRecord reports a record without payload that
// does not decode, with no next command.
func TestRepairGCSUndecodableRecord(t *testing.T) {
	now := time.Now()
	st, srv, _ := gcsFixture(t, now)
	scope := artifacts.Scope{Kind: artifacts.KindApp, App: "demo-a"}
	name := st.ObjectName(scope, "c.bin", 4, gcsstore.SuffixMeta)
	putObject(srv, name, []byte("not a record"), now.Add(-time.Hour))
	rep, err := repair.RepairGCS(context.Background(), st, repair.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Corrupt != 1 || rep.CorruptItems[0].Path != name || rep.CorruptItems[0].NextCommand != "" || rep.CorruptItems[0].Scope != nil ||
		!strings.Contains(rep.CorruptItems[0].Reason, "does not say which artifact") {
		t.Fatalf("%+v", rep.CorruptItems)
	}
}

// TestLockGCS: the store lock of a gs:// store (its artifacts.Locker
// backend) through the one lock contract: held, released, a lock whose
// heartbeat is 5 hours old holds, one 7 hours old is taken over; repair
// neither scans nor removes it.
func TestLockGCS(t *testing.T) {
	st, srv, _ := gcsFixture(t, time.Now())
	ctx := context.Background()
	b := artifacts.NewStore(st)
	acquire := func() (*lock.Lock, error) {
		lb, err := b.StoreLock()
		if err != nil {
			t.Fatal(err)
		}
		return lock.AcquireBackend(ctx, lb, lock.Options{Purpose: "test", RefreshInterval: -1})
	}
	l, err := acquire()
	if err != nil {
		t.Fatal(err)
	}
	_, err = acquire()
	var held *lock.HeldError
	if !errors.As(err, &held) || held.Holder.PID != os.Getpid() || held.Holder.Purpose != "test" {
		t.Fatalf("second lock: %v (%+v)", err, held)
	}
	if cmdutilCode := held.ErrorCode(); cmdutilCode != "locked" {
		t.Fatalf("code %q", cmdutilCode)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l, err = acquire()
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l.Release()
	// A lock left by a repair on another host that died long ago is taken
	// over; its heartbeat (here the object's update time) decides.
	old := []byte(`{"host":"elsewhere.invalid","pid":1,"purpose":"fs repair","token":"t","started":"2026-01-01T00:00:00Z"}`)
	putObject(srv, st.Prefix()+"/"+repair.GCSLockObject, old, time.Now().Add(-5*time.Hour))
	if _, err := acquire(); !errors.As(err, &held) || held.Holder.PID != 1 {
		t.Fatalf("a lock refreshed 5 hours ago must hold: %v", err)
	}
	putObject(srv, st.Prefix()+"/"+repair.GCSLockObject, old, time.Now().Add(-7*time.Hour))
	l, err = acquire()
	if err != nil {
		t.Fatalf("stale lock not taken over: %v", err)
	}
	if _, err := acquire(); !errors.As(err, &held) || held.Holder.PID != os.Getpid() {
		t.Fatalf("the lock is not ours after the takeover: %v", err)
	}
	// The lock object is not the store's: repair neither scans nor removes it.
	rep, err := repair.RepairGCS(ctx, st, repair.Options{Grace: repair.NoGrace})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range rep.RemovedItems {
		if strings.Contains(it.Path, repair.GCSLockObject) {
			t.Fatalf("repair removed its own lock: %+v", it)
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}
