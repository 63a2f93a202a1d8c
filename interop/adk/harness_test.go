//go:build interop

package adk_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/agentstore/agentstore/cmd"
)

// TestMain runs this test binary as agentstore when it is called by that
// name (the tests call it through a symbolic link), so that the tests run
// the real command, built with the test's flags (-race included).
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "agentstore" {
		os.Exit(cmd.Main())
	}
	code := m.Run()
	if adkgoBinary.dir != "" {
		os.RemoveAll(adkgoBinary.dir)
	}
	os.Exit(code)
}

// agentstoreBin returns a path that runs this test binary as agentstore.
func agentstoreBin(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "agentstore")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// env is the environment of every process a test starts: a home of its
// own, no AGENTSTORE_* settings and no emulator of the caller's, and no
// race-detector sleep at exit (races are still reported).
func env(home string, extra ...string) []string {
	e := []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"PATH=" + os.Getenv("PATH"),
		"GORACE=atexit_sleep_ms=0",
	}
	for _, k := range []string{"TMPDIR", "GOCOVERDIR"} {
		if v := os.Getenv(k); v != "" {
			e = append(e, k+"="+v)
		}
	}
	return append(e, extra...)
}

// agentstore is the real binary with the environment of one test.
type agentstore struct {
	t   *testing.T
	bin string
	env []string
}

func newAgentstore(t *testing.T, extraEnv ...string) *agentstore {
	return &agentstore{t: t, bin: agentstoreBin(t), env: env(t.TempDir(), extraEnv...)}
}

// result is what one run of agentstore did.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("agentstore %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// run runs agentstore with args and returns what it did; only a failure to
// start it fails the test.
func (a *agentstore) run(args ...string) result {
	a.t.Helper()
	c := exec.Command(a.bin, args...)
	c.Env = a.env
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		a.t.Fatalf("agentstore %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// want runs agentstore with args and fails the test unless it exits with
// code; it returns what it did.
func (a *agentstore) want(code int, args ...string) result {
	a.t.Helper()
	r := a.run(args...)
	if r.code != code {
		a.t.Fatalf("want exit %d, got %s", code, r)
	}
	return r
}

// json runs agentstore with args and -o json, wants exit 0 and an empty
// stderr, and decodes stdout into v.
func (a *agentstore) json(v any, args ...string) result {
	a.t.Helper()
	r := a.want(0, append(args, "-o", "json")...)
	if r.stderr != "" {
		a.t.Errorf("stderr not empty: %s", r)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		a.t.Fatalf("decoding the output: %v\n%s", err, r)
	}
	return r
}

// emulator is fake-gcs-server (the version go.mod requires), in this
// process, on a loopback port, with the memory backend. Its public host is
// its own address, so that it serves the XML API's path-style reads (the
// Go client's default for downloads) as Cloud Storage does.
type emulator struct {
	srv *fakestorage.Server
	// Host is host:port, for STORAGE_EMULATOR_HOST of Go clients.
	Host string
	// URL is http://host:port.
	URL string
	// requests counts the requests it has answered.
	requests atomic.Int64
}

// newEmulator starts an emulator holding the empty buckets; it stops when
// the test ends.
func newEmulator(t testing.TB, buckets ...string) *emulator {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme: "http", NoListener: true, PublicHost: host, ExternalURL: "http://" + host,
	})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	e := &emulator{srv: srv, Host: host, URL: "http://" + host}
	h := srv.HTTPHandler()
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.requests.Add(1)
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(l)
	t.Cleanup(func() {
		hs.Close()
		srv.Stop()
	})
	for _, b := range buckets {
		srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: b})
	}
	return e
}

// objects returns the names of the objects of bucket.
func (e *emulator) objects(t testing.TB, bucket string) []string {
	t.Helper()
	var names []string
	opts := fakestorage.ListOptions{}
	for {
		page, err := e.srv.ListObjectsWithOptionsPaginated(bucket, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			names = append(names, o.Name)
		}
		if page.NextPageToken == "" {
			return names
		}
		opts.PageToken = page.NextPageToken
	}
}

