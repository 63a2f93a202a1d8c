package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/storage"
	"github.com/rogpeppe/go-internal/testscript"
	"google.golang.org/api/option"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// The testscript commands of the Cloud Storage scripts
// (testdata/script/gcs_*.txtar), run against fake-gcs-server's real binary
// (a tool of go.mod, built once per test process):
//
//	gcs-emulator start BUCKET [fixture]   start the emulator on a free loopback port with BUCKET
//	                                      (holding the Erlang GCS fixture when "fixture" is given)
//	                                      and set STORAGE_EMULATOR_HOST; it is killed when the script ends
//	gcs-emulator stop                     kill the emulator (the port then refuses connections)
//	gcs-objects BUCKET FILE               write every object of BUCKET with its size, MD5 and generation to FILE
//	gcs-put BUCKET OBJECT CONTENT         write CONTENT to OBJECT, replacing it
//	gcs-object APP USER SESSION NAME V SUFFIX VAR
//	                                      set $VAR to the object name of version V's SUFFIX object (default prefix)
//	gcs-put-artifact BUCKET APP USER SESSION NAME CONTENT
//	                                      put a version through gcsstore ('' for absent parts)
//	gcs-blackhole                         set STORAGE_EMULATOR_HOST to a loopback port that accepts
//	                                      connections and never answers
//	gcs-check-fixture BUCKET              check with agentstore, exactly, every version of every name
//	                                      of the GCS fixture against what the Erlang library decoded
func init() {
	scriptCmds["gcs-emulator"] = cmdGCSEmulator
	scriptCmds["gcs-objects"] = cmdGCSObjects
	scriptCmds["gcs-put"] = cmdGCSPut
	scriptCmds["gcs-object"] = cmdGCSObject
	scriptCmds["gcs-put-artifact"] = cmdGCSPutArtifact
	scriptCmds["gcs-blackhole"] = cmdGCSBlackhole
	scriptCmds["gcs-check-fixture"] = cmdGCSCheckFixture
	scriptSetups = append(scriptSetups, func(env *testscript.Env) error {
		// A developer's emulator must not leak into the scripts.
		env.Setenv("STORAGE_EMULATOR_HOST", "")
		return nil
	})
}

// fakeGCSServer is the emulator's binary, built once per test process.
var fakeGCSServer struct {
	once sync.Once
	path string
	err  error
}

// emulatorBinary returns the path of fake-gcs-server's binary, built from
// the module cache at the version go.mod requires (a tool of go.mod). "go
// tool -n" builds it into the build cache, or finds it there, and prints its
// path, so nothing is left behind and later runs reuse it. Failing to build
// it fails the scripts that need it: the GCS suite is never skipped.
func emulatorBinary() (string, error) {
	fakeGCSServer.once.Do(func() {
		goCmd, err := exec.LookPath("go")
		if err != nil {
			fakeGCSServer.err = fmt.Errorf("the go command, needed to build fake-gcs-server, is not on PATH: %v", err)
			return
		}
		var stderr bytes.Buffer
		c := exec.Command(goCmd, "tool", "-n", "fake-gcs-server")
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			fakeGCSServer.err = fmt.Errorf("building fake-gcs-server (go tool -n fake-gcs-server): %v\n%s", err, stderr.String())
			return
		}
		p := strings.TrimSpace(string(out))
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			fakeGCSServer.err = fmt.Errorf("go tool -n fake-gcs-server printed %q, which is not a file (%v)", p, err)
			return
		}
		fakeGCSServer.path = p
	})
	return fakeGCSServer.path, fakeGCSServer.err
}

// gcsEmulator is the running emulator of one script.
type gcsEmulator struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	host string        // 127.0.0.1:PORT
}

func (e *gcsEmulator) kill() {
	if e.cmd.Process != nil {
		e.cmd.Process.Kill()
	}
	<-e.done
}

// emulators maps a script's work directory to its running emulator.
var emulators sync.Map

func emulatorOf(ts *testscript.TestScript) *gcsEmulator {
	v, ok := emulators.Load(ts.Getenv("WORK"))
	if !ok {
		ts.Fatalf("no emulator: run gcs-emulator start first")
	}
	return v.(*gcsEmulator)
}

