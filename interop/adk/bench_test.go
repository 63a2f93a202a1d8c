//go:build interop

package adk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	artifactscmd "github.com/agentstore/agentstore/cmd/artifacts"
	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// BenchmarkListSession1000Names lists one session holding 1,000 names,
// each saved once by the Go ADK, on one emulator bucket, side by side:
//
//	adk-go/List             the Go ADK's own List, in a warm process (one
//	                        JSON line to the helper and back a call)
//	adk-go/List-loop        the same List called b.N times in a loop inside
//	                        the helper (one JSON line for all of them), also
//	                        timed there (helper-ns/op): the library alone
//	agentstore/ListNames    what "artifacts list --all" does, on a store
//	                        opened once, in this process
//	adk-go/process          a new helper process a call: start, client, List
//	agentstore/process      agentstore artifacts list --all -o json, a new
//	                        process a call: start, open (layout detection),
//	                        list, JSON; the binary built from this tree, or
//	                        the one $AGENTSTORE_BENCH_BIN names (BenchBinEnv)
//
// The process rows also report each process's CPU time and minor page
// faults (procUsage). Both sides list the same 1,000 names (checked
// before timing). The goal
// is agentstore not slower than the library's List. Commands and numbers:
// docs/performance.md.
func BenchmarkListSession1000Names(b *testing.B) {
	const (
		bucket = "adk-go-bench"
		n      = 1000
	)
	e := newEmulator(b, bucket)
	g := startADKGo(b, e, bucket)
	sc := scope{"bench-app", "u", "s"}
	for i := range n {
		g.must(adkOp{Op: "save", App: sc.App, User: sc.User, Session: sc.Session, Name: fmt.Sprintf("name-%04d.txt", i), Text: ptr("x")})
	}
	list := adkOp{Op: "list", App: sc.App, User: sc.User, Session: sc.Session}
	want := g.must(list).Names
	if len(want) != n {
		b.Fatalf("adk-go lists %d names, want %d", len(want), n)
	}
	b.Setenv("STORAGE_EMULATOR_HOST", e.Host)
	ctx := context.Background()
	uri := "gs://" + bucket
	opened, err := cmdutil.NewStores().Open(ctx, uri, artifacts.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if c, ok := opened.Driver.(io.Closer); ok {
		b.Cleanup(func() { c.Close() })
	}
	scopeOf := artifacts.Scope{Kind: artifacts.KindSession, App: sc.App, User: sc.User, Session: sc.Session}
	listNames := func() []string {
		res, err := artifactscmd.ListNames(ctx, opened.Store, scopeOf, opened.Store.Capabilities().MaxPageLimit, "", true)
		if err != nil {
			b.Fatal(err)
		}
		var names []string
		for _, it := range res.Items {
			names = append(names, it.Name)
		}
		return names
	}
	if got := listNames(); !slices.Equal(got, want) {
		b.Fatalf("agentstore lists %d names, adk-go %d (first %q, %q)", len(got), len(want), first(got), first(want))
	}
	agentstoreArgs := append([]string{"artifacts", "list", "--store", uri, "--all", "-o", "json"}, sc.flags()...)
	// The binary a user runs, built as they build it: the test binary
	// (agentstoreBin) would also initialise the emulator's packages and the
	// tests' own, which the helper's process does not pay either.
	bin, binEnv := builtAgentstore(b), env(b.TempDir(), "STORAGE_EMULATOR_HOST="+e.Host)
	runAgentstore := func(u *procUsage) []string {
		var out artifactscmd.ListResult
		c := exec.Command(bin, agentstoreArgs...)
		c.Env = binEnv
		stdout, err := c.Output()
		if err != nil {
			b.Fatalf("agentstore %s: %v", strings.Join(agentstoreArgs, " "), err)
		}
		u.add(c.ProcessState)
		if err := json.Unmarshal(stdout, &out); err != nil {
			b.Fatal(err)
		}
		names := make([]string, 0, len(out.Items))
		for _, it := range out.Items {
			names = append(names, it.Name)
		}
		return names
	}
	adkgo := adkgoPath(b)
	listLine, _ := json.Marshal(list)
	adkEnv := env(b.TempDir(), "STORAGE_EMULATOR_HOST="+e.Host)
	runADKGo := func(u *procUsage) []string {
		c := exec.Command(adkgo, "-bucket", bucket)
		c.Env = adkEnv
		c.Stdin = bytes.NewReader(append(listLine, '\n'))
		stdout, err := c.Output()
		if err != nil {
			b.Fatalf("adkgo: %v", err)
		}
		u.add(c.ProcessState)
		var r adkResult
		if err := json.Unmarshal(stdout, &r); err != nil || r.Error != "" {
			b.Fatalf("adkgo: %v %s", err, r.Error)
		}
		return r.Names
	}
	for _, check := range []func(*procUsage) []string{runAgentstore, runADKGo} {
		if got := check(nil); !slices.Equal(got, want) {
			b.Fatalf("a process lists %d names, want the %d of adk-go", len(got), len(want))
		}
	}

	b.Run("adk-go/List", func(b *testing.B) {
		defer requestsPerOp(b, e)()
		for b.Loop() {
			if r := g.do(list); len(r.Names) != n {
				b.Fatalf("%d names: %s", len(r.Names), r.Error)
			}
		}
	})
	b.Run("adk-go/List-loop", func(b *testing.B) {
		defer requestsPerOp(b, e)()
		loop := list
		loop.Op, loop.Count = "bench-list", b.N
		r := g.do(loop)
		if r.Error != "" || len(r.Names) != n {
			b.Fatalf("%d names: %s", len(r.Names), r.Error)
		}
		b.ReportMetric(float64(r.NsPerOp), "helper-ns/op")
	})
	b.Run("agentstore/ListNames", func(b *testing.B) {
		defer requestsPerOp(b, e)()
		for b.Loop() {
			if got := listNames(); len(got) != n {
				b.Fatalf("%d names", len(got))
			}
		}
	})
	b.Run("adk-go/process", func(b *testing.B) {
		defer requestsPerOp(b, e)()
		var u procUsage
		defer u.report(b)
		for b.Loop() {
			if got := runADKGo(&u); len(got) != n {
				b.Fatalf("%d names", len(got))
			}
		}
	})
	b.Run("agentstore/process", func(b *testing.B) {
		defer requestsPerOp(b, e)()
		var u procUsage
		defer u.report(b)
		for b.Loop() {
			if got := runAgentstore(&u); len(got) != n {
				b.Fatalf("%d names", len(got))
			}
		}
	})
}

// procUsage sums what the processes of a benchmark row cost besides their
// wall time: CPU time and minor page faults. A minor fault is a first
// touch of a memory page; in this virtual machine each costs about 16 µs
// (docs/performance.md), so a process that touches more memory is slower
// by that much even when its CPU profile shows nothing.
type procUsage struct {
	n         int
	faults    int64
	user, sys time.Duration
}

// add counts the process ps describes; a nil u counts nothing.
func (u *procUsage) add(ps *os.ProcessState) {
	if u == nil {
		return
	}
	u.n++
	u.user += ps.UserTime()
	u.sys += ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u.faults += ru.Minflt
	}
}

