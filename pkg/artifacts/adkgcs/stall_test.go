package adkgcs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/gcstest"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// TestWalkStall: a store-wide walk without a deadline of the caller's is
// bounded by its progress, not its total time. A listing that stops
// answering ends the walk (and a repair plan's scan) with CodeTimeout
// saying so; a callback that blocks longer than the bound does not, as
// time spent outside the listing is not counted.
func TestWalkStall(t *testing.T) {
	srv := newEmulator(t)
	// Two scopes on one listing page: after the callback for the first,
	// the walk goes on with objects the page already brought.
	for i := range 3 {
		putObject(srv, fmt.Sprintf("app/u/s1/f-%d/0", i), []byte("x"), "text/plain", nil)
	}
	for i := range 2 {
		putObject(srv, fmt.Sprintf("app/u/s2/f-%d/0", i), []byte("x"), "text/plain", nil)
	}
	open := func(t *testing.T, idle time.Duration) (*artifacts.Store, *gcstest.Hanging) {
		c, h := gcstest.HangingClient(t, srv.URL())
		opts := adkgcsOptions(0)
		opts.Retry.WalkIdle = idle
		return artifacts.NewStore(openStore(t, c, "", opts)), h
	}

	t.Run("listing stops answering", func(t *testing.T) {
		st, h := open(t, 50*time.Millisecond)
		h.Hang()
		err := st.Walk(context.Background(), func(artifacts.ScopeUsage) error { return nil })
		if artifacts.CodeOf(err) != artifacts.CodeTimeout || !strings.Contains(err.Error(), "no progress for 50ms") {
			t.Fatalf("Walk: %v (code %s), want timeout after no progress for 50ms", err, artifacts.CodeOf(err))
		}
		plan, err := st.PlanRepair(context.Background(), artifacts.RepairOptions{})
		if artifacts.CodeOf(err) != artifacts.CodeTimeout || !strings.Contains(err.Error(), "no progress for 50ms") {
			t.Fatalf("PlanRepair: %v, %v (code %s), want timeout", plan, err, artifacts.CodeOf(err))
		}
	})
	t.Run("a callback longer than the bound", func(t *testing.T) {
		const idle = time.Second
		st, _ := open(t, idle)
		var scopes []string
		err := st.Walk(context.Background(), func(u artifacts.ScopeUsage) error {
			if len(scopes) == 0 {
				time.Sleep(idle + idle/4) // a verifier waiting for its readers
			}
			scopes = append(scopes, u.Scope.Session)
			return nil
		})
		if err != nil || strings.Join(scopes, " ") != "s1 s2" {
			t.Fatalf("Walk: %v, scopes %v", err, scopes)
		}
	})
	t.Run("the caller's deadline is kept", func(t *testing.T) {
		st, h := open(t, time.Hour)
		h.Hang()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := st.Walk(ctx, func(artifacts.ScopeUsage) error { return nil })
		if artifacts.CodeOf(err) != artifacts.CodeTimeout {
			t.Fatalf("Walk: %v (code %s), want timeout", err, artifacts.CodeOf(err))
		}
	})
}