func cmdGCSEmulator(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "gcs-emulator")
	if len(args) == 1 && args[0] == "stop" {
		e := emulatorOf(ts)
		e.kill()
		emulators.Delete(ts.Getenv("WORK"))
		// Nothing answers at the address any more.
		if c, err := net.DialTimeout("tcp", e.host, time.Second); err == nil {
			c.Close()
			ts.Fatalf("gcs-emulator stop: %s still accepts connections", e.host)
		}
		return
	}
	if len(args) < 2 || len(args) > 3 || args[0] != "start" || (len(args) == 3 && args[2] != "fixture") {
		ts.Fatalf("usage: gcs-emulator start BUCKET [fixture] | gcs-emulator stop")
	}
	if _, ok := emulators.Load(ts.Getenv("WORK")); ok {
		ts.Fatalf("gcs-emulator: already started")
	}
	bin, err := emulatorBinary()
	ts.Check(err)
	bucket := args[1]

	// Every top-level directory of -data is a bucket, every file below it
	// an object named by its slash path, its bytes as they are.
	data := ts.MkAbs("gcsdata")
	ts.Check(os.MkdirAll(filepath.Join(data, bucket), 0o700))
	var objects []testfixtures.GCSObject
	if len(args) == 3 {
		objects, err = testfixtures.GCSObjectsList()
		ts.Check(err)
		if len(objects) == 0 {
			ts.Fatalf("gcs-emulator: the GCS fixture has no objects")
		}
		for _, o := range objects {
			p := filepath.Join(data, bucket, filepath.FromSlash(o.Name))
			ts.Check(os.MkdirAll(filepath.Dir(p), 0o700))
			ts.Check(os.WriteFile(p, o.Data, 0o600))
		}
	}

	// The port is free when picked but may be taken before the emulator
	// binds it: try a few.
	var e *gcsEmulator
	var lastErr error
	for range 5 {
		e, lastErr = startEmulator(ts, bin, data)
		if lastErr == nil {
			break
		}
		ts.Logf("gcs-emulator: %v; retrying", lastErr)
	}
	if lastErr != nil {
		ts.Fatalf("gcs-emulator: %v", lastErr)
	}
	emulators.Store(ts.Getenv("WORK"), e)
	work := ts.Getenv("WORK")
	ts.Defer(func() {
		if v, ok := emulators.LoadAndDelete(work); ok {
			v.(*gcsEmulator).kill()
		}
	})

	// The bucket exists and holds exactly the fixture.
	names := map[string]bool{}
	ts.Check(listObjects(e.host, bucket, func(o gcsObject) { names[o.Name] = true }))
	if len(names) != len(objects) {
		ts.Fatalf("gcs-emulator: bucket %s holds %d objects, want %d", bucket, len(names), len(objects))
	}
	for _, o := range objects {
		if !names[o.Name] {
			ts.Fatalf("gcs-emulator: object %q was not loaded", o.Name)
		}
	}
	ts.Setenv("STORAGE_EMULATOR_HOST", e.host)
	// Under -race every agentstore process (this test binary) sleeps a
	// second at exit by default (GORACE atexit_sleep_ms=1000); these
	// scripts run many short commands. Races are still reported.
	if g := ts.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		ts.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
	ts.Logf("fake-gcs-server at %s, bucket %s with %d objects", e.host, bucket, len(objects))
}

// freePort returns a loopback TCP port nothing listens on at the moment.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// errPortTaken is the error of an emulator that could not bind its port.
var errPortTaken = errors.New("port taken")

// startEmulator starts the binary with the memory backend on a free
// loopback port, preloaded from data, and waits until it answers. A port
// that another process takes between its choice and the emulator's start
// is replaced by another, a few times.
func startEmulator(ts *testscript.TestScript, bin, data string) (*gcsEmulator, error) {
	for range 4 {
		e, err := startEmulatorOnce(ts, bin, data)
		if !errors.Is(err, errPortTaken) {
			return e, err
		}
	}
	return startEmulatorOnce(ts, bin, data)
}

func startEmulatorOnce(ts *testscript.TestScript, bin, data string) (*gcsEmulator, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	host := "127.0.0.1:" + strconv.Itoa(port)
	logf, err := os.OpenFile(ts.MkAbs("gcs-emulator.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := []string{
		"-scheme", "http",
		"-host", "127.0.0.1",
		"-port", strconv.Itoa(port),
		"-data", data,
		"-public-host", host,
		"-external-url", "http://" + host,
		"-log-level", "error",
	}
	c := exec.Command(bin, append(args, emulatorBackendArgs(ts)...)...)
	c.Stdout, c.Stderr = logf, logf
	c.Env = append(os.Environ(), "FAKE_GCS_DATA=")
	if err := c.Start(); err != nil {
		return nil, err
	}
	e := &gcsEmulator{cmd: c, done: make(chan struct{}), host: host}
	go func() { c.Wait(); close(e.done) }()

	// Poll until it answers or exits, however long a loaded machine takes
	// to start it (the script's timeout bounds a server that hangs).
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get("http://" + host + "/storage/v1/b")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e, nil
			}
		}
		select {
		case <-e.done:
			log, _ := os.ReadFile(ts.MkAbs("gcs-emulator.log"))
			err := fmt.Errorf("fake-gcs-server on %s exited (%v): %s", host, c.ProcessState, log)
			if bytes.Contains(log, []byte("address already in use")) {
				// Another process took the free port before the emulator
				// bound it.
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return nil, err
		case <-time.After(50 * time.Millisecond): // polling interval
		}
	}
}

