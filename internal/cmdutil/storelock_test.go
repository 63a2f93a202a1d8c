package cmdutil_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/gcstest"
	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkgcs"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
)

// TestLockStore: every lockable driver's store lock goes through the one
// contract: a second run is refused with exit status 5 and the unlock
// command for that store; a run whose lock is taken over has its context
// cancelled with a cause wrapping lock.ErrLost, its next heartbeat fails,
// and its release leaves the new holder's lock. A store whose driver
// cannot be locked is refused as unsupported.
func TestLockStore(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		open   func(t *testing.T) (*artifacts.Store, cmdutil.StoreURI)
		where  string
		unlock string
	}{
		{"erlang-fs", func(t *testing.T) (*artifacts.Store, cmdutil.StoreURI) {
			dir := t.TempDir()
			d, err := fsstore.Open(dir, fsstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			u, err := cmdutil.ParseStoreURI(dir)
			if err != nil {
				t.Fatal(err)
			}
			return artifacts.NewStore(d), u
		}, "/.agentstore-repair.lock", "agentstore unlock --store /"},
		{"erlang-gcs", func(t *testing.T) (*artifacts.Store, cmdutil.StoreURI) {
			c := gcstest.Client(t, "bkt-one")
			d, err := gcsstore.Open(ctx, c, "bkt-one", "adk-artifacts/v1", gcsstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			u, err := cmdutil.ParseStoreURI("gs://bkt-one")
			if err != nil {
				t.Fatal(err)
			}
			return artifacts.NewStore(d), u
		}, "gs://bkt-one/adk-artifacts/v1/.agentstore-repair.lock", "agentstore unlock --store gs://bkt-one --layout erlang-gcs"},
		{"google-adk-gcs", func(t *testing.T) (*artifacts.Store, cmdutil.StoreURI) {
			c := gcstest.Client(t, "bkt-two")
			d, err := adkgcs.Open(ctx, c, "bkt-two", "agents", adkgcs.Options{})
			if err != nil {
				t.Fatal(err)
			}
			u, err := cmdutil.ParseStoreURI("gs://bkt-two/agents")
			if err != nil {
				t.Fatal(err)
			}
			return artifacts.NewStore(d), u
		}, "gs://bkt-two/agents/.agentstore-repair.lock", "agentstore unlock --store gs://bkt-two/agents --layout google-adk-gcs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, u := tc.open(t)
			lctx, lk, err := cmdutil.LockStore(ctx, st, u, "fs repair", 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := st.StoreLock()
			if err != nil || !strings.HasSuffix(b.Where(), tc.where) {
				t.Fatalf("StoreLock: %v, %v; want %s", b, err, tc.where)
			}
			_, _, err = cmdutil.LockStore(ctx, st, u, "artifacts prune", 0, nil)
			if cmdutil.ExitCode(err) != cmdutil.ExitLocked || !strings.Contains(err.Error(), tc.unlock) || !strings.Contains(err.Error(), "locked by fs repair") {
				t.Fatalf("second run: exit %d: %v", cmdutil.ExitCode(err), err)
			}
			// Another run removes the lock (unlock --force) and takes it.
			s, err := lock.InspectBackend(ctx, b, lock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := lock.RemoveContext(ctx, s); err != nil {
				t.Fatal(err)
			}
			other, err := lock.AcquireBackend(ctx, b, lock.Options{Purpose: "other", RefreshInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Release()
			err = lk.Refresh()
			if !errors.Is(err, lock.ErrLost) || !strings.Contains(err.Error(), b.Where()) {
				t.Fatalf("Refresh after the takeover: %v", err)
			}
			<-lctx.Done() // never cancelled: the test times out
			if !errors.Is(context.Cause(lctx), lock.ErrLost) {
				t.Fatalf("cause %v", context.Cause(lctx))
			}
			if err := lk.Release(); err == nil {
				t.Fatal("Release removed the other run's lock")
			}
			if err := other.Refresh(); err != nil {
				t.Fatalf("the other run lost its lock: %v", err)
			}
		})
	}
	t.Run("memory", func(t *testing.T) {
		d, err := memstore.New(memstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		u, err := cmdutil.ParseStoreURI(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = cmdutil.LockStore(ctx, artifacts.NewStore(d), u, "fs repair", 0, nil)
		if cmdutil.ErrorCode(err) != cmdutil.CodeUnsupportedStore {
			t.Fatalf("memory store: %v", err)
		}
	})
}
