//go:build scale

package cmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// scaleWritesEnv sets the number of write_file calls of
// TestMCPManyWritesPersist (default 5,000, the figure of issue 28).
const scaleWritesEnv = "AGENTSTORE_SCALE_WRITES"

// scaleSession is a store, a scratch root and the mcp arguments of one
// session on them (erlang-fs, the default layout), with extra flags.
func scaleSession(t *testing.T, extra ...string) (store, scratch, wsDir string, args []string) {
	t.Helper()
	dir := t.TempDir()
	store, scratch = filepath.Join(dir, "store"), filepath.Join(dir, "scratch")
	for _, d := range []string{store, scratch} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	args = append([]string{"--store", store, "--scratch", scratch, "--app", "demo", "--user", "user-42", "--session", "session-7",
		"--snapshot", "on-write", "--memory", "off"}, extra...)
	return store, scratch, filepath.Join(scratch, workspace.DirName("demo", "user-42", "session-7")), args
}

var scaleScope = artifacts.SessionScope("demo", "user-42", "session-7")

// TestMCPManyWritesPersist makes 5,000 write_file calls (AGENTSTORE_SCALE_WRITES)
// through agentstore mcp --snapshot on-write with the default snapshot
// format on erlang-fs, each answered only once a snapshot holding it is
// stored: past the zip's 3,333 versions the format carries on
// incrementally. Every call must succeed, and a fresh process, after the
// scratch directory is deleted, must see the last content of every file.
func TestMCPManyWritesPersist(t *testing.T) {
	n := 5000
	if v := os.Getenv(scaleWritesEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a number from 1", scaleWritesEnv, v)
		}
	}
	const files = 50
	bin := agentstoreBin(t)
	store, _, wsDir, args := scaleSession(t)
	cs, stderr := stdioSession(t, bin, t.TempDir(), args...)
	start := time.Now()
	last := map[string]string{}
	for i := range n {
		p := fmt.Sprintf("/workspace/notes/n%02d.txt", i%files)
		content := fmt.Sprintf("write %d\n", i)
		if res, sc := callTool(t, cs, "write_file", map[string]any{"path": p, "content": content}); res.IsError {
			t.Fatalf("write %d of %d: %v %s\n%s", i+1, n, sc["code"], firstText(res), lastLines(stderr.String(), 20))
		}
		last[p] = content
	}
	took := time.Since(start)
	cs.Close()
	if err := os.RemoveAll(wsDir); err != nil {
		t.Fatal(err)
	}
	cs, stderr = stdioSession(t, bin, t.TempDir(), args...)
	defer cs.Close()
	for p, want := range last {
		if res, _ := callTool(t, cs, "read_text_file", map[string]any{"path": p}); res.IsError || firstText(res) != want {
			t.Fatalf("after eviction %s: %q (error %v), want %q\n%s", p, firstText(res), res.IsError, want, stderr)
		}
	}
	zips, seq := snapshotCounts(t, store)
	t.Logf("%d writes in %v (%.1f ms each): %d workspace.zip versions, %d incremental snapshots", n, took.Round(time.Millisecond),
		float64(took.Milliseconds())/float64(n), zips, seq)
	if zips+seq > int64(n) {
		t.Errorf("%d snapshots for %d writes", zips+seq, n)
	}
}

// TestMCPConcurrentWritesCoalesce issues 1,000 write_file calls at once
// through agentstore mcp --snapshot on-write --snapshot-format incremental:
// each succeeds only once stored, writes arriving while a snapshot is in
// flight share the next one, so there are far fewer snapshots (manifests,
// counted by the latest one's sequence number, retention
// notwithstanding) than writes, and a fresh process after an eviction
// sees every file.
func TestMCPConcurrentWritesCoalesce(t *testing.T) {
	const n = 1000
	bin := agentstoreBin(t)
	store, _, wsDir, args := scaleSession(t, "--snapshot-format", "incremental")
	cs, stderr := stdioSession(t, bin, t.TempDir(), args...)
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file",
				Arguments: map[string]any{"path": fmt.Sprintf("/workspace/c/%04d.txt", i), "content": fmt.Sprintf("concurrent %d\n", i)}})
			switch {
			case err != nil:
				errs <- fmt.Sprintf("write %d: %v", i, err)
			case res.IsError:
				errs <- fmt.Sprintf("write %d: %s", i, firstText(res))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("%s\n%s", e, lastLines(stderr.String(), 20))
	}
	cs.Close()
	zips, seq := snapshotCounts(t, store)
	t.Logf("%d concurrent writes: %d incremental snapshots, %d workspace.zip versions", n, seq, zips)
	if seq < 1 || seq >= n/4 || zips != 0 {
		t.Errorf("%d concurrent writes made %d manifests and %d zips: want from 1 to fewer than %d manifests and no zip", n, seq, zips, n/4)
	}
	if err := os.RemoveAll(wsDir); err != nil {
		t.Fatal(err)
	}
	cs, stderr = stdioSession(t, bin, t.TempDir(), args...)
	defer cs.Close()
	res, _ := callTool(t, cs, "list_directory", map[string]any{"path": "/workspace/c"})
	if got := strings.Count(firstText(res), ".txt"); res.IsError || got != n {
		t.Fatalf("after eviction /workspace/c lists %d files (error %v), want %d\n%s", got, res.IsError, n, stderr)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		p := fmt.Sprintf("/workspace/c/%04d.txt", i)
		if res, _ := callTool(t, cs, "read_text_file", map[string]any{"path": p}); res.IsError || firstText(res) != fmt.Sprintf("concurrent %d\n", i) {
			t.Fatalf("after eviction %s: %q (error %v)", p, firstText(res), res.IsError)
		}
	}
}

// snapshotCounts returns how many workspace.zip versions the session has
// published (its latest version number: erlang-fs never reuses one) and
// how many incremental snapshots (the latest manifest's sequence number).
func snapshotCounts(t *testing.T, root string) (zips, seq int64) {
	t.Helper()
	d, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(d)
	ctx := context.Background()
	rec, err := st.Stat(ctx, scaleScope, workspace.SnapshotName, artifacts.Latest)
	switch {
	case err == nil:
		zips = rec.Version
	case !artifacts.IsNotFound(err):
		t.Fatal(err)
	}
	c, err := checkpoint.New(checkpoint.Options{Store: st, Scope: scaleScope})
	if err != nil {
		t.Fatal(err)
	}
	_, m, err := c.Latest(ctx)
	switch {
	case err == nil:
		seq = m.Seq
	case !artifacts.IsNotFound(err):
		t.Fatal(err)
	}
	return zips, seq
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