// gcsObject is the part of an object resource the commands use.
type gcsObject struct {
	Name       string `json:"name"`
	Size       string `json:"size"`
	MD5Hash    string `json:"md5Hash"`
	Generation string `json:"generation"`
}

// listObjects calls fn for every object of bucket, through the JSON API.
func listObjects(host, bucket string, fn func(gcsObject)) error {
	client := &http.Client{Timeout: 10 * time.Second}
	token := ""
	for {
		q := url.Values{"maxResults": {"1000"}}
		if token != "" {
			q.Set("pageToken", token)
		}
		resp, err := client.Get("http://" + host + "/storage/v1/b/" + url.PathEscape(bucket) + "/o?" + q.Encode())
		if err != nil {
			return err
		}
		var page struct {
			Items         []gcsObject `json:"items"`
			NextPageToken string      `json:"nextPageToken"`
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("list %s: %s", bucket, resp.Status)
		}
		if err != nil {
			return err
		}
		for _, o := range page.Items {
			fn(o)
		}
		if page.NextPageToken == "" {
			return nil
		}
		token = page.NextPageToken
	}
}

func cmdGCSObjects(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "gcs-objects")
	if len(args) != 2 {
		ts.Fatalf("usage: gcs-objects BUCKET FILE")
	}
	var lines []string
	ts.Check(listObjects(emulatorOf(ts).host, args[0], func(o gcsObject) {
		lines = append(lines, fmt.Sprintf("%s %s %s %s", o.Name, o.Size, o.MD5Hash, o.Generation))
	}))
	slices.Sort(lines)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
}

func cmdGCSPut(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "gcs-put")
	if len(args) != 3 {
		ts.Fatalf("usage: gcs-put BUCKET OBJECT CONTENT")
	}
	u := "http://" + emulatorOf(ts).host + "/upload/storage/v1/b/" + url.PathEscape(args[0]) + "/o?" +
		url.Values{"uploadType": {"media"}, "name": {args[1]}}.Encode()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(u, "application/octet-stream", strings.NewReader(args[2]))
	ts.Check(err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		ts.Fatalf("gcs-put %s: %s: %s", args[1], resp.Status, body)
	}
}

func cmdGCSObject(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "gcs-object")
	if len(args) != 7 {
		ts.Fatalf("usage: gcs-object APP USER SESSION NAME V SUFFIX VAR")
	}
	v, err := strconv.ParseInt(args[4], 10, 64)
	ts.Check(err)
	scope := scopeOf(args[0], args[1], args[2])
	ts.Setenv(args[6], gcsstore.DefaultPrefix+"/"+gcsstore.ScopesSegment+"/"+scope.Hash()+"/"+gcsstore.NamesSegment+"/"+
		artifacts.NameHash(args[3])+"/"+gcsstore.VersionObject(v, gcsstore.Suffix(args[5])))
}

func cmdGCSPutArtifact(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "gcs-put-artifact")
	if len(args) != 6 {
		ts.Fatalf("usage: gcs-put-artifact BUCKET APP USER SESSION NAME CONTENT")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := storage.NewClient(ctx,
		option.WithEndpoint("http://"+emulatorOf(ts).host+"/storage/v1/"),
		option.WithoutAuthentication(),
		storage.WithJSONReads(),
	)
	ts.Check(err)
	defer client.Close()
	st, err := gcsstore.Open(ctx, client, args[0], "", gcsstore.Options{})
	ts.Check(err)
	rec, err := st.Put(ctx, scopeOf(args[1], args[2], args[3]), args[4], strings.NewReader(args[5]), artifacts.PutOptions{MIMEType: "text/plain"})
	if err != nil {
		var ae *artifacts.Error
		if errors.As(err, &ae) {
			ts.Fatalf("gcs-put-artifact: %s: %v", ae.Code, err)
		}
		ts.Fatalf("gcs-put-artifact: %v", err)
	}
	ts.Logf("put %s %q v%d", rec.Scope, rec.Name, rec.Version)
}

func cmdGCSBlackhole(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "gcs-blackhole")
	if len(args) != 0 {
		ts.Fatalf("usage: gcs-blackhole")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or answered
			mu.Unlock()
		}
	}()
	ts.Defer(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	ts.Setenv("STORAGE_EMULATOR_HOST", l.Addr().String())
}

