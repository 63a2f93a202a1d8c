package quota

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// BenchmarkReport times a report over 100,000 published versions in 2,000
// session scopes (5 names of 10 versions each), walking records but never
// payloads. The store is generated directly in the layout (see
// gen_test.go: writing it through Put would fsync every file), in a
// temporary directory, or once in $QUOTA_BENCH_DIR and reused by later
// runs. The generation is not timed. Run:
//
//	go test -run '^$' -bench BenchmarkReport -benchtime 5x ./pkg/quota/
func BenchmarkReport(b *testing.B) {
	const scopes, names, versions = 2000, 5, 10
	root := os.Getenv("QUOTA_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	done := filepath.Join(root, ".generated-2000x5x10")
	if _, err := os.Stat(done); err != nil {
		genBench(b, root, scopes, names, versions)
		if err := os.WriteFile(done, nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	st := openFS(b, root)
	ctx := context.Background()
	var r *Report
	for b.Loop() {
		var err error
		r, err = Compute(ctx, artifacts.NewStore(st), Options{})
		if err != nil {
			b.Fatal(err)
		}
	}
	if r.Store.Versions != scopes*names*versions || r.Store.Scopes != scopes || len(r.Scopes) != scopes {
		b.Fatalf("report: %d versions, %d scopes", r.Store.Versions, r.Store.Scopes)
	}
	b.ReportMetric(float64(r.Store.Versions), "versions")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(r.Store.Versions), "ns/version")
}
