//go:build integration

package checkpoint_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// The measurements of issue 28, side by side with whole zip snapshots,
// on a filesystem store (erlang-fs). They print what they measure and
// check only the outcomes (sizes), never times:
//
//	go test -tags integration -run TestMeasure -v -timeout 60m ./pkg/workspace/checkpoint
//
// CHECKPOINT_MEASURE_SCALE (default 1) divides the tree sizes, for a
// quick run: 10 gives 1,000 files of 2 MB for the first measurement.

func scale(t *testing.T) int {
	s, _ := strconv.Atoi(os.Getenv("CHECKPOINT_MEASURE_SCALE"))
	return max(s, 1)
}

// text returns n bytes of text-like content (words from a small
// vocabulary), which compresses about as source code and prose do.
func text(r *rand.Rand, n int) []byte {
	words := []string{"the ", "agent ", "wrote ", "func ", "return ", "err ", "nil ", "data ", "region ", "sales ", "0.25 ", "1024 ", "\n", "if ", "for ", "value "}
	b := make([]byte, 0, n+8)
	for len(b) < n {
		b = append(b, words[r.IntN(len(words))]...)
	}
	return b[:n]
}

func fsStore(t *testing.T) (*artifacts.Store, string) {
	dir := t.TempDir()
	s, err := fsstore.Open(dir, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return artifacts.NewStore(s), dir
}

// zipSnapshot stores the tree as a whole zip, as pkg/workspace does, and
// returns its size and time.
func zipSnapshot(t *testing.T, st *artifacts.Store, dir string) (int64, time.Duration) {
	start := time.Now()
	root := openRoot(t, dir)
	pr, pw := io.Pipe()
	go func() {
		_, err := zipsafe.Write(pw, root, zipsafe.WriteOptions{})
		pw.CloseWithError(err)
	}()
	rec, err := st.Put(context.Background(), scope, "workspace.zip", pr, artifacts.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rec.Size, time.Since(start)
}

func mb(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }

// TestMeasureTurns: 10,000 files / 200 MB, 1% of the files changed per
// turn: bytes added per turn and time, against a full zip; then the
// hydration of the latest of 50 turns against the zip's.
func TestMeasureTurns(t *testing.T) {
	k := scale(t)
	files, size := 10_000/k, 20_000
	r := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	for i := range files {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, text(r, size), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	st, _ := fsStore(t)
	c := newCP(t, st, checkpoint.Options{})
	start := time.Now()
	first, err := c.Snapshot(context.Background(), openRoot(t, dir), checkpoint.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tree: %d files, %s; first incremental snapshot: %s stored in %v", files, mb(first.Manifest.Totals.Bytes), mb(first.AddedBytes+first.Record.Size), time.Since(start).Round(time.Millisecond))
	const turns = 50
	var addSum, zipSum int64
	var incTime, zipTime time.Duration
	for turn := range turns {
		for j := range files / 100 {
			i := r.IntN(files)
			p := filepath.Join(dir, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.txt", i))
			_ = j
			if err := os.WriteFile(p, text(r, size), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		res, err := c.Snapshot(context.Background(), openRoot(t, dir), checkpoint.SnapshotOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(start)
		added := res.AddedBytes + res.Record.Size
		if turn < 3 || turn == turns-1 {
			zs, zd := zipSnapshot(t, st, dir)
			t.Logf("turn %d: incremental added %s (packs %s + manifest %s) in %v; full zip %s in %v; ratio %.2f%% bytes, %.1f%% time",
				turn+1, mb(added), mb(res.AddedBytes), mb(res.Record.Size), d.Round(time.Millisecond), mb(zs), zd.Round(time.Millisecond),
				100*float64(added)/float64(zs), 100*float64(d)/float64(zd))
			addSum += added
			zipSum += zs
			incTime += d
			zipTime += zd
		}
	}
	t.Logf("over 4 measured turns: incremental %.2f%% of the zip's bytes, %.1f%% of its time", 100*float64(addSum)/float64(zipSum), 100*float64(incTime)/float64(zipTime))
	if addSum*50 > zipSum {
		t.Errorf("incremental turns added %d bytes, more than 2%% of the zips' %d", addSum, zipSum)
	}
	// Hydration of the latest, from 50 turns of checkpoints vs the zip.
	_, m, err := c.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	into := filepath.Join(t.TempDir(), "inc")
	os.Mkdir(into, 0o700)
	start = time.Now()
	rs, err := c.Restore(context.Background(), m, openRoot(t, into), checkpoint.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	incH := time.Since(start)
	start = time.Now()
	rd, err := st.Get(context.Background(), scope, "workspace.zip", artifacts.Latest)
	if err != nil {
		t.Fatal(err)
	}
	zf := filepath.Join(t.TempDir(), "w.zip")
	f, _ := os.Create(zf)
	io.Copy(f, rd)
	rd.Close()
	f.Close()
	if _, err := zipsafe.ExtractFile(zf, filepath.Join(t.TempDir(), "zip"), zipsafe.ExtractOptions{}); err != nil {
		t.Fatal(err)
	}
	zipH := time.Since(start)
	t.Logf("hydration after %d turns: incremental %v (%d packs, %d ranged reads, +1 manifest), zip %v", turns, incH.Round(time.Millisecond), rs.Packs, rs.Reads, zipH.Round(time.Millisecond))
}

// TestMeasureAppend: 1,000 files / 1 GB with a 1 MB append to one 50 MB
// file: bytes added to the store.
func TestMeasureAppend(t *testing.T) {
	k := scale(t)
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	big := filepath.Join(dir, "big.log")
	if err := os.WriteFile(big, text(r, 50<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	other := (1<<30 - 50<<20) / 999 / k
	for i := range 999 {
		p := filepath.Join(dir, fmt.Sprintf("f%03d.bin", i))
		if err := os.WriteFile(p, text(r, other), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	st, _ := fsStore(t)
	c := newCP(t, st, checkpoint.Options{})
	first, err := c.Snapshot(context.Background(), openRoot(t, dir), checkpoint.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(big, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(text(r, 1<<20))
	f.Close()
	res, err := c.Snapshot(context.Background(), openRoot(t, dir), checkpoint.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	added := res.AddedBytes + res.Record.Size
	t.Logf("tree %s in 1,000 files; 1 MB appended to a 50 MB file: %s added (packs %s, manifest %s), %d file read", mb(first.Manifest.Totals.Bytes), mb(added), mb(res.AddedBytes), mb(res.Record.Size), res.ReadFiles)
	if added > 4<<20 {
		t.Errorf("%d bytes added, more than 4 MB", added)
	}
}

// TestMeasureTinyAppends: 100 one-byte appends to a workspace holding one
// 1 MB file, a snapshot after each: store growth.
func TestMeasureTinyAppends(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "notes.md")
	content := random(5, 1<<20)
	write(t, dir, map[string][]byte{"notes.md": content})
	st, _ := fsStore(t)
	c := newCP(t, st, checkpoint.Options{})
	snap(t, c, dir)
	u0, _ := c.Usage(context.Background())
	for i := range 100 {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{byte(i)})
		f.Close()
		snap(t, c, dir)
	}
	u, _ := c.Usage(context.Background())
	t.Logf("100 one-byte appends to a 1 MB file: store grew by %s (%d manifests, %d packs; %s stored in all)", mb(u.StoredBytes-u0.StoredBytes), u.Manifests, u.Packs, mb(u.StoredBytes))
	if u.StoredBytes-u0.StoredBytes > 2<<20 {
		t.Errorf("the store grew by %d bytes, more than 2 MB", u.StoredBytes-u0.StoredBytes)
	}
}