func cmdGCSCheckFixture(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "gcs-check-fixture")
	if len(args) != 1 {
		ts.Fatalf("usage: gcs-check-fixture BUCKET")
	}
	exp, err := testfixtures.ExpectedGCS()
	ts.Check(err)
	checkFixture(ts, "gs://"+args[0], exp, 4, 34)
}

// checkFixture checks with agentstore's artifacts versions and artifacts
// list, exactly, every version of every name of a fixture against what
// the Erlang library decoded (its expected.tsv, exp, of wantNames names
// and wantVersions versions) in the store at store.
func checkFixture(ts *testscript.TestScript, store string, exp []testfixtures.Expected, wantNames, wantVersions int) {
	type key struct {
		scope artifacts.Scope
		name  string
	}
	byName := map[key][]testfixtures.Expected{}
	var keys []key
	for _, e := range exp {
		k := key{artifacts.Scope{Kind: artifacts.Kind(e.Kind), App: e.App, User: e.User, Session: e.Session}, e.Name}
		if byName[k] == nil {
			keys = append(keys, k)
		}
		byName[k] = append(byName[k], e)
	}
	if len(keys) != wantNames || len(exp) != wantVersions {
		ts.Fatalf("the fixture has %d names and %d versions, want %d and %d", len(keys), len(exp), wantNames, wantVersions)
	}
	scopes := map[artifacts.Scope][]string{}
	for _, k := range keys {
		es := byName[k]
		slices.SortFunc(es, func(a, b testfixtures.Expected) int { return int(a.Version - b.Version) })
		scopes[k.scope] = append(scopes[k.scope], k.name)

		ts.Check(ts.Exec("agentstore", append([]string{"artifacts", "versions", "--store", store, "--name", k.name, "--all", "-o", "json"}, scopeFlags(k.scope)...)...))
		var got versionsJSON
		dec := json.NewDecoder(strings.NewReader(ts.ReadFile("stdout")))
		dec.DisallowUnknownFields()
		ts.Check(dec.Decode(&got))
		if got.Name != k.name || fmt.Sprint(got.Scope) != fmt.Sprint(wantScopeJSON(k.scope)) || got.NextCursor != nil {
			ts.Fatalf("%s %q: header %q %v %v", k.scope, k.name, got.Name, got.Scope, got.NextCursor)
		}
		if len(got.Items) != len(es) {
			ts.Fatalf("%s %q: %d versions, want %d", k.scope, k.name, len(got.Items), len(es))
		}
		for i, it := range got.Items {
			e := es[i]
			keys := e.MetadataKeys
			if keys == nil {
				keys = []string{}
			}
			if it.Version != e.Version || it.Size != e.Size || it.Digest != e.Digest || it.MIMEType != e.MIMEType ||
				it.CreatedAtMS != e.CreatedAt || it.CreatedAt != artifactsTime(e.CreatedAt) ||
				it.MetadataKeys == nil || !slices.Equal(it.MetadataKeys, keys) || (it.State != "ok" && it.State != "corrupt") {
				ts.Fatalf("%s %q v%d: got %+v, want %+v", k.scope, k.name, e.Version, it, e)
			}
		}
	}
	for s, names := range scopes {
		ts.Check(ts.Exec("agentstore", append([]string{"artifacts", "list", "--store", store, "--all", "-o", "json"}, scopeFlags(s)...)...))
		var got listJSON
		dec := json.NewDecoder(strings.NewReader(ts.ReadFile("stdout")))
		dec.DisallowUnknownFields()
		ts.Check(dec.Decode(&got))
		slices.Sort(names)
		var gotNames []string
		for _, it := range got.Items {
			gotNames = append(gotNames, it.Name)
			es := byName[key{s, it.Name}]
			if len(es) == 0 {
				continue
			}
			l := es[len(es)-1]
			if it.LatestVersion != l.Version || it.Versions != len(es) || it.Size != l.Size ||
				it.MIMEType != l.MIMEType || it.CreatedAtMS != l.CreatedAt || it.CreatedAt != artifactsTime(l.CreatedAt) {
				ts.Fatalf("%s %q: got %+v, want latest %+v of %d", s, it.Name, it, l, len(es))
			}
		}
		if !slices.Equal(gotNames, names) || got.NextCursor != nil {
			ts.Fatalf("%s: names %q, want %q", s, gotNames, names)
		}
	}
	ts.Logf("%d names, %d versions in %d scopes as the Erlang library decoded them", len(keys), len(exp), len(scopes))
}