// report reports the means per process as faults/op, user-ms/op and
// sys-ms/op.
func (u *procUsage) report(b *testing.B) {
	if u.n == 0 {
		return
	}
	n := float64(u.n)
	b.ReportMetric(float64(u.faults)/n, "faults/op")
	b.ReportMetric(float64(u.user.Microseconds())/1000/n, "user-ms/op")
	b.ReportMetric(float64(u.sys.Microseconds())/1000/n, "sys-ms/op")
}

// first returns the first of s, or "".
func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// requestsPerOp reports the emulator's requests per operation of b; call
// the function it returns when b's loop is done.
func requestsPerOp(b *testing.B, e *emulator) func() {
	start := e.requests.Load()
	return func() {
		b.ReportMetric(float64(e.requests.Load()-start)/float64(b.N), "requests/op")
	}
}

// BenchBinEnv names the environment variable that points the
// agentstore/process row of BenchmarkListSession1000Names at a prebuilt
// agentstore binary instead of the one the benchmark builds from this
// tree: to compare two builds (main's and a branch's, say) in the same
// harness, one after the other.
const BenchBinEnv = "AGENTSTORE_BENCH_BIN"

// builtAgentstore returns the agentstore binary of the process row: the
// one BenchBinEnv names (which must be an executable file), else the
// agentstore command built with go build, as the adk-go helper is built,
// into a temporary directory of b.
func builtAgentstore(b *testing.B) string {
	b.Helper()
	if bin := os.Getenv(BenchBinEnv); bin != "" {
		fi, err := os.Stat(bin)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			b.Fatalf("%s=%s: want an executable agentstore binary (stat: %v)", BenchBinEnv, bin, err)
		}
		b.Logf("agentstore/process runs %s (%s)", bin, BenchBinEnv)
		return bin
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		b.Fatalf("the go command, needed to build agentstore, is not on PATH: %v", err)
	}
	out := filepath.Join(b.TempDir(), "agentstore")
	c := exec.Command(goCmd, "build", "-o", out, "github.com/agentstore/agentstore")
	if msg, err := c.CombinedOutput(); err != nil {
		b.Fatalf("go build agentstore: %v\n%s", err, msg)
	}
	return out
}
