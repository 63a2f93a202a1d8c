package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
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
	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/rogpeppe/go-internal/testscript"
	"google.golang.org/api/option"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// The testscript commands of the Cloud Storage scripts
// (testdata/script/gcs_*.txtar), run against fake-gcs-server served by
// this test binary (the program fake-gcs-server, see fakeGCSServerMain):
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
	scriptPrograms["fake-gcs-server"] = fakeGCSServerMain
	scriptSetups = append(scriptSetups, func(env *testscript.Env) error {
		// A developer's emulator must not leak into the scripts.
		env.Setenv("STORAGE_EMULATOR_HOST", "")
		return nil
	})
}

// fakeGCSServerMain is the program fake-gcs-server of the scripts: this
// test binary serving fake-gcs-server's handler (the fakestorage package,
// at the version go.mod requires) over HTTP on a free loopback port, as the
// emulator's own binary does, so that no test builds that binary. Its
// flags:
//
//	-data DIR              preload: every top-level directory of DIR is a bucket,
//	                       every file below it an object named by its slash path
//	-filesystem-root DIR   keep the objects as files below DIR (default: in memory)
//
// It writes the address it serves on (127.0.0.1:PORT) as its first line of
// stdout, then serves until it is killed.
func fakeGCSServerMain() {
	fl := flag.NewFlagSet("fake-gcs-server", flag.ContinueOnError)
	data := fl.String("data", "", "preload the buckets and objects below `DIR`")
	root := fl.String("filesystem-root", "", "keep the objects as files below `DIR` (default: in memory)")
	if err := fl.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fl.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "fake-gcs-server: unexpected arguments %q\n", fl.Args())
		os.Exit(2)
	}
	if err := serveFakeGCS(*data, *root); err != nil {
		fmt.Fprintf(os.Stderr, "fake-gcs-server: %v\n", err)
		os.Exit(1)
	}
}

// serveFakeGCS listens on a free loopback port, reports it on stdout and
// serves the emulator there; it returns only on failure.
func serveFakeGCS(data, root string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	host := l.Addr().String()
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme:      "http",
		Host:        "127.0.0.1",
		Seed:        data,
		StorageRoot: root,
		PublicHost:  host,
		ExternalURL: "http://" + host,
		NoListener:  true,
	})
	if err != nil {
		return err
	}
	if _, err := fmt.Println(host); err != nil {
		return err
	}
	return http.Serve(l, srv.HTTPHandler())
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
	bucket := args[1]

	// Every top-level directory of -data is a bucket, every file below it
	// an object named by its slash path, its bytes as they are.
	data := ts.MkAbs("gcsdata")
	ts.Check(os.MkdirAll(filepath.Join(data, bucket), 0o700))
	var objects []testfixtures.GCSObject
	if len(args) == 3 {
		var err error
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

	e, err := startEmulator(ts, data)
	if err != nil {
		ts.Fatalf("gcs-emulator: %v", err)
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

// startEmulator starts fake-gcs-server (this test binary, see
// fakeGCSServerMain) preloaded from data, with the backend
// emulatorBackend names, and returns once it serves: when it has
// reported its address. The emulator picks its own port, so no other
// process can take it first.
func startEmulator(ts *testscript.TestScript, data string) (*gcsEmulator, error) {
	logPath := ts.MkAbs("gcs-emulator.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := []string{"-data", data}
	if root := emulatorBackend(ts); root != "" {
		args = append(args, "-filesystem-root", root)
	}
	c := exec.Command("fake-gcs-server", args...)
	c.Stderr = logf
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	e := &gcsEmulator{cmd: c, done: make(chan struct{})}
	// The first line is the address; it is read before Wait can close the
	// pipe, and the rest (nothing, normally) is drained so the emulator
	// never blocks on a full pipe.
	line, readErr := bufio.NewReader(out).ReadString('\n')
	go func() {
		io.Copy(io.Discard, out)
		c.Wait()
		close(e.done)
	}()
	e.host = strings.TrimSpace(line)
	if readErr != nil || e.host == "" {
		e.kill()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("fake-gcs-server exited (%v) before it served: %s", c.ProcessState, log)
	}
	return e, nil
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