// nodeProxy is a loopback proxy in front of the emulator for the Node
// storage client. That client sends the content type of a resumable upload
// only in the X-Upload-Content-Type header of the request that starts it;
// real Cloud Storage applies it, fake-gcs-server 1.56.1 ignores it (its
// issue #1098). The proxy copies the header into the request's JSON body,
// where the emulator reads it, so that the objects get the content type
// they would get on Cloud Storage. Nothing else is changed. It returns the
// proxy's URL (http://host:port), the Node client's API endpoint.
func (e *emulator) nodeProxy(t testing.TB) string {
	t.Helper()
	target, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("X-Upload-Content-Type"); ct != "" && r.Method == http.MethodPost && r.URL.Query().Get("uploadType") == "resumable" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			obj := map[string]any{}
			if len(bytes.TrimSpace(body)) > 0 {
				if err := json.Unmarshal(body, &obj); err != nil {
					http.Error(w, "nodeProxy: the body of a resumable upload is not a JSON object: "+err.Error(), http.StatusBadRequest)
					return
				}
			}
			if _, ok := obj["contentType"]; !ok {
				obj["contentType"] = ct
			}
			body, _ = json.Marshal(obj)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Length", fmt.Sprint(len(body)))
			r.Header.Set("Content-Type", "application/json; charset=UTF-8")
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p.URL
}

