package fsstore_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// The crash tests run this test binary again as a child process that puts
// artifacts until it is killed or has done its count.
const (
	childRootEnv  = "FSSTORE_CHILD_ROOT"
	childCountEnv = "FSSTORE_CHILD_COUNT"
	childNamesEnv = "FSSTORE_CHILD_NAMES"
)

func TestMain(m *testing.M) {
	if root := os.Getenv(childRootEnv); root != "" {
		os.Exit(runChild(root))
	}
	os.Exit(m.Run())
}

var crashScope = artifacts.SessionScope("crash", "u", "s")

// payload returns deterministic bytes for a put, so the parent can check
// what it reads back.
func payload(seed uint64, size int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// runChild puts artifacts into root and prints "name version digest" for
// each published one.
func runChild(root string) int {
	s, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	count, _ := strconv.Atoi(os.Getenv(childCountEnv))
	names := strings.Split(os.Getenv(childNamesEnv), ",")
	out := bufio.NewWriter(os.Stdout)
	seed := uint64(time.Now().UnixNano())
	for i := 0; count == 0 || i < count; i++ {
		seed++
		size := int(seed % 200000)
		b := payload(seed, size)
		name := names[int(seed)%len(names)]
		rec, err := s.Put(context.Background(), crashScope, name, bytes.NewReader(b), artifacts.PutOptions{Metadata: artifacts.Metadata{"seed": int64(seed)}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintf(out, "%s %d %s\n", name, rec.Version, rec.Digest)
		out.Flush()
	}
	return 0
}

func child(t *testing.T, root string, count int, names string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRootEnv+"="+root, childCountEnv+"="+strconv.Itoa(count), childNamesEnv+"="+names)
	return cmd
}

type published struct {
	name    string
	version int64
	digest  string
}

func parsePublished(t *testing.T, out []byte) []published {
	var ps []published
	for l := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue // a line cut by the kill
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		ps = append(ps, published{f[0], v, f[2]})
	}
	return ps
}

// TestCrashSafety kills a writing child process with SIGKILL at random
// moments, hundreds of times, then checks the store: no partial version is
// visible, no version number was handed out twice, every version a child
// saw published is still there, every visible version verifies, and what is
// left over is only garbage that repair removes (staged files and orphan
// payloads), never a record without its payload.
func TestCrashSafety(t *testing.T) {
	runs := 300
	if testing.Short() {
		runs = 40
	}
	root := t.TempDir()
	names := "a.bin,dir/b.bin,c"
	rng := rand.New(rand.NewPCG(1, 2))
	var all []published
	for i := range runs {
		cmd := child(t, root, 0, names)
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		// Wait for the child's first published put, so that the kill lands
		// in the middle of writing whatever the start-up time of this
		// binary (slow under -race), then kill it a random moment later.
		var out bytes.Buffer
		first := make(chan struct{})
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			br := bufio.NewReader(pr)
			once := false
			for {
				l, err := br.ReadBytes('\n')
				out.Write(l)
				if !once && err == nil {
					once = true
					close(first)
				}
				if err != nil {
					if !once {
						close(first)
					}
					return
				}
			}
		}()
		select {
		case <-first:
		case <-time.After(10 * time.Second):
		}
		time.Sleep(time.Duration(rng.IntN(30000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err = cmd.Wait()
		<-copied
		pr.Close()
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: child did not die by SIGKILL: %v", i, err)
		}
		all = append(all, parsePublished(t, out.Bytes())...)
	}
	s, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seen := map[string]string{}
	for _, p := range all {
		key := p.name + "@" + strconv.FormatInt(p.version, 10)
		if _, dup := seen[key]; dup {
			t.Fatalf("version %s handed out twice", key)
		}
		seen[key] = p.digest
	}
	if len(all) < runs {
		t.Fatalf("only %d puts completed in %d runs: the kills came too early to test anything", len(all), runs)
	}
	visible := 0
	for _, name := range strings.Split(names, ",") {
		cursor := ""
		for {
			page, err := s.ListVersions(ctx, crashScope, name, artifacts.ListOptions{Limit: 1000, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range page.Items {
				visible++
				r, err := s.Get(ctx, crashScope, name, rec.Version)
				if err != nil {
					t.Fatalf("%s v%d: %v", name, rec.Version, err)
				}
				h := sha256.New()
				if _, err := io.Copy(h, r); err != nil {
					t.Fatalf("%s v%d does not verify: %v", name, rec.Version, err)
				}
				r.Close()
				seed := rec.Metadata["seed"].(int64)
				want := sha256.Sum256(payload(uint64(seed), int(uint64(seed)%200000)))
				if artifacts.DigestHex(want[:]) != rec.Digest {
					t.Fatalf("%s v%d holds the wrong bytes", name, rec.Version)
				}
				delete(seen, name+"@"+strconv.FormatInt(rec.Version, 10))
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
	}
	if len(seen) > 0 {
		t.Fatalf("%d versions reported published are gone: %v", len(seen), seen)
	}
	// Leftovers: classify every file as the repair does.
	garbage := 0
	err = filepath.WalkDir(s.ScopesPath(), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		k, n := fsstore.ParseVersionFile(d.Name())
		dir := filepath.Dir(p)
		switch k {
		case fsstore.KindMeta:
			if _, err := os.Stat(filepath.Join(dir, fsstore.VersionFile(n, "data"))); err != nil {
				t.Errorf("record without payload: %s", p)
			}
			if _, err := os.Stat(filepath.Join(dir, fsstore.VersionFile(n, "reserve"))); err != nil {
				t.Errorf("record without reservation: %s", p)
			}
		case fsstore.KindData:
			if _, err := os.Stat(filepath.Join(dir, fsstore.VersionFile(n, "meta"))); err != nil {
				garbage++
			}
		case fsstore.KindTmp:
			garbage++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs, %d puts reported, %d versions visible, %d garbage files", runs, len(all), visible, garbage)
}

// TestManyProcessesOneName has several processes put to one name at once:
// every put gets its own version and none is lost.
func TestManyProcessesOneName(t *testing.T) {
	const procs, each = 4, 25
	root := t.TempDir()
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	errs := make([]error, procs)
	for i := range procs {
		cmd := child(t, root, each, "shared")
		cmd.Stdout = &outs[i]
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("%v: %s", err, stderr.String())
			}
		}()
	}
	wg.Wait()
	versions := map[int64]bool{}
	for i := range procs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for _, p := range parsePublished(t, outs[i].Bytes()) {
			if versions[p.version] {
				t.Fatalf("version %d handed out twice", p.version)
			}
			versions[p.version] = true
		}
	}
	if len(versions) != procs*each {
		t.Fatalf("%d versions, want %d", len(versions), procs*each)
	}
	s, _ := fsstore.Open(root, fsstore.Options{})
	page, err := s.ListVersions(context.Background(), crashScope, "shared", artifacts.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range page.Items {
		if rec.Version != int64(i+1) {
			t.Fatalf("visible versions are not 1..%d: %d at %d", procs*each, rec.Version, i)
		}
	}
	if len(page.Items) != procs*each {
		t.Fatalf("%d visible, want %d", len(page.Items), procs*each)
	}
}
