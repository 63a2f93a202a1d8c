package artifacts_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
)

// BenchmarkPortableOverhead measures what the portable layer adds to a
// call, on the in-memory driver (no I/O, so the checks are not hidden by
// it): each call made on the driver directly and through *Store.
func BenchmarkPortableOverhead(b *testing.B) {
	ctx := context.Background()
	scope := artifacts.SessionScope("bench-app", "user-1", "session-1")
	payload := bytes.Repeat([]byte("x"), 1024)
	md := artifacts.Metadata{"turn": int64(3), "tool": "search"}
	for _, via := range []string{"driver", "store"} {
		m, err := memstore.New(memstore.Options{MaxScanEntries: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		var d artifacts.Driver = m
		if via == "store" {
			d = artifacts.NewStore(m)
		}
		for i := range 100 {
			if _, err := d.Put(ctx, scope, fmt.Sprintf("reports/%03d", i), bytes.NewReader(payload), artifacts.PutOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.Run("Put1KiB/"+via, func(b *testing.B) {
			for b.Loop() {
				if _, err := d.Put(ctx, scope, "report.txt", bytes.NewReader(payload), artifacts.PutOptions{MIMEType: "text/plain", Metadata: md}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Stat/"+via, func(b *testing.B) {
			for b.Loop() {
				if _, err := d.Stat(ctx, scope, "reports/050", artifacts.Latest); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("ListNames100/"+via, func(b *testing.B) {
			for b.Loop() {
				if _, err := d.ListNames(ctx, scope, artifacts.ListOptions{Limit: 100}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
