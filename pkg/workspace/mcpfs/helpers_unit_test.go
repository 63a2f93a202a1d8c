package mcpfs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           string
	}{
		{"replace", "a\nb\nc\n", "a\nB\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"far apart", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "X\n2\n3\n4\n5\n6\n7\n8\n9\nY\n", "@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+Y\n"},
		{"insert at end", "a\n", "a\nb\n", "@@ -1,1 +1,2 @@\n a\n+b\n"},
		{"no final newline", "a", "b", "@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"},
		{"same", "a\n", "a\n", ""},
	}
	for _, tt := range tests {
		got := unifiedDiff(tt.old, tt.new, "f")
		head := "Index: f\n" + strings.Repeat("=", 67) + "\n--- f\toriginal\n+++ f\tmodified\n"
		if got != head+tt.want {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, got, head+tt.want)
		}
	}
}

func TestLineReaders(t *testing.T) {
	const text = "one\r\ntwo\nthree\nfour"
	tests := []struct {
		name          string
		offset, count int
		max           int64
		want          string
		truncated     bool
		more          bool
	}{
		{"all", 0, -1, 100, "one\ntwo\nthree\nfour", false, false},
		{"head", 0, 2, 100, "one\ntwo", false, true},
		{"window", 1, 2, 100, "two\nthree", false, true},
		{"window to end", 2, 5, 100, "three\nfour", false, false},
		{"byte limit", 0, -1, 8, "one\ntwo", true, false},
		{"past end", 9, 2, 100, "", false, false},
	}
	for _, tt := range tests {
		w, err := readLines(bufio.NewReader(strings.NewReader(text)), tt.offset, tt.count, tt.max)
		if err != nil || w.text != tt.want || w.truncated != tt.truncated || w.more != tt.more {
			t.Errorf("%s: %+v, %v", tt.name, w, err)
		}
	}
	for n, want := range map[int]string{0: "", 1: "four", 2: "three\nfour", 9: "one\ntwo\nthree\nfour"} {
		got, err := tailLines(strings.NewReader(text), int64(len(text)), n, 100)
		if err != nil || got != want {
			t.Errorf("tail %d: %q, %v", n, got, err)
		}
		got, err = tailStream(bufio.NewReader(strings.NewReader(text)), n, 100)
		if err != nil || got != want {
			t.Errorf("tail stream %d: %q, %v", n, got, err)
		}
	}
	// Across the growing blocks: CRLF lines, a line longer than a block,
	// against splitting the whole text.
	var big strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&big, "line %d\r\n", i)
		if i == 19_990 {
			big.WriteString(strings.Repeat("y", 20_000) + "\n")
		}
	}
	whole := strings.Split(strings.TrimSuffix(strings.ReplaceAll(big.String(), "\r\n", "\n"), "\n"), "\n")
	for _, n := range []int{1, 9, 10, 11, 500, 5000, 30_000} {
		want := strings.Join(whole[max(len(whole)-n, 0):], "\n")
		got, err := tailLines(strings.NewReader(big.String()), int64(big.Len()), n, 1<<20)
		if err != nil || got != want {
			t.Errorf("tail %d of the big text: %d bytes, want %d; %v", n, len(got), len(want), err)
		}
	}
	// tail reads the head only to refuse a binary file.
	if err := sniffAt(strings.NewReader("text\x00more"), 9, "/workspace/b"); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Errorf("binary head: %v", err)
	}
	if err := sniffAt(strings.NewReader(big.String()), int64(big.Len()), "/workspace/t"); err != nil {
		t.Errorf("text head: %v", err)
	}
	if got, _ := tailLines(strings.NewReader("a\nb\n"), 4, 1, 100); got != "b" {
		t.Errorf("tail with final newline %q", got)
	}
	if _, err := tailLines(strings.NewReader(strings.Repeat("x", 300)), 300, 1, 100); artifacts.CodeOf(err) != artifacts.CodeTooLarge {
		t.Errorf("tail over the limit: %v", err)
	}
	for in, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.00 KB", 1536: "1.50 KB", 5 << 30: "5.00 GB"} {
		if got := formatSize(in); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestLineLimiter(t *testing.T) {
	big := strings.Repeat("y", 500)
	in := "short\n" + `{"jsonrpc":"2.0","method":"x","params":{"a":"` + big + `"},"id":7}` + "\n" + `{"method":"notify","params":{"a":"` + big + `"}}` + "\nlast"
	l := &lineLimiter{r: bufio.NewReaderSize(strings.NewReader(in), 16), limit: 100}
	var out strings.Builder
	for {
		line, err := l.next()
		out.Write(line)
		if err != nil {
			break
		}
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 3 || lines[0] != "short" || lines[2] != "last" {
		t.Fatalf("lines %q", lines)
	}
	if !strings.Contains(lines[1], `"id":7`) || !strings.Contains(lines[1], methodTooLarge) || strings.Contains(lines[1], big) {
		t.Errorf("replacement %q", lines[1])
	}
}

// TestQuotaAndFiles: writes over the ledger fail with QUOTA_EXCEEDED and
// the limits in structured content, writing nothing; the file-count cap
// refuses new files only, and a refused write or append of a new file
// does not count it.
func TestQuotaAndFiles(t *testing.T) {
	e := newEnv(t, func(o *envOpts) {
		o.ws.Quota = workspace.Quota{TurnBytes: 100, TotalBytes: 150}
		o.ws.Quota.MaxFiles = 2
	})
	e.mustOK("write_file", map[string]any{"path": "a", "content": strings.Repeat("a", 60)})
	res := e.call("write_file", map[string]any{"path": "b", "content": strings.Repeat("b", 60)})
	sc := structured(t, res)
	if !res.IsError || sc["code"] != "QUOTA_EXCEEDED" || sc["remaining_bytes"] != float64(40) || sc["turn_limit_bytes"] != float64(100) || sc["total_limit_bytes"] != float64(150) {
		t.Fatalf("over the turn: %v", sc)
	}
	if !strings.Contains(text(res), "QUOTA_EXCEEDED") || !strings.Contains(text(res), "remaining_bytes: 40") {
		t.Errorf("text %q", text(res))
	}
	e.mustFail("append_file", map[string]any{"path": "a", "content": strings.Repeat("a", 41)}, "QUOTA_EXCEEDED")
	// A refused append to a new file creates nothing and counts no file:
	// b below is the second file.
	e.mustFail("append_file", map[string]any{"path": "n", "content": strings.Repeat("n", 41)}, "QUOTA_EXCEEDED")
	// Nor does a refused write or append leave the directories it made
	// for its file (the tree is checked at the end).
	e.mustFail("write_file", map[string]any{"path": "deep/er/w", "content": strings.Repeat("w", 41)}, "QUOTA_EXCEEDED")
	e.mustFail("append_file", map[string]any{"path": "/workspace/deep2/n", "content": strings.Repeat("n", 41)}, "QUOTA_EXCEEDED")
	e.mustFail("write_file", map[string]any{"path": "/memory/m", "content": strings.Repeat("m", 41)}, "QUOTA_EXCEEDED")
	e.mustOK("write_file", map[string]any{"path": "b", "content": "b"})
	msg := e.mustFail("write_file", map[string]any{"path": "c", "content": "c"}, "QUOTA_EXCEEDED")
	if !strings.Contains(msg, "limit of 2 files") {
		t.Errorf("file cap message %q", msg)
	}
	e.mustOK("write_file", map[string]any{"path": "b", "content": "bb"}) // an existing file
	e.mustOK("delete_file", map[string]any{"path": "b"})
	e.mustOK("write_file", map[string]any{"path": "c", "content": "c"})
	if got := snapshotTree(t, e.wsDir()); !sameTree(got, map[string]string{"a": strings.Repeat("a", 60), "c": "c"}) {
		t.Errorf("workspace %v", got)
	}
	if _, err := e.store.Stat(context.Background(), artifacts.UserScope("demo", "u-1"), "m", artifacts.Latest); !errors.Is(err, &artifacts.Error{Code: artifacts.CodeNotFound}) {
		t.Errorf("refused memory write was stored: %v", err)
	}
}

// TestSnapshotOnWrite: under on-write a write succeeds only once its
// snapshot is stored; a new manager (a new pod) hydrates it on first
// touch.
func TestSnapshotOnWrite(t *testing.T) {
	e := newEnv(t, func(o *envOpts) { o.ws.Policy = workspace.SnapshotOnWrite })
	e.mustOK("write_file", map[string]any{"path": "by_region.csv", "content": "region,total\nnorth,3\n"})
	rec, err := e.store.Stat(context.Background(), e.scope, workspace.SnapshotName, artifacts.Latest)
	if err != nil || rec.Version != 1 {
		t.Fatalf("snapshot %+v, %v", rec, err)
	}
	e2 := e.newServer(workspace.Options{Scratch: t.TempDir()})
	if got := text(e2.call("read_text_file", map[string]any{"path": "by_region.csv"})); got != "region,total\nnorth,3\n" {
		t.Errorf("hydrated file %q", got)
	}
}
