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
