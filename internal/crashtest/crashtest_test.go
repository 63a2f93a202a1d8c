package crashtest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The tests run this test binary again as a child that reports "start",
// then reads 10 bytes through Reporter.Reader ("read 10", "eof"), then
// reports "step 1" to "step N" with an "other" after every third step
// (forever with N 0), then exits with the status childExitEnv says.
const (
	childStepsEnv = "CRASHTEST_TEST_STEPS"
	childExitEnv  = "CRASHTEST_TEST_EXIT"
)

func TestMain(m *testing.M) {
	if v := os.Getenv(childStepsEnv); v != "" {
		os.Exit(runChild(v))
	}
	os.Exit(m.Run())
}

func runChild(steps string) int {
	n, _ := strconv.Atoi(steps)
	r, err := NewReporter()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r.Report("start")
	if _, err := io.Copy(io.Discard, r.Reader(strings.NewReader("0123456789"))); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 1; n == 0 || i <= n; i++ {
		r.Report(fmt.Sprintf("step %d", i))
		if i%3 == 0 {
			r.Report("other")
		}
	}
	code, _ := strconv.Atoi(os.Getenv(childExitEnv))
	if code != 0 {
		fmt.Fprintln(os.Stderr, "the child failed on purpose")
	}
	return code
}

func child(steps, exit int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childStepsEnv+"="+strconv.Itoa(steps), childExitEnv+"="+strconv.Itoa(exit))
	return cmd
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		steps, exit int
		p           Point
		want        Outcome
		last        string
	}{
		{"frozen at a kind", 10, 0, Point{Kind: "step", N: 4, Freeze: true}, Killed, "step 4"},
		{"frozen at any report", 10, 0, Point{N: 7, Freeze: true}, Killed, "other"},
		{"frozen in a read", 10, 0, Point{Kind: "read", N: 1, Freeze: true}, Killed, "read 10"},
		{"frozen at the end of a read", 10, 0, Point{Kind: "eof", N: 1, Freeze: true}, Killed, "eof"},
		{"frozen at the first report", 10, 0, Point{Kind: "start", N: 1, Freeze: true}, Killed, "start"},
		{"frozen at the last report", 3, 0, Point{Kind: "other", N: 1, Freeze: true}, Killed, "other"},
		{"running on", 0, 0, Point{Kind: "step", N: 7}, Killed, "step 7"},
		{"finished before the point", 5, 0, Point{Kind: "step", N: 6, Freeze: true}, Finished, "step 5"},
		{"finished without the kind", 2, 0, Point{Kind: "other", N: 1}, Finished, "step 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			got, last, err := Run(child(tc.steps, tc.exit), tc.p, func(l string) { lines = append(lines, l) })
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || last != tc.last {
				t.Errorf("Run = %d after %q, want %d after %q", got, last, tc.want, tc.last)
			}
			want := []string{"start", "read 10", "eof"}
			if len(lines) < len(want) {
				want = want[:len(lines)]
			}
			if len(lines) == 0 || !slices.Equal(lines[:len(want)], want) || lines[len(lines)-1] != last {
				t.Errorf("reports seen: %q", lines)
			}
		})
	}
}

func TestRunChildFails(t *testing.T) {
	for _, p := range []Point{{Kind: "step", N: 9, Freeze: true}, {Kind: "step", N: 9}} {
		_, last, err := Run(child(3, 1), p, nil)
		if err == nil || !strings.Contains(err.Error(), "the child failed on purpose") || !strings.Contains(err.Error(), "exit status 1") {
			t.Errorf("%s: err %v, want the child's exit status and stderr", p, err)
		}
		if last != "other" {
			t.Errorf("%s: last report %q", p, last)
		}
	}
	// A point the child cannot parse is its failure too.
	cmd := child(3, 0)
	cmd.Env = append(cmd.Env, FreezeEnv+"=bad")
	if _, _, err := Run(cmd, Point{Kind: "step", N: 1}, nil); err != nil {
		t.Fatalf("Run's own setting must win over an inherited one: %v", err)
	}
	if _, _, err := Run(exec.Command(os.Args[0]+"-missing"), Point{N: 1}, nil); err == nil {
		t.Error("Run of a missing program succeeded")
	}
}

func TestPoint(t *testing.T) {
	for _, p := range []Point{{Kind: "put", N: 3, Freeze: true}, {N: 1}, {Kind: "renamed", N: 12}} {
		got, err := ParsePoint(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePoint(%q) = %+v, %v; want %+v", p.String(), got, err, p)
		}
	}
	for _, s := range []string{"", "put", "put 3", "put x frozen", "put 0 frozen", "put -1 running", "put 3 stopped", "put 3 frozen extra"} {
		if p, err := ParsePoint(s); err == nil {
			t.Errorf("ParsePoint(%q) = %+v, want an error", s, p)
		}
	}
	for _, tc := range []struct {
		p    Point
		line string
		want bool
	}{
		{Point{Kind: "put"}, "put 3", true},
		{Point{Kind: "put"}, "put", true},
		{Point{Kind: "put"}, "putting 3", false},
		{Point{Kind: "put"}, "start", false},
		{Point{}, "anything at all", true},
	} {
		if got := tc.p.Matches(tc.line); got != tc.want {
			t.Errorf("%+v.Matches(%q) = %v", tc.p, tc.line, got)
		}
	}
}

func TestNewReporterBadPoint(t *testing.T) {
	t.Setenv(FreezeEnv, "step zero frozen")
	if _, err := NewReporter(); err == nil || !strings.Contains(err.Error(), "step zero frozen") {
		t.Fatalf("NewReporter with a bad %s: %v", FreezeEnv, err)
	}
	t.Setenv(FreezeEnv, "")
	r, err := NewReporter()
	if err != nil || r.freeze != nil {
		t.Fatalf("NewReporter without a point: %+v %v", r, err)
	}
}
