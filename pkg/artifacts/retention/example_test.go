package retention_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
	"github.com/agentstore/agentstore/pkg/artifacts/retention"
)

func ExampleParseDuration() {
	for _, s := range []string{"30d", "2w", "1d12h", "90m"} {
		d, err := retention.ParseDuration(s)
		fmt.Println(s, d, retention.FormatDuration(d), err)
	}
	// Output:
	// 30d 720h0m0s 30d <nil>
	// 2w 336h0m0s 14d <nil>
	// 1d12h 36h0m0s 1d12h <nil>
	// 90m 1h30m0s 1h30m <nil>
}

// Plan a prune that keeps the last 2 versions of every name and anything
// younger than a week, then execute exactly that plan.
func ExampleComputePlan() {
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	clock := now
	ms, _ := memstore.New(memstore.Options{Now: func() time.Time { return clock }})
	st := artifacts.NewStore(ms)
	scope := artifacts.SessionScope("app", "user", "session")
	for _, age := range []int{30, 20, 6, 3, 1} { // days
		clock = now.AddDate(0, 0, -age)
		st.Put(ctx, scope, "report.md", strings.NewReader("draft"), artifacts.PutOptions{})
	}
	p, err := retention.ComputePlan(ctx, st, retention.Options{
		Store:  "mem://example",
		Policy: retention.Policy{KeepLast: 2, KeepWithin: 7 * 24 * time.Hour},
		Now:    now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range p.Names {
		for _, v := range n.Kept {
			fmt.Printf("keep  v%d: %s\n", v.Version, v.Reason)
		}
		for _, v := range n.Pruned {
			fmt.Printf("prune v%d: %s\n", v.Version, v.Reason)
		}
	}
	res, err := retention.Execute(ctx, st, p, retention.ExecOptions{MaxDelete: 10})
	fmt.Println(res.DeletedVersions, "deleted", err)
	// Output:
	// keep  v3: created within 7d
	// keep  v4: one of the last 2
	// keep  v5: latest version
	// prune v1: not one of the last 2, created more than 7d ago
	// prune v2: not one of the last 2, created more than 7d ago
	// 2 deleted <nil>
}
