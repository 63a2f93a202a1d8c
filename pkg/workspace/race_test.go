package workspace

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

const canary = "OUTSIDE-CANARY-7c41"

// dirState describes every entry below dir: names, types, sizes,
// contents and modification times.
func dirState(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		fmt.Fprintf(&b, "%s %v %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if d.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteByte('\n')
		return nil
	})
	return b.String()
}

// While hydration and the confined API run, another goroutine keeps
// replacing a directory inside the workspace with a symbolic link to a
// directory outside. Nothing outside is ever read or written. The race
// runs until every party has done its share (swaps, hydrations, confined
// calls, snapshots), however fast or slow the machine.
func TestRaceSymlinkSwap(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, fsstore.Options{})
	m := newManager(t, artifacts.NewStore(st), Options{})
	scope := sessionScope("race")
	w := mustOpen(t, m, scope)
	for i := range 20 {
		if err := w.Write(ctx, fmt.Sprintf("sub/f%02d.txt", i), bytes.Repeat([]byte("inside\n"), 100)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Snapshot(ctx, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}

	outside := filepath.Join(t.TempDir(), "outside")
	for i := range 20 {
		mustWriteFile(t, filepath.Join(outside, fmt.Sprintf("f%02d.txt", i)), canary+"\n", 0o644)
	}
	mustWriteFile(t, filepath.Join(outside, "canary.txt"), canary+"\n", 0o644)
	before := dirState(t, outside)

	var stop atomic.Bool
	var swaps, leaks, hydrates, ops, snaps atomic.Int64
	enough := make(chan struct{})
	var enoughOnce sync.Once
	progressed := func() {
		if swaps.Load() >= 100 && hydrates.Load() >= 5 && ops.Load() >= 300 && snaps.Load() >= 3 {
			enoughOnce.Do(func() { close(enough) })
		}
	}
	hydrated := make(chan struct{}, 1) // a snapshot follows every fourth hydration
	var wg sync.WaitGroup
	// The attacker: sub <-> symlink to outside, as fast as it can.
	wg.Go(func() {
		sub := filepath.Join(w.Path(), "sub")
		for i := 0; !stop.Load(); i++ {
			moved := fmt.Sprintf("%s.moved%d", sub, i)
			if os.Rename(sub, moved) != nil {
				time.Sleep(time.Microsecond) // pacing, not synchronisation
				continue
			}
			if os.Symlink(outside, sub) == nil {
				swaps.Add(1)
				progressed()
				time.Sleep(time.Duration(i%3) * time.Microsecond) // pacing
				os.Remove(sub)
			}
			os.Rename(moved, sub)
			os.RemoveAll(moved)
		}
	})
	// Hydration, over and over.
	wg.Go(func() {
		for !stop.Load() {
			_, err := w.Hydrate(ctx, artifacts.Latest, HydrateOptions{Force: true})
			if err == nil && hydrates.Add(1)%4 == 1 {
				progressed()
				select {
				case hydrated <- struct{}{}:
				default:
				}
			} else if err == nil {
				progressed()
			} else if artifacts.CodeOf(err) == artifacts.CodeUnknown {
				t.Errorf("hydrate: %v", err)
			}
		}
	})
	// The agent, through the confined API.
	for g := range 3 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				ops.Add(1)
				progressed()
				name := fmt.Sprintf("sub/f%02d.txt", i%20)
				switch (i + g) % 8 {
				case 0:
					w.Write(ctx, name, []byte("agent wrote\n"))
				case 1:
					if f, err := w.Open(name); err == nil {
						b, _ := io.ReadAll(f)
						f.Close()
						if bytes.Contains(b, []byte(canary)) {
							leaks.Add(1)
						}
					}
				case 2:
					if l, err := w.ReadLines(name, 0, 3); err == nil && len(l.Lines) > 0 && l.Lines[0] == canary {
						leaks.Add(1)
					}
				case 3:
					if fis, err := w.List("sub"); err == nil {
						for _, fi := range fis {
							if fi.Name() == "canary.txt" {
								leaks.Add(1)
							}
						}
					}
				case 4:
					w.Append(ctx, "sub/appended.txt", []byte("a\n"))
				case 5:
					w.Rename(ctx, name, "sub/renamed.txt")
				case 6:
					w.Mkdir(ctx, "sub/newdir")
					w.Remove(ctx, "sub/newdir")
				case 7:
					if fi, err := w.Stat("sub/canary.txt"); err == nil && fi.Size() > 0 {
						leaks.Add(1)
					}
					if rec, err := w.Promote(ctx, name, PromoteOptions{Name: "promoted"}); err == nil && rec.Size == int64(len(canary)+1) {
						leaks.Add(1)
					}
				}
			}
		})
	}
	// Snapshots too, one after every fourth hydration.
	wg.Go(func() {
		for {
			select {
			case <-enough:
				return
			case <-hydrated:
			}
			if _, err := w.Snapshot(ctx, SnapshotOptions{}); err == nil {
				snaps.Add(1)
				progressed()
			}
		}
	})
	<-enough
	stop.Store(true)
	wg.Wait()

	if after := dirState(t, outside); after != before {
		t.Fatalf("outside directory changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if n := leaks.Load(); n > 0 {
		t.Fatalf("%d reads saw the outside canary", n)
	}
	if swaps.Load() == 0 || hydrates.Load() == 0 {
		t.Fatalf("%d swaps, %d hydrations: the race did not run", swaps.Load(), hydrates.Load())
	}
	// No snapshot holds an outside file.
	page, err := st.ListVersions(ctx, scope, SnapshotName, artifacts.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range page.Items {
		rd, err := st.Get(ctx, scope, SnapshotName, rec.Version)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rd)
		rd.Close()
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			if strings.HasSuffix(f.Name, "canary.txt") {
				t.Fatalf("snapshot v%d holds %s", rec.Version, f.Name)
			}
			if rc, err := f.Open(); err == nil {
				data, _ := io.ReadAll(rc)
				rc.Close()
				if bytes.Contains(data, []byte(canary)) {
					t.Fatalf("snapshot v%d: %s holds the canary", rec.Version, f.Name)
				}
			}
		}
	}
	t.Logf("%d swaps, %d hydrations, %d confined calls, %d snapshots (%d stored)", swaps.Load(), hydrates.Load(), ops.Load(), snaps.Load(), len(page.Items))
}
