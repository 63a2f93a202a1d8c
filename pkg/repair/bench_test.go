package repair_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/repair"
	"github.com/agentstore/agentstore/pkg/repair/internal/gen"
)

// benchFiles is the size of the generated benchmark store. The full-size
// comparison with find(1) and sha256sum(1) is bench/compare.sh.
const benchFiles = 30000

var (
	benchOnce  sync.Once
	benchDir   string
	benchRoot  string
	benchStats gen.Stats
	benchErr   error
)

func benchStore(b *testing.B) string {
	benchOnce.Do(func() {
		// Shared by every benchmark of the run (b.TempDir would go after
		// the first); TestMain removes it.
		benchDir, benchErr = os.MkdirTemp("", "repair-bench-")
		if benchErr != nil {
			return
		}
		benchRoot = filepath.Join(benchDir, "store")
		benchStats, benchErr = gen.Generate(benchRoot, gen.Options{Files: benchFiles, PayloadBytes: 4096, Scopes: 20})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchRoot
}

// BenchmarkRepairScan is a dry run over a generated store of benchFiles
// files in name directories; it reports files scanned per second.
func BenchmarkRepairScan(b *testing.B) {
	root := benchStore(b)
	var scanned int64
	for b.Loop() {
		rep, err := repair.Repair(context.Background(), root, repair.Options{DryRun: true})
		if err != nil {
			b.Fatal(err)
		}
		scanned = rep.Scanned
	}
	b.ReportMetric(float64(scanned)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
}

// BenchmarkVerify verifies every version of the generated store; it
// reports payload bytes (SetBytes) and versions per second.
func BenchmarkVerify(b *testing.B) {
	root := benchStore(b)
	s, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchStats.PayloadBytes)
	var checked int64
	for b.Loop() {
		rep, err := repair.Verify(context.Background(), artifacts.NewStore(s), repair.VerifyOptions{})
		if err != nil || rep.Corrupt != 0 {
			b.Fatal(err, rep.CorruptItems)
		}
		checked = rep.Checked
	}
	b.ReportMetric(float64(checked)*float64(b.N)/b.Elapsed().Seconds(), "versions/s")
}

// BenchmarkVerifyWorkers verifies the generated store with each pool size;
// besides the wall time it reports the process's CPU time (user + sys)
// per verify, which the load of a shared machine disturbs far less.
func BenchmarkVerifyWorkers(b *testing.B) {
	root := benchStore(b)
	s, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2, 3, 4, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.SetBytes(benchStats.PayloadBytes)
			before := cpuTime(b)
			for b.Loop() {
				rep, err := repair.Verify(context.Background(), artifacts.NewStore(s), repair.VerifyOptions{Workers: workers})
				if err != nil || rep.Corrupt != 0 {
					b.Fatal(err, rep.CorruptItems)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-before)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the user and system time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
