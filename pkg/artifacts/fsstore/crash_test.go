//go:build crash

package fsstore_test

import (
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
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/crashtest"
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

// runChild puts artifacts into root, reporting its progress through a
// crashtest.Reporter: "read N" and "eof" as the store reads a payload, and
// "put NAME VERSION DIGEST" for each published version.
func runChild(root string) int {
	rep, err := crashtest.NewReporter()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	count, _ := strconv.Atoi(os.Getenv(childCountEnv))
	names := strings.Split(os.Getenv(childNamesEnv), ",")
	seed := uint64(time.Now().UnixNano())
	for i := 0; count == 0 || i < count; i++ {
		seed++
		size := int(seed % 200000)
		b := payload(seed, size)
		name := names[int(seed)%len(names)]
		rec, err := s.Put(context.Background(), crashScope, name, rep.Reader(bytes.NewReader(b)), artifacts.PutOptions{Metadata: artifacts.Metadata{"seed": int64(seed)}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		rep.Report(fmt.Sprintf("put %s %d %s", name, rec.Version, rec.Digest))
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

// parsePublished returns the versions the child's reports say it
// published.
func parsePublished(out []byte) []published {
	var ps []published
	for l := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if p, ok := parsePut(l); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

func parsePut(line string) (published, bool) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "put" {
		return published{}, false
	}
	v, _ := strconv.ParseInt(f[2], 10, 64)
	return published{f[1], v, f[3]}, true
}

// TestCrashSafety kills a writing child process with SIGKILL, 120 times
// (40 with -short, 300 with AGENTSTORE_FSSTORE_FULL=1), at points chosen
// from its own progress reports: every other kill
// stops it in the middle of reading a payload, the others land after one
// of its first published puts while it runs on. It then checks the store:
// no partial version is visible, no version number was handed out twice,
// every version a child saw published is still there, every visible
// version verifies, and what is left over is only garbage that repair
// removes (staged files and orphan payloads), never a record without its
// payload.
func TestCrashSafety(t *testing.T) {
	// Every kill is a start of this test binary: on two loaded cores under
	// -race that is seconds each, so the default stays well inside go
	// test's timeout; AGENTSTORE_FSSTORE_FULL=1 kills 300 times.
	runs := 120
	switch {
	case testing.Short():
		runs = 40
	case os.Getenv("AGENTSTORE_FSSTORE_FULL") == "1":
		runs = 300
	}
	root := t.TempDir()
	names := "a.bin,dir/b.bin,c"
	rng := rand.New(rand.NewPCG(1, 2))
	var all []published
	least := 0 // puts the kill points let through
	for i := range runs {
		kp := crashtest.Point{Kind: "read", N: 1 + rng.IntN(8), Freeze: true}
		if i%2 == 1 {
			kp = crashtest.Point{Kind: "put", N: 1 + rng.IntN(3)}
			least += kp.N
		}
		outcome, last, err := crashtest.Run(child(t, root, 0, names), kp, func(l string) {
			if p, ok := parsePut(l); ok {
				all = append(all, p)
			}
		})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if outcome != crashtest.Killed {
			t.Fatalf("run %d: the child, which never stops, finished before its kill point %s (last report %q)", i, kp, last)
		}
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
	if len(all) < least {
		t.Fatalf("only %d puts reported published in %d runs, the kill points let through %d", len(all), runs, least)
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
		for _, p := range parsePublished(outs[i].Bytes()) {
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
