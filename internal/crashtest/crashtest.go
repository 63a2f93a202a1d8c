// Package crashtest kills child processes at points chosen from their own
// progress, for crash tests whose number of kills must not depend on the
// speed of the machine.
//
// The child (usually the test binary run again) reports its progress on
// stdout through a Reporter, one line per point it passes, the line's first
// word being its kind ("start", "put", a step name). The parent runs it with
// Run and a Point: it reads the reports and sends SIGKILL as soon as the
// child reports the point. With Point.Freeze the child itself stops at that
// point and waits for the kill, so the kill lands exactly there; without,
// the child runs on and the kill lands wherever it has got to.
package crashtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// FreezeEnv is the environment variable through which Run tells the child
// where to stop (a Point in the form of Point.String); empty for nowhere.
const FreezeEnv = "AGENTSTORE_CRASHTEST_FREEZE"

// Point is where a run of the child is killed: when it has reported its
// N-th line of kind Kind (the line's first word), of any kind when Kind is
// "". With Freeze the child stops there until it is killed.
type Point struct {
	Kind   string
	N      int
	Freeze bool
}

// Matches reports whether a report line is of the point's kind.
func (p Point) Matches(line string) bool {
	return p.Kind == "" || line == p.Kind || strings.HasPrefix(line, p.Kind+" ")
}

// String formats the point as "KIND N frozen|running", KIND being "any"
// for every kind; ParsePoint reads it back.
func (p Point) String() string {
	kind, mode := p.Kind, "running"
	if kind == "" {
		kind = "any"
	}
	if p.Freeze {
		mode = "frozen"
	}
	return fmt.Sprintf("%s %d %s", kind, p.N, mode)
}

// ParsePoint parses the form of Point.String.
func ParsePoint(s string) (Point, error) {
	f := strings.Fields(s)
	var p Point
	if len(f) != 3 || (f[2] != "running" && f[2] != "frozen") {
		return p, fmt.Errorf("crash test kill point %q: want KIND N frozen|running", s)
	}
	if _, err := fmt.Sscan(f[1], &p.N); err != nil || p.N < 1 {
		return p, fmt.Errorf("crash test kill point %q: N must be a number from 1", s)
	}
	p.Kind, p.Freeze = f[0], f[2] == "frozen"
	if p.Kind == "any" {
		p.Kind = ""
	}
	return p, nil
}

// Reporter is the child's side: it writes report lines and stops at the
// point FreezeEnv names. It is safe for concurrent use; once frozen, every
// other report waits too.
type Reporter struct {
	mu     sync.Mutex
	w      io.Writer
	stdin  io.Reader
	freeze *Point
	seen   int
}

// NewReporter returns the Reporter of a child started by Run, writing to
// stdout and waiting on stdin when it freezes.
func NewReporter() (*Reporter, error) {
	r := &Reporter{w: os.Stdout, stdin: os.Stdin}
	if v := os.Getenv(FreezeEnv); v != "" {
		p, err := ParsePoint(v)
		if err != nil {
			return nil, err
		}
		r.freeze = &p
	}
	return r, nil
}

// Report writes one line (unbuffered, so the parent sees it at once). At
// the freeze point it does not return: it waits for the kill, and exits
// with status 2 should its parent go away instead (stdin closed).
func (r *Reporter) Report(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(r.w, line)
	if r.freeze == nil || !r.freeze.Matches(line) {
		return
	}
	if r.seen++; r.seen == r.freeze.N {
		// The parent never writes to stdin: this read ends only when the
		// parent is gone. r.mu stays held, so other reports wait too.
		_, _ = io.Copy(io.Discard, r.stdin)
		os.Exit(2)
	}
}

// Reader returns a reader of rd that reports its progress: "read N" for
// every read that returns N bytes, and "eof" at the end. A child freezing
// at one of these reports is in the middle of whatever consumes rd.
func (r *Reporter) Reader(rd io.Reader) io.Reader {
	return &reportingReader{r: rd, rep: r}
}

type reportingReader struct {
	r   io.Reader
	rep *Reporter
}

func (r *reportingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.rep.Report(fmt.Sprintf("read %d", n))
	}
	if err == io.EOF {
		r.rep.Report("eof")
	}
	return n, err
}

// Outcome is how a run of the child ended.
type Outcome int

const (
	// Killed: the child reported the point and died by the SIGKILL.
	Killed Outcome = iota
	// Finished: the child exited with status 0 before it reported the
	// point, or before the kill landed (a running child at its last
	// report). The caller runs it again with another point.
	Finished
)

// Run starts cmd (its Stdout, Stdin and, unless set, Stderr are Run's),
// kills it with SIGKILL as soon as it reports p, and waits for it. It
// calls each, unless nil, with every report read (not those the child
// writes after the point). It returns the outcome and the last report
// read. Any other end of the child (a failure status, another signal) is
// an error holding its stderr.
func Run(cmd *exec.Cmd, p Point, each func(line string)) (Outcome, string, error) {
	freeze := ""
	if p.Freeze {
		freeze = p.String()
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, FreezeEnv+"="+freeze)
	var stderr bytes.Buffer
	if cmd.Stderr == nil {
		cmd.Stderr = &stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, "", err
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, "", err
	}
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	sc := bufio.NewScanner(stdout)
	seen, last, reached := 0, "", false
	for !reached && sc.Scan() {
		last = sc.Text()
		if each != nil {
			each(last)
		}
		if p.Matches(last) {
			seen++
			reached = seen == p.N
		}
	}
	if reached {
		_ = cmd.Process.Signal(syscall.SIGKILL)
	}
	// Read to the end, so that a child that runs on never blocks on a full
	// pipe before the kill lands.
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return Finished, last, nil
	case reached && errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		return Killed, last, nil
	}
	return 0, last, fmt.Errorf("child process (kill point %s, last report %q): %v\n%s", p, last, err, stderr.String())
}
