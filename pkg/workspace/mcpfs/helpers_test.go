package mcpfs

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/workspace"
)

var testScope = artifacts.SessionScope("demo", "u-1", "s-1")

// env is a server over real directories and a real filesystem store,
// with a go-sdk client connected in process.
type env struct {
	t       testing.TB
	dir     string // holds scratch, store, ref and outside
	store   *artifacts.Store
	m       *workspace.Manager
	srv     *Server
	cs      *mcp.ClientSession
	scope   artifacts.Scope
	outside string // a directory next to the roots, never served
}

type envOpts struct {
	ws     workspace.Options
	server Options
	noRef  bool
}

func newEnv(t testing.TB, configure func(*envOpts)) *env {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"scratch", "store", "ref", "outside"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	diskFile(t, filepath.Join(dir, "ref", "guide.md"), "# Guide\nline two\n")
	diskFile(t, filepath.Join(dir, "outside", "secret.txt"), "TOP SECRET\n")
	fst, err := fsstore.Open(filepath.Join(dir, "store"), fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(fst)
	o := envOpts{ws: workspace.Options{Scratch: filepath.Join(dir, "scratch"), Reference: filepath.Join(dir, "ref"), Policy: workspace.SnapshotManual}}
	if configure != nil {
		configure(&o)
	}
	if o.noRef {
		o.ws.Reference = ""
	}
	o.ws.Store = st
	m, err := workspace.New(o.ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	o.server.Manager = m
	if o.server.Memory == nil {
		o.server.Memory = st
	}
	srv, err := New(o.server)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, store: st, m: m, srv: srv, scope: testScope, outside: filepath.Join(dir, "outside")}
	e.cs = e.connect(testScope, nil)
	return e
}

// newServer returns an env for e's session served by a new manager with
// options o over e's store, and a new server: another process or pod.
func (e *env) newServer(o workspace.Options) *env {
	e.t.Helper()
	o.Store = e.store
	m, err := workspace.New(o)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { m.Close() })
	srv, err := New(Options{Manager: m, Memory: e.store})
	if err != nil {
		e.t.Fatal(err)
	}
	e2 := &env{t: e.t, srv: srv, m: m, store: e.store, scope: e.scope}
	e2.cs = e2.connect(e.scope, nil)
	return e2
}

// connect connects a new in-process client to the session's server.
func (e *env) connect(scope artifacts.Scope, copts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	ctx := context.Background()
	ms, err := e.srv.ForSession(scope)
	if err != nil {
		e.t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := ms.Connect(ctx, st, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and fails the test on a protocol error.
func (e *env) call(tool string, args map[string]any) *mcp.CallToolResult {
	e.t.Helper()
	return callOn(e.t, e.cs, tool, args)
}

func callOn(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	return res
}

// text returns the first text block of a result.
func text(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// allText returns every text block of a result.
func allText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// structured decodes a result's structured content.
func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

// mustOK fails unless res is a success and returns its text.
func (e *env) mustOK(tool string, args map[string]any) string {
	e.t.Helper()
	res := e.call(tool, args)
	if res.IsError {
		e.t.Fatalf("%s %v: %s", tool, args, text(res))
	}
	return text(res)
}

// mustFail fails unless res is an error result with code and returns its
// text.
func (e *env) mustFail(tool string, args map[string]any, code string) string {
	e.t.Helper()
	res := e.call(tool, args)
	if !res.IsError {
		e.t.Fatalf("%s %v succeeded: %s", tool, args, text(res))
	}
	if got := structured(e.t, res)["code"]; got != code {
		e.t.Fatalf("%s %v: code %v, want %s (%s)", tool, args, got, code, text(res))
	}
	return text(res)
}

// wsDir is the session's workspace directory on disk.
func (e *env) wsDir() string {
	return filepath.Join(e.m.Scratch(), workspace.DirName(e.scope.App, e.scope.User, e.scope.Session))
}

// wsFile writes a file into the workspace directly on disk (the
// workspace is opened first so that its directory exists).
func (e *env) wsFile(rel, data string) string {
	e.t.Helper()
	if _, err := e.m.Open(context.Background(), e.scope); err != nil {
		e.t.Fatal(err)
	}
	p := filepath.Join(e.wsDir(), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		e.t.Fatal(err)
	}
	diskFile(e.t, p, data)
	return p
}

func diskFile(t testing.TB, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshotTree reads every file and directory under dir (the workspace
// index excluded) for before/after comparisons.
func snapshotTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), workspace.ReservedPrefix) {
			return nil
		}
		switch {
		case d.IsDir():
			out[rel] = "<dir>"
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "<link " + target + ">"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// shmDir returns a directory on tmpfs when the machine has one (large
// trees are made much faster there), else a temporary directory.
func shmDir(t testing.TB) string {
	d, err := os.MkdirTemp("/dev/shm", "mcpfs")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// rawClient is a raw JSON-RPC client of ServeStdio over real pipes: what
// a runtime's stdio transport does, without a client library.
type rawClient struct {
	t    testing.TB
	in   *os.File
	out  *bufio.Reader
	done chan struct{} // closed when ServeStdio returned
	err  error         // what it returned
}

// startStdio serves the env's session with ServeStdio until the test
// ends (or close is called): its input is a blocking socket pair or pipe
// as a spawned server's stdin is (stdinPair), its output a pipe.
func startStdio(t testing.TB, e *env, ctx context.Context) *rawClient {
	t.Helper()
	inR, inW := stdinPair(t)
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &rawClient{t: t, in: inW, out: bufio.NewReaderSize(outR, 1<<20), done: make(chan struct{})}
	go func() {
		c.err = e.srv.ServeStdio(ctx, e.scope, inR, outW)
		close(c.done)
		outW.Close()
		inR.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-c.done
		outR.Close()
	})
	return c
}

// initialize does the MCP handshake.
func (c *rawClient) initialize() {
	c.t.Helper()
	if m := c.exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`); m["error"] != nil {
		c.t.Fatalf("initialize: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// send writes one line.
func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := c.in.WriteString(line + "\n"); err != nil {
		c.t.Fatal(err)
	}
}

// recv reads one line; it is valid until the next recv.
func (c *rawClient) recv() []byte {
	c.t.Helper()
	resp, err := c.out.ReadSlice('\n')
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// roundTrip sends a line and returns the next line read.
func (c *rawClient) roundTrip(line string) []byte {
	c.t.Helper()
	c.send(line)
	return c.recv()
}

// exchange sends a line and decodes the next line read.
func (c *rawClient) exchange(line string) map[string]any {
	c.t.Helper()
	resp := c.roundTrip(line)
	var m map[string]any
	if err := json.Unmarshal(resp, &m); err != nil {
		c.t.Fatalf("%s: %v", resp, err)
	}
	return m
}

// close ends the input and returns what ServeStdio returned.
func (c *rawClient) close() error {
	c.in.Close()
	<-c.done
	return c.err
}

// wait returns what ServeStdio returned, once it did.
func (c *rawClient) wait() error {
	<-c.done
	return c.err
}
