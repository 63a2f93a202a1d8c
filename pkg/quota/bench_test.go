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
	root := benchStore(b)
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
	if r.Store.Versions != benchScopes*benchNames*benchVersions || r.Store.Scopes != benchScopes || len(r.Scopes) != benchScopes {
		b.Fatalf("report: %d versions, %d scopes", r.Store.Versions, r.Store.Scopes)
	}
	b.ReportMetric(float64(r.Store.Versions), "versions")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(r.Store.Versions), "ns/version")
}

// The shape of the benchmark store.
const benchScopes, benchNames, benchVersions = 2000, 5, 10

// benchStore returns the root of the benchmark store: 100,000 published
// versions in 2,000 session scopes (5 names of 10 versions each),
// generated in a temporary directory, or once in $QUOTA_BENCH_DIR.
func benchStore(b *testing.B) string {
	root := os.Getenv("QUOTA_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	done := filepath.Join(root, ".generated-2000x5x10")
	if _, err := os.Stat(done); err != nil {
		genBench(b, root, benchScopes, benchNames, benchVersions)
		if err := os.WriteFile(done, nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	return root
}
