package gcsstore_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/gcstest"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// TestWalkStall: a store-wide walk without a deadline of the caller's is
// bounded by its progress, not its total time. Requests that stop being
// answered end Walk and ListScopes with CodeTimeout saying so; a callback
// that blocks longer than the bound does not, as time spent outside the
// walk is not counted.
func TestWalkStall(t *testing.T) {
	srv := newEmulator(t)
	open := func(t *testing.T, idle time.Duration) (*artifacts.Store, *gcstest.Hanging) {
		c, h := gcstest.HangingClient(t, srv.URL())
		return artifacts.NewStore(openStore(t, c, gcsstore.Options{WalkIdle: idle, MaxAttempts: 1})), h
	}
	st, _ := open(t, time.Hour)
	for _, sess := range []string{"s1", "s2"} {
		scope := artifacts.Scope{Kind: artifacts.KindSession, App: "a", User: "u", Session: sess}
		if _, err := st.Put(context.Background(), scope, "n.txt", bytes.NewReader([]byte("x")), artifacts.PutOptions{MIMEType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("requests stop being answered", func(t *testing.T) {
		st, h := open(t, 50*time.Millisecond)
		h.Hang()
		err := st.Walk(context.Background(), func(artifacts.ScopeUsage) error { return nil })
		if artifacts.CodeOf(err) != artifacts.CodeTimeout || !strings.Contains(err.Error(), "no progress for 50ms") {
			t.Fatalf("Walk: %v (code %s), want timeout after no progress for 50ms", err, artifacts.CodeOf(err))
		}
		scopes, err := st.ListScopes(context.Background())
		if artifacts.CodeOf(err) != artifacts.CodeTimeout || !strings.Contains(err.Error(), "no progress for 50ms") {
			t.Fatalf("ListScopes: %v, %v (code %s), want timeout", scopes, err, artifacts.CodeOf(err))
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
		if err != nil || len(scopes) != 2 {
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
