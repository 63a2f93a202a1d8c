package workspace

import (
	"context"
	"errors"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

func TestChargeTurn(t *testing.T) {
	ctx := context.Background()
	scope := artifacts.SessionScope("app", "u", "s")
	tests := []struct {
		name      string
		quota     Quota
		charges   []int64
		wantOK    []bool
		remaining int64 // of the last refused charge
	}{
		{"unlimited", Quota{}, []int64{1 << 40}, []bool{true}, 0},
		{"turn limit", Quota{TurnBytes: 100}, []int64{60, 50, 40}, []bool{true, false, true}, 40},
		{"total limit does not apply", Quota{TotalBytes: 10}, []int64{100}, []bool{true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{Quota: tt.quota})
			w := mustOpen(t, m, scope)
			for i, n := range tt.charges {
				refund, err := w.ChargeTurn("memory/x", n)
				if (err == nil) != tt.wantOK[i] {
					t.Fatalf("charge %d of %d: err %v, want ok %v", i, n, err, tt.wantOK[i])
				}
				if err != nil {
					var ae *artifacts.Error
					if !errors.As(err, &ae) || ae.Code != artifacts.CodeQuotaExceeded || ae.Remaining != tt.remaining {
						t.Fatalf("charge %d: %v, want quota_exceeded with %d remaining", i, err, tt.remaining)
					}
					continue
				}
				if refund == nil {
					t.Fatal("nil refund")
				}
			}
			if u := w.Quota().Usage; u != 0 {
				t.Errorf("usage %d after charges outside the workspace, want 0", u)
			}
		})
	}
	t.Run("refund", func(t *testing.T) {
		m := newManager(t, artifacts.NewStore(newStore(t, fsstore.Options{})), Options{Quota: Quota{TurnBytes: 100}})
		w := mustOpen(t, m, scope)
		refund, err := w.ChargeTurn("x", 100)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.ChargeTurn("x", 1); err == nil {
			t.Fatal("charge over the turn allowance accepted")
		}
		refund()
		if _, err := w.ChargeTurn("x", 100); err != nil {
			t.Fatalf("after refund: %v", err)
		}
		if err := w.BeginTurn(ctx); err != nil {
			t.Fatal(err)
		}
		if st := w.Quota(); st.TurnUsed != 0 {
			t.Errorf("turn used %d after BeginTurn", st.TurnUsed)
		}
	})
}
