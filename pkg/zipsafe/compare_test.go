package zipsafe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCompareTools times Write/Extract against Info-ZIP's `zip -r -q` and
// `unzip -q` on a generated tree. It is skipped unless AGENTSTORE_COMPARE=1;
// bench/compare.sh runs it. Tree size: AGENTSTORE_COMPARE_FILES (default
// 10000) files, AGENTSTORE_COMPARE_MB (default 200) MB; runs per tool:
// AGENTSTORE_COMPARE_RUNS (default 3), the median is reported.
func TestCompareTools(t *testing.T) {
	if os.Getenv("AGENTSTORE_COMPARE") != "1" {
		t.Skip("set AGENTSTORE_COMPARE=1 (or run bench/compare.sh)")
	}
	zipBin, err1 := exec.LookPath("zip")
	unzipBin, err2 := exec.LookPath("unzip")
	if err1 != nil || err2 != nil {
		t.Skip("zip and unzip are required")
	}
	files := envInt("AGENTSTORE_COMPARE_FILES", 10000)
	mb := envInt("AGENTSTORE_COMPARE_MB", 200)
	runs := envInt("AGENTSTORE_COMPARE_RUNS", 3)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	start := time.Now()
	total := genTree(t, src, files, int64(mb)<<20)
	t.Logf("generated %d files, %.1f MB in %v", files, float64(total)/1e6, time.Since(start).Round(time.Millisecond))

	median := func(f func(i int)) time.Duration {
		var ds []time.Duration
		for i := range runs {
			s := time.Now()
			f(i)
			ds = append(ds, time.Since(s))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	run := func(dir string, name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	ours := func(level int, out string) func(int) {
		return func(int) {
			root, err := os.OpenRoot(src)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			f, err := os.Create(out)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Write(f, root, WriteOptions{Level: level}); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	size := func(p string) string {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%.1f MB", float64(fi.Size())/1e6)
	}
	mbps := func(d time.Duration) string { return fmt.Sprintf("%.0f MB/s", float64(total)/1e6/d.Seconds()) }

	var rows [][]string
	add := func(what string, d time.Duration, extra string) {
		rows = append(rows, []string{what, d.Round(time.Millisecond).String(), mbps(d), extra})
	}
	oursZip := filepath.Join(dir, "ours.zip")
	ours6Zip := filepath.Join(dir, "ours6.zip")
	infoZip := filepath.Join(dir, "infozip.zip")
	// Interleave the tools so background load affects them alike.
	dOurs := median(ours(LevelDefault, oursZip))
	dZip := median(func(int) { os.Remove(infoZip); run(src, zipBin, "-r", "-q", infoZip, ".") })
	dOurs6 := median(ours(6, ours6Zip))
	add("zipsafe.Write (default, flate.BestSpeed)", dOurs, size(oursZip))
	add("zipsafe.Write (Level 6)", dOurs6, size(ours6Zip))
	add("zip -r -q (level 6)", dZip, size(infoZip))

	for _, a := range []struct{ name, path string }{{"zipsafe archive", oursZip}, {"zip -r archive", infoZip}} {
		n := 0
		dx := median(func(int) {
			n++
			if _, err := ExtractFile(a.path, filepath.Join(dir, fmt.Sprintf("x%d", n)), ExtractOptions{}); err != nil {
				t.Fatal(err)
			}
		})
		du := median(func(int) { n++; run(dir, unzipBin, "-q", a.path, "-d", filepath.Join(dir, fmt.Sprintf("u%d", n))) })
		add("zipsafe.Extract of "+a.name, dx, "")
		add("unzip -q of "+a.name, du, "")
		if got, want := treeListing(t, filepath.Join(dir, "x1")), treeListing(t, src); got != want {
			t.Errorf("extracted tree differs from source")
		}
		for _, m := range []string{"x", "u"} {
			matches, _ := filepath.Glob(filepath.Join(dir, m+"*"))
			for _, p := range matches {
				os.RemoveAll(p)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d files, %.1f MB (median of %d runs, GOMAXPROCS=%d)\n\n", files, float64(total)/1e6, runs, runtime.GOMAXPROCS(0))
	b.WriteString("| operation | time | throughput | archive size |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
	}
	t.Log(b.String())
	if dOurs > dZip {
		t.Errorf("zipsafe.Write (%v) is slower than zip -r -q (%v)", dOurs, dZip)
	}
}
