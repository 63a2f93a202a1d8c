package zipsafe

import (
	"archive/zip"
	"fmt"
	"slices"
	"testing"
)

// fileRuns cuts files into runs of one directory, at most runFiles files
// or runBytes of compressed data each, covering every file once in order.
func TestFileRuns(t *testing.T) {
	file := func(name string, csize uint64) planned {
		return planned{f: &zip.File{FileHeader: zip.FileHeader{Name: name, CompressedSize64: csize}}}
	}
	many := func(dir string, n int, csize uint64) []planned {
		var out []planned
		for i := range n {
			out = append(out, file(fmt.Sprintf("%s%03d", dir, i), csize))
		}
		return out
	}
	cases := []struct {
		name  string
		files []planned
		want  []fileRun
	}{
		{"none", nil, nil},
		{"one", []planned{file("a", 10)}, []fileRun{{0, 1}}},
		{"by directory", []planned{file("a", 1), file("b", 1), file("d/a", 1), file("d/b", 1), file("d/e/a", 1), file("z", 1)},
			[]fileRun{{0, 2}, {2, 4}, {4, 5}, {5, 6}}},
		{"a directory and its namesake file prefix", []planned{file("ab/x", 1), file("a/bx", 1)}, []fileRun{{0, 1}, {1, 2}}},
		{"at most runFiles", many("d/", 2*runFiles+1, 100), []fileRun{{0, runFiles}, {runFiles, 2 * runFiles}, {2 * runFiles, 2*runFiles + 1}}},
		{"at most runBytes", many("d/", 5, runBytes/2), []fileRun{{0, 2}, {2, 4}, {4, 5}}},
		{"large entries one by one", many("d/", 3, runBytes), []fileRun{{0, 1}, {1, 2}, {2, 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fileRuns(c.files); !slices.Equal(got, c.want) {
				t.Fatalf("fileRuns = %v, want %v", got, c.want)
			}
		})
	}
}

// extractWorkers gives one worker to small entries and one per processor
// (at most maxWorkers, at most one per file) to larger ones, by the mean
// compressed size.
func TestExtractWorkers(t *testing.T) {
	sized := func(sizes ...uint64) []planned {
		var out []planned
		for i, s := range sizes {
			out = append(out, planned{f: &zip.File{FileHeader: zip.FileHeader{Name: fmt.Sprint(i), CompressedSize64: s}}})
		}
		return out
	}
	const small = 64 << 10
	cases := []struct {
		name  string
		files []planned
		procs int
		want  int
	}{
		{"no files", nil, 2, 1},
		{"tiny entries", sized(1000, 1000, 1000), 2, 1},
		{"mean just under", sized(small-1, small-1), 2, 1},
		{"mean at the bound", sized(small, small), 2, 2},
		{"mean of mixed sizes over", sized(10, 2*small), 2, 2},
		{"mean of mixed sizes under", sized(10, 10, 10, small), 2, 1},
		{"one processor", sized(1<<20, 1<<20), 1, 1},
		{"one per file", sized(1 << 20), 8, 1},
		{"at most maxWorkers", sized(1<<20, 1<<20, 1<<20, 1<<20, 1<<20, 1<<20), 8, maxWorkers},
		{"procs 0", sized(1<<20, 1<<20), 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := extractWorkers(c.files, c.procs, small); got != c.want {
				t.Fatalf("extractWorkers = %d, want %d", got, c.want)
			}
		})
	}
}
