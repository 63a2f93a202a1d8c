package quota

import (
	"context"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/retention"
)

// BenchmarkPrunePlan plans a prune (keep the last 3 versions of every
// name) over the store BenchmarkReport reports on: 100,000 versions in
// 2,000 scopes. Run the two side by side, so that the load on the machine
// is the same for both:
//
//	QUOTA_BENCH_DIR=/dev/shm/quota-bench go test -run '^$' -bench 'BenchmarkReport|BenchmarkPrunePlan' -benchtime 3x -count 2 ./pkg/quota/
func BenchmarkPrunePlan(b *testing.B) {
	root := benchStore(b)
	st := artifacts.NewStore(openFS(b, root))
	ctx := context.Background()
	opts := retention.Options{Store: "file://" + root, Policy: retention.Policy{KeepLast: 3}, Now: time.Now()}
	var p *retention.Plan
	for b.Loop() {
		var err error
		if p, err = retention.ComputePlan(ctx, st, opts); err != nil {
			b.Fatal(err)
		}
	}
	t := p.Totals
	if t.PrunedVersions+t.KeptVersions != benchScopes*benchNames*benchVersions || t.Scopes != benchScopes || t.PrunedVersions != benchScopes*benchNames*(benchVersions-3) {
		b.Fatalf("plan: %+v", t)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(benchScopes*benchNames*benchVersions), "ns/version")
}
