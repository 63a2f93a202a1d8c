package lock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const childEnv = "LOCK_TEST_CHILD_PATH"

func TestMain(m *testing.M) {
	if p := os.Getenv(childEnv); p != "" {
		os.Exit(runChild(p))
	}
	os.Exit(m.Run())
}

// runChild takes the lock, says "held" and keeps it until stdin closes.
func runChild(path string) int {
	l, err := Acquire(path, Options{Purpose: "test child"})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("held")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	if err := l.Release(); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

func snapshot(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s|%d", b, fi.ModTime().UnixNano())
}

func wantHeld(t *testing.T, err error) *HeldError {
	t.Helper()
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("got %v, want a HeldError", err)
	}
	var coded interface{ ErrorCode() string }
	if !errors.As(err, &coded) || coded.ErrorCode() != "locked" {
		t.Fatalf("error code of %v is not locked", err)
	}
	return held
}

func TestAcquireRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := Acquire(path, Options{Purpose: "fs repair"})
	if err != nil {
		t.Fatal(err)
	}
	var info Info
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if info.PID != os.Getpid() || info.Host != host || info.Purpose != "fs repair" || info.Started.IsZero() || info.Token == "" {
		t.Fatalf("lock file holds %+v", info)
	}
	before := snapshot(t, path)
	_, err = Acquire(path, Options{Purpose: "second"})
	held := wantHeld(t, err)
	if held.Holder.PID != os.Getpid() || held.Holder.Purpose != "fs repair" {
		t.Fatalf("holder %+v", held.Holder)
	}
	if !strings.Contains(err.Error(), "fs repair") {
		t.Fatalf("error does not name the holder: %v", err)
	}
	if after := snapshot(t, path); after != before {
		t.Fatal("a refused acquire changed the lock file")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock file still there: %v", err)
	}
	l2, err := Acquire(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l2.Release()
}

// TestChildProcess: a lock held by a live child process is respected; once
// the child is killed (SIGKILL, no release) its lock is taken over.
func TestChildProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "held\n" {
		t.Fatalf("child says %q", line)
	}
	before := snapshot(t, path)
	_, err := Acquire(path, Options{})
	held := wantHeld(t, err)
	if held.Holder.PID != cmd.Process.Pid {
		t.Fatalf("holder pid %d, child is %d", held.Holder.PID, cmd.Process.Pid)
	}
	if snapshot(t, path) != before {
		t.Fatal("lock file changed")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	stdin.Close()
	l, err := Acquire(path, Options{Purpose: "after"})
	if err != nil {
		t.Fatalf("lock of a dead process not taken over: %v", err)
	}
	defer l.Release()
	if l.Info().PID != os.Getpid() {
		t.Fatal("wrong holder")
	}
	matches, _ := filepath.Glob(path + ".new-*")
	if len(matches) > 0 {
		t.Fatalf("takeover left %v", matches)
	}
}

func TestChildReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "held\n" {
		t.Fatalf("child says %q", line)
	}
	stdin.Write([]byte("\n"))
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("child did not remove its lock")
	}
}

func writeLock(t *testing.T, path string, info Info, mtime time.Time) {
	t.Helper()
	b, _ := json.Marshal(info)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func TestDeadPID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	host, _ := os.Hostname()
	writeLock(t, path, Info{Host: host, PID: c.Process.Pid, Purpose: "dead", Token: "t", Started: time.Now()}, time.Now())
	l, err := Acquire(path, Options{})
	if err != nil {
		t.Fatalf("dead pid %d not taken over: %v", c.Process.Pid, err)
	}
	l.Release()

	// The same pid on another host is not ours to judge: respected.
	writeLock(t, path, Info{Host: "elsewhere.example", PID: c.Process.Pid, Purpose: "remote", Token: "t", Started: time.Now()}, time.Now())
	_, err = Acquire(path, Options{})
	wantHeld(t, err)
}

func TestStaleTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	info := Info{Host: "elsewhere.example", PID: 1, Purpose: "old", Token: "t", Started: time.Now().Add(-8 * time.Hour)}
	writeLock(t, path, info, time.Now().Add(-5*time.Hour))
	before := snapshot(t, path)
	_, err := Acquire(path, Options{})
	wantHeld(t, err)
	if snapshot(t, path) != before {
		t.Fatal("lock file changed")
	}
	writeLock(t, path, info, time.Now().Add(-6*time.Hour-time.Minute))
	l, err := Acquire(path, Options{})
	if err != nil {
		t.Fatalf("stale lock not taken over: %v", err)
	}
	l.Release()
	// StaleAfter is configurable.
	writeLock(t, path, info, time.Now().Add(-time.Hour))
	l, err = Acquire(path, Options{StaleAfter: 30 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

func TestUnparsable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	os.WriteFile(path, nil, 0o600)
	_, err := Acquire(path, Options{})
	if held := wantHeld(t, err); held.Holder.PID != 0 {
		t.Fatal(held)
	}
	old := time.Now().Add(-2 * time.Minute)
	os.Chtimes(path, old, old)
	l, err := Acquire(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

func TestRefreshAndLoss(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := Acquire(path, Options{RefreshInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := l.Context(context.Background())
	defer cancel()
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path, old, old)
	// Wait for the heartbeat, polling the file (the refresh is not
	// observable otherwise); a refresh that never comes fails the test by
	// its timeout, whatever the speed of the machine.
	for {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.ModTime().After(old.Add(time.Minute)) {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	if ctx.Err() != nil {
		t.Fatal("context cancelled while the lock is held")
	}
	// Someone takes the lock over: the holder's context is cancelled.
	writeLock(t, path, Info{Host: "other", PID: 1, Token: "theirs", Purpose: "other"}, time.Now())
	<-ctx.Done() // a context never cancelled fails the test by its timeout
	if !errors.Is(context.Cause(ctx), ErrLost) {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
	if err := l.Refresh(); !errors.Is(err, ErrLost) {
		t.Fatalf("Refresh after loss: %v", err)
	}
	if err := l.Release(); err == nil {
		t.Fatal("Release removed someone else's lock")
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "theirs") {
		t.Fatal("the other holder's lock is gone")
	}
}

func TestRefreshFailsWhenRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := Acquire(path, Options{RefreshInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(); err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	if err := l.Refresh(); !errors.Is(err, ErrLost) {
		t.Fatalf("got %v", err)
	}
	select {
	case <-l.Lost():
	default:
		t.Fatal("Lost not closed")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentAcquire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	const n = 8
	errs := make(chan error, n)
	locks := make(chan *Lock, n)
	for range n {
		go func() {
			l, err := Acquire(path, Options{})
			if err == nil {
				locks <- l
			}
			errs <- err
		}()
	}
	ok := 0
	for range n {
		if err := <-errs; err == nil {
			ok++
		} else {
			wantHeld(t, err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d holders", ok)
	}
	(<-locks).Release()
}

// TestStalledHolderStopsRefreshing: a holder that shows no progress for
// StallAfter stops renewing the heartbeat, loses the lock (its context is
// cancelled) and the lock then goes stale for the next run; a holder that
// calls Progress keeps it.
func TestStalledHolderStopsRefreshing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	l, err := Acquire(path, Options{RefreshInterval: time.Millisecond, StallAfter: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	ctx, cancel := l.Context(context.Background())
	defer cancel()
	advance(59 * time.Minute)
	if l.stalled() {
		t.Fatal("stalled within StallAfter")
	}
	l.Progress()
	advance(59 * time.Minute)
	if l.stalled() {
		t.Fatal("stalled although Progress was called")
	}
	advance(2 * time.Minute)
	if !l.stalled() {
		t.Fatal("not stalled after StallAfter without progress")
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled holder kept its lock")
	}
	if !errors.Is(context.Cause(ctx), ErrStalled) || !errors.Is(context.Cause(ctx), ErrLost) {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
	// The heartbeat is no longer renewed: set it back, and nothing moves
	// it; once StaleAfter has passed, the next run takes the lock over.
	old := time.Now().Add(-7 * time.Hour)
	os.Chtimes(path, old, old)
	<-l.done // the refresher has stopped
	fi, _ := os.Stat(path)
	if !fi.ModTime().Equal(old) {
		t.Fatalf("heartbeat renewed after the stall: %v", fi.ModTime())
	}
	next, err := Acquire(path, Options{RefreshInterval: -1})
	if err != nil {
		t.Fatalf("the next run could not take over the stalled lock: %v", err)
	}
	next.Release()
}

func TestNoStallWithoutStallAfter(t *testing.T) {
	now := time.Now()
	l, err := Acquire(filepath.Join(t.TempDir(), "x.lock"), Options{RefreshInterval: -1, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	now = now.Add(1000 * time.Hour)
	if l.stalled() {
		t.Fatal("stalled without StallAfter")
	}
}

// TestPlantedLockFile: a named pipe or a symbolic link in the lock file's
// place is refused at once, unread, with an error naming it.
func TestPlantedLockFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.lock")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.lock")
	os.WriteFile(filepath.Join(dir, "target"), []byte(`{"pid":1,"token":"x"}`), 0o600)
	os.Symlink(filepath.Join(dir, "target"), link)
	for path, kind := range map[string]string{fifo: "a named pipe (FIFO)", link: "a symbolic link"} {
		_, err := Acquire(path, Options{RefreshInterval: -1})
		if err == nil || !strings.Contains(err.Error(), path+" is "+kind+", not a regular file") {
			t.Errorf("Acquire over %s: %v", kind, err)
		}
	}
}