// adkOp is one operation of the ADK helpers' line protocol (see
// adkgo/main.go and adkjs/adk.mjs).
type adkOp struct {
	Op          string         `json:"op"`
	App         string         `json:"app,omitempty"`
	User        string         `json:"user,omitempty"`
	Session     string         `json:"session,omitempty"`
	Name        string         `json:"name,omitempty"`
	Version     *int64         `json:"version,omitempty"`
	Text        *string        `json:"text,omitempty"`
	Data        []byte         `json:"data,omitempty"`
	MIME        string         `json:"mime,omitempty"`
	DisplayName string         `json:"display_name,omitempty"`
	FileURI     string         `json:"file_uri,omitempty"`
	FileMIME    string         `json:"file_mime,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Writers     int            `json:"writers,omitempty"`
	Saves       int            `json:"saves,omitempty"`
	Count       int            `json:"count,omitempty"`
}

// adkMeta is an ADK library's metadata of one version.
type adkMeta struct {
	Version        int64          `json:"version"`
	MIME           string         `json:"mime"`
	CustomMetadata map[string]any `json:"custom_metadata"`
	CanonicalURI   string         `json:"canonical_uri"`
}

// raceSave is one save the Go ADK acknowledged in a race.
type raceSave struct {
	Writer  int    `json:"writer"`
	Index   int    `json:"index"`
	Version int64  `json:"version"`
	SHA256  string `json:"sha256"`
}

// adkResult is the answer to one adkOp.
type adkResult struct {
	Error       string     `json:"error"`
	NotFound    bool       `json:"not_found"`
	Version     *int64     `json:"version"`
	Data        []byte     `json:"data"`
	MIME        string     `json:"mime"`
	IsText      bool       `json:"is_text"`
	DisplayName string     `json:"display_name"`
	FileURI     string     `json:"file_uri"`
	Names       []string   `json:"names"`
	Versions    []int64    `json:"versions"`
	Meta        *adkMeta   `json:"meta"`
	Metas       []adkMeta  `json:"metas"`
	Saves       []raceSave `json:"saves"`
	Conflicts   int        `json:"conflicts"`
	NsPerOp     int64      `json:"ns_per_op"`
}

// adkClient is a running ADK helper: one operation at a time.
type adkClient struct {
	t      testing.TB
	name   string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	mu     sync.Mutex
	stderr bytes.Buffer
}

// lockedWriter serialises the writes of a process's stderr with the
// test's reads of it.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// startADK starts an ADK helper; it is stopped (stdin closed, then waited
// for) when the test ends.
func startADK(t testing.TB, name string, environ []string, command string, args ...string) *adkClient {
	t.Helper()
	c := &adkClient{t: t, name: name, cmd: exec.Command(command, args...)}
	c.cmd.Env = environ
	c.cmd.Stderr = lockedWriter{&c.mu, &c.stderr}
	var err error
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewScanner(out)
	c.out.Buffer(make([]byte, 0, 1<<20), 256<<20)
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		c.in.Close()
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("%s: %v\n%s", name, err, c.stderrText())
		}
	})
	return c
}

func (c *adkClient) stderrText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// do sends op and returns the answer; a helper that does not answer fails
// the test.
func (c *adkClient) do(op adkOp) adkResult {
	c.t.Helper()
	b, err := json.Marshal(op)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("%s: sending %s: %v\n%s", c.name, b, err, c.stderrText())
	}
	if !c.out.Scan() {
		c.t.Fatalf("%s: no answer to %s (%v)\n%s", c.name, b, c.out.Err(), c.stderrText())
	}
	var r adkResult
	if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
		c.t.Fatalf("%s: answer %q to %s: %v", c.name, c.out.Bytes(), b, err)
	}
	return r
}

// must is do for an operation that has to succeed.
func (c *adkClient) must(op adkOp) adkResult {
	c.t.Helper()
	r := c.do(op)
	if r.Error != "" || r.NotFound {
		c.t.Fatalf("%s %s %q: error %q (not found: %v)\n%s", c.name, op.Op, op.Name, r.Error, r.NotFound, c.stderrText())
	}
	return r
}

// adkgoBinary is the Go ADK helper, built once per test process from its
// own module (adkgo/, with its go.sum) into a temporary directory.
var adkgoBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// adkgoPath returns the path of the Go ADK helper, building it first. A
// build that fails fails the test: the helper needs only the go command
// and the module proxy, which every machine that runs these tests has.
func adkgoPath(t testing.TB) string {
	t.Helper()
	adkgoBinary.once.Do(func() {
		goCmd, err := exec.LookPath("go")
		if err != nil {
			adkgoBinary.err = fmt.Errorf("the go command, needed to build the Go ADK helper, is not on PATH: %v", err)
			return
		}
		dir, err := os.MkdirTemp("", "adkgo-")
		if err != nil {
			adkgoBinary.err = err
			return
		}
		adkgoBinary.dir = dir
		out := filepath.Join(dir, "adkgo")
		c := exec.Command(goCmd, "build", "-o", out, ".")
		c.Dir = "adkgo"
		c.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		if b, err := c.CombinedOutput(); err != nil {
			adkgoBinary.err = fmt.Errorf("building the Go ADK helper (cd adkgo && go build): %v\n%s", err, b)
			return
		}
		adkgoBinary.path = out
	})
	if adkgoBinary.err != nil {
		t.Fatal(adkgoBinary.err)
	}
	return adkgoBinary.path
}

// startADKGo starts the Go ADK's GCS artifact service on bucket of e.
func startADKGo(t testing.TB, e *emulator, bucket string) *adkClient {
	t.Helper()
	return startADK(t, "adk-go", env(t.TempDir(), "STORAGE_EMULATOR_HOST="+e.Host), adkgoPath(t), "-bucket", bucket)
}

// nodeADK returns node and the folder of the ADK JS helper with its
// installed packages, or skips (locally) or fails (CI=true) the test when
// node or the packages are missing: CI installs them (.ci/run).
func nodeADK(t testing.TB) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs("adkjs")
	if err != nil {
		t.Fatal(err)
	}
	missing := func(why string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("ADK JS interop cannot run: %s (CI installs them with npm ci in interop/adk/adkjs)", why)
		}
		t.Skipf("ADK JS interop skipped: %s (run npm ci in interop/adk/adkjs)", why)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	for _, p := range []string{"@google/adk", "@google-cloud/storage"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", p, "package.json")); err != nil {
			missing("interop/adk/adkjs/node_modules lacks " + p)
		}
	}
	return node, dir
}

// startADKJSGCS starts ADK JS's GcsArtifactService on bucket of e, through
// the proxy that carries resumable uploads' content types.
func startADKJSGCS(t testing.TB, e *emulator, bucket string) *adkClient {
	t.Helper()
	node, dir := nodeADK(t)
	return startADK(t, "adk-js gcs", env(t.TempDir(), "ADK_GCS_ENDPOINT="+e.nodeProxy(t)), node, filepath.Join(dir, "adk.mjs"), "gcs", bucket)
}

// startADKJSFile starts ADK JS's FileArtifactService rooted at root.
func startADKJSFile(t testing.TB, root string) *adkClient {
	t.Helper()
	node, dir := nodeADK(t)
	return startADK(t, "adk-js file", env(t.TempDir()), node, filepath.Join(dir, "adk.mjs"), "file", root)
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
