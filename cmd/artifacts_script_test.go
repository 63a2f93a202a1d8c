package cmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// The testscript commands of the artifacts scripts
// (testdata/script/artifacts_*.txtar):
//
//	fixture-fs DIR                               copy the Erlang filesystem fixture to DIR
//	put-fs STORE APP USER SESSION NAME CONTENT   put a version through fsstore ('' for absent parts)
//	corrupt-meta STORE APP USER SESSION NAME V   overwrite v-V.meta with bytes that do not decode
//	namedir STORE APP USER SESSION NAME VAR      set $VAR to the name's directory
//	treehash DIR FILE                            write every path below DIR with its size and SHA-256 to FILE
//	jsonfield FILE KEY VAR                       set $VAR to the top-level string KEY of the JSON in FILE (or stdout)
//	fileenv FILE VAR                             set $VAR to the contents of FILE (or stdout)
//	replace FILE OLD NEW                         replace every OLD in FILE with NEW, failing when there is none
//	treediff BEFORE AFTER OUT                    write the lines of two treehash files that differ to OUT ("- " gone, "+ " new)
func init() {
	scriptCmds["fixture-fs"] = cmdFixtureFS
	scriptCmds["put-fs"] = cmdPutFS
	scriptCmds["corrupt-meta"] = cmdCorruptMeta
	scriptCmds["namedir"] = cmdNameDir
	scriptCmds["treehash"] = cmdTreeHash
	scriptCmds["jsonfield"] = cmdJSONField
	scriptCmds["fileenv"] = cmdFileEnv
	scriptCmds["replace"] = cmdReplace
	scriptCmds["treediff"] = cmdTreeDiff
}

func noNeg(ts *testscript.TestScript, neg bool, name string) {
	if neg {
		ts.Fatalf("%s does not support !", name)
	}
}

func cmdFixtureFS(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "fixture-fs")
	if len(args) != 1 {
		ts.Fatalf("usage: fixture-fs DIR")
	}
	_, err := testfixtures.CopyFSStore(ts.MkAbs(args[0]))
	ts.Check(err)
}

// scopeOf builds a scope from app, user and session, empty meaning absent.
func scopeOf(app, user, session string) artifacts.Scope {
	switch {
	case session != "":
		return artifacts.SessionScope(app, user, session)
	case user != "":
		return artifacts.UserScope(app, user)
	}
	return artifacts.AppScope(app)
}

func openScriptStore(ts *testscript.TestScript, dir string) *fsstore.Store {
	st, err := fsstore.Open(ts.MkAbs(dir), fsstore.Options{})
	ts.Check(err)
	return st
}

func cmdPutFS(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "put-fs")
	if len(args) != 6 {
		ts.Fatalf("usage: put-fs STORE APP USER SESSION NAME CONTENT")
	}
	st := openScriptStore(ts, args[0])
	rec, err := st.Put(context.Background(), scopeOf(args[1], args[2], args[3]), args[4], strings.NewReader(args[5]), artifacts.PutOptions{MIMEType: "text/plain"})
	ts.Check(err)
	ts.Logf("put %s %q v%d", rec.Scope, rec.Name, rec.Version)
}

func cmdCorruptMeta(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "corrupt-meta")
	if len(args) != 6 {
		ts.Fatalf("usage: corrupt-meta STORE APP USER SESSION NAME VERSION")
	}
	st := openScriptStore(ts, args[0])
	v, err := strconv.ParseInt(args[5], 10, 64)
	ts.Check(err)
	path := filepath.Join(st.NameDir(scopeOf(args[1], args[2], args[3]), args[4]), fsstore.VersionFile(v, "meta"))
	if _, err := os.Stat(path); err != nil {
		ts.Fatalf("corrupt-meta: %v", err)
	}
	ts.Check(os.WriteFile(path, []byte("this is not an erlang term\n"), 0o600))
}

func cmdNameDir(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "namedir")
	if len(args) != 6 {
		ts.Fatalf("usage: namedir STORE APP USER SESSION NAME VAR")
	}
	st := openScriptStore(ts, args[0])
	ts.Setenv(args[5], st.NameDir(scopeOf(args[1], args[2], args[3]), args[4]))
}

// treeListing lists every file and directory below root, sorted, one per
// line: the slash path, then "dir", or the size and SHA-256 of a file, or
// the target of a symbolic link.
func treeListing(root string) (string, error) {
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			lines = append(lines, rel+" -> "+t)
		case d.IsDir():
			lines = append(lines, rel+" dir")
		case !d.Type().IsRegular():
			lines = append(lines, rel+" "+d.Type().String()) // never read a FIFO
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			lines = append(lines, fmt.Sprintf("%s %d %s", rel, len(b), hex.EncodeToString(sum[:])))
		}
		return nil
	})
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n", err
}

func cmdTreeHash(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "treehash")
	if len(args) != 2 {
		ts.Fatalf("usage: treehash DIR FILE")
	}
	s, err := treeListing(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(s), 0o600))
}

func cmdTreeDiff(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "treediff")
	if len(args) != 3 {
		ts.Fatalf("usage: treediff BEFORE AFTER OUT")
	}
	before := strings.Split(strings.TrimSuffix(ts.ReadFile(args[0]), "\n"), "\n")
	after := strings.Split(strings.TrimSuffix(ts.ReadFile(args[1]), "\n"), "\n")
	var b strings.Builder
	for _, l := range before {
		if !slices.Contains(after, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range after {
		if !slices.Contains(before, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[2]), []byte(b.String()), 0o600))
}

func cmdJSONField(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "jsonfield")
	if len(args) != 3 {
		ts.Fatalf("usage: jsonfield FILE KEY VAR")
	}
	var m map[string]any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &m))
	s, ok := m[args[1]].(string)
	if !ok {
		ts.Fatalf("jsonfield: %s has no string %q", args[0], args[1])
	}
	ts.Setenv(args[2], s)
}

func cmdFileEnv(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "fileenv")
	if len(args) != 2 {
		ts.Fatalf("usage: fileenv FILE VAR")
	}
	ts.Setenv(args[1], ts.ReadFile(args[0]))
}

func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	noNeg(ts, neg, "replace")
	if len(args) != 3 {
		ts.Fatalf("usage: replace FILE OLD NEW")
	}
	s := ts.ReadFile(args[0])
	if !strings.Contains(s, args[1]) {
		ts.Fatalf("replace: %s does not contain %q", args[0], args[1])
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(strings.ReplaceAll(s, args[1], args[2])), 0o600))
}

// runInProcess runs the agentstore command line args in this process with
// captured standard streams (not terminals) and returns the exit status,
// stdout and stderr. The environment holds no AGENTSTORE_* setting and no
// config file.
func runInProcess(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	code := Run(context.Background(), cmdutil.NewFactory(ios), args)
	return code, out.String(), errOut.String()
}

// cleanEnv clears the settings a developer's environment could inject.
func cleanEnv(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	for _, k := range []string{"STORE", "SCRATCH", "CONFIG", "OUTPUT", "NO_COLOR", "TIMEOUT", "VERBOSE", "LOG_FORMAT"} {
		t.Setenv("AGENTSTORE_"+k, "")
	}
}

func scopeFlags(s artifacts.Scope) []string {
	args := []string{"--app", s.App}
	if s.Kind != artifacts.KindApp {
		args = append(args, "--user", s.User)
	}
	if s.Kind == artifacts.KindSession {
		args = append(args, "--session", s.Session)
	}
	return args
}

// jsonRun runs args with -o json in process, requires exit status 0 and an
// empty stderr, and decodes stdout into v.
func jsonRun(t *testing.T, v any, args ...string) {
	t.Helper()
	jsonRunWarned(t, v, "", args...)
}

// jsonRunWarned is jsonRun where stderr may hold a warning containing
// warning (none when warning is empty).
func jsonRunWarned(t *testing.T, v any, warning string, args ...string) {
	t.Helper()
	code, out, errOut := runInProcess(t, append(args, "-o", "json")...)
	if code != 0 || (errOut != "" && (warning == "" || !strings.Contains(errOut, warning))) {
		t.Fatalf("%q: exit %d, stderr %q", args, code, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, out)
	}
}

type listJSON struct {
	Store  string            `json:"store"`
	Layout string            `json:"layout"`
	Scope  map[string]string `json:"scope"`
	Items  []struct {
		Name          string `json:"name"`
		LatestVersion int64  `json:"latest_version"`
		Versions      int    `json:"versions"`
		Size          int64  `json:"size"`
		MIMEType      string `json:"mime_type"`
		CreatedAt     string `json:"created_at"`
		CreatedAtMS   int64  `json:"created_at_ms"`
	} `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

type versionsJSON struct {
	Store  string            `json:"store"`
	Layout string            `json:"layout"`
	Scope  map[string]string `json:"scope"`
	Name   string            `json:"name"`
	Items  []struct {
		Version      int64    `json:"version"`
		Size         int64    `json:"size"`
		Digest       string   `json:"digest"`
		MIMEType     string   `json:"mime_type"`
		CreatedAt    string   `json:"created_at"`
		CreatedAtMS  int64    `json:"created_at_ms"`
		MetadataKeys []string `json:"metadata_keys"`
		State        string   `json:"state"`
		Reason       string   `json:"reason"`
	} `json:"items"`
	NextCursor *int64 `json:"next_cursor"`
}

func wantScopeJSON(s artifacts.Scope) map[string]string {
	m := map[string]string{"kind": string(s.Kind), "app": s.App}
	if s.Kind != artifacts.KindApp {
		m["user"] = s.User
	}
	if s.Kind == artifacts.KindSession {
		m["session"] = s.Session
	}
	return m
}

// TestArtifactsListingMatchesFixture checks, through the whole command
// line, that the JSON listing of every scope of the Erlang fixture and the
// versions of every name are exactly what the Erlang library decoded
// (testfixtures.ExpectedFS): names, versions, sizes, digests, MIME types,
// created_at_ms and metadata keys.
func TestArtifactsListingMatchesFixture(t *testing.T) {
	cleanEnv(t)
	store, err := testfixtures.CopyFSStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := testfixtures.ExpectedFS()
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		scope artifacts.Scope
		name  string
	}
	byName := map[key][]testfixtures.Expected{}
	var scopes []artifacts.Scope
	for _, e := range exp {
		s := artifacts.Scope{Kind: artifacts.Kind(e.Kind), App: e.App, User: e.User, Session: e.Session}
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
		k := key{s, e.Name}
		byName[k] = append(byName[k], e)
	}
	if len(scopes) != 6 || len(exp) < 400 {
		t.Fatalf("fixture: %d scopes, %d versions", len(scopes), len(exp))
	}

	// The store-wide listing has one row per scope with exact totals.
	var all struct {
		Items []struct {
			Scope    map[string]string `json:"scope"`
			Names    int               `json:"names"`
			Versions int               `json:"versions"`
			Bytes    int64             `json:"bytes"`
			Problems int               `json:"problems"`
		} `json:"items"`
	}
	code, out, _ := runInProcess(t, "artifacts", "list", "--store", store, "-o", "json")
	if code != 0 {
		t.Fatalf("list: exit %d", code)
	}
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != len(scopes) {
		t.Fatalf("store listing has %d scopes, want %d", len(all.Items), len(scopes))
	}
	for _, s := range scopes {
		names, versions, bytes := 0, 0, int64(0)
		for k, es := range byName {
			if k.scope == s {
				names++
				versions += len(es)
				for _, e := range es {
					bytes += e.Size
				}
			}
		}
		found := false
		for _, it := range all.Items {
			if fmt.Sprint(it.Scope) == fmt.Sprint(wantScopeJSON(s)) {
				found = true
				if it.Names != names || it.Versions != versions || it.Bytes != bytes {
					t.Errorf("%s: names %d versions %d bytes %d, want %d %d %d", s, it.Names, it.Versions, it.Bytes, names, versions, bytes)
				}
			}
		}
		if !found {
			t.Errorf("store listing lacks %s", s)
		}
	}

	for _, s := range scopes {
		var got listJSON
		jsonRun(t, &got, append([]string{"artifacts", "list", "--store", store, "--all"}, scopeFlags(s)...)...)
		if fmt.Sprint(got.Scope) != fmt.Sprint(wantScopeJSON(s)) {
			t.Errorf("%s: scope %v", s, got.Scope)
		}
		if got.NextCursor != nil {
			t.Errorf("%s: --all left next_cursor %q", s, *got.NextCursor)
		}
		var want []string
		for k := range byName {
			if k.scope == s {
				want = append(want, k.name)
			}
		}
		slices.Sort(want)
		var gotNames []string
		for _, it := range got.Items {
			gotNames = append(gotNames, it.Name)
			es := byName[key{s, it.Name}]
			if len(es) == 0 {
				continue
			}
			l := es[0]
			for _, e := range es {
				if e.Version > l.Version {
					l = e
				}
			}
			if it.LatestVersion != l.Version || it.Versions != len(es) || it.Size != l.Size ||
				it.MIMEType != l.MIMEType || it.CreatedAtMS != l.CreatedAt ||
				it.CreatedAt != artifactsTime(l.CreatedAt) {
				t.Errorf("%s %q: got %+v, want latest %+v of %d", s, it.Name, it, l, len(es))
			}
		}
		if !slices.Equal(gotNames, want) {
			t.Errorf("%s: names %q, want %q", s, gotNames, want)
		}
	}

	for k, es := range byName {
		var got versionsJSON
		// The damaged versions of the fixture are listed, and warned about.
		jsonRunWarned(t, &got, "is broken", append([]string{"artifacts", "versions", "--store", store, "--all", "--name", k.name}, scopeFlags(k.scope)...)...)
		slices.SortFunc(es, func(a, b testfixtures.Expected) int { return int(a.Version - b.Version) })
		if got.Name != k.name || fmt.Sprint(got.Scope) != fmt.Sprint(wantScopeJSON(k.scope)) || got.NextCursor != nil {
			t.Errorf("%s %q: header %q %v %v", k.scope, k.name, got.Name, got.Scope, got.NextCursor)
		}
		if len(got.Items) != len(es) {
			t.Errorf("%s %q: %d versions, want %d", k.scope, k.name, len(got.Items), len(es))
			continue
		}
		for i, it := range got.Items {
			e := es[i]
			keys := e.MetadataKeys
			if keys == nil {
				keys = []string{}
			}
			if it.Version != e.Version || it.Size != e.Size || it.Digest != e.Digest || it.MIMEType != e.MIMEType ||
				it.CreatedAtMS != e.CreatedAt || it.CreatedAt != artifactsTime(e.CreatedAt) ||
				it.MetadataKeys == nil || !slices.Equal(it.MetadataKeys, keys) {
				t.Errorf("%s %q v%d: got %+v, want %+v", k.scope, k.name, e.Version, it, e)
			}
		}
	}
}

// artifactsTime is the created_at the contract promises for ms, computed
// independently of package output: RFC 3339, UTC, milliseconds.
func artifactsTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// TestArtifactsPaging pages with --limit 7 over the bulk scope (251 names)
// and over log.txt (150 versions), checks every name and version is
// visited exactly once, in order, and that --all gives the same set.
func TestArtifactsPaging(t *testing.T) {
	cleanEnv(t)
	store, err := testfixtures.CopyFSStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	bulk := scopeFlags(artifacts.SessionScope("demo-a", "bulk", "s-a"))

	var paged []string
	cursor, pages := "", 0
	for {
		args := append([]string{"artifacts", "list", "--store", store, "--limit", "7"}, bulk...)
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		var page listJSON
		jsonRun(t, &page, args...)
		pages++
		if len(page.Items) > 7 || (page.NextCursor != nil && len(page.Items) != 7) {
			t.Fatalf("page %d has %d items, next %v", pages, len(page.Items), page.NextCursor)
		}
		for _, it := range page.Items {
			paged = append(paged, it.Name)
		}
		if page.NextCursor == nil {
			break
		}
		if *page.NextCursor != page.Items[len(page.Items)-1].Name {
			t.Fatalf("next_cursor %q is not the page's last name", *page.NextCursor)
		}
		cursor = *page.NextCursor
		if pages > 100 {
			t.Fatal("paging does not end")
		}
	}
	want := []string{"log.txt"}
	for i := 1; i <= 250; i++ {
		want = append(want, fmt.Sprintf("n/%04d", i))
	}
	if !slices.Equal(paged, want) {
		t.Errorf("paged names (%d over %d pages) differ from the %d expected", len(paged), pages, len(want))
	}
	if pages != (len(want)+6)/7 {
		t.Errorf("%d pages, want %d", pages, (len(want)+6)/7)
	}
	var allPage listJSON
	jsonRun(t, &allPage, append([]string{"artifacts", "list", "--store", store, "--limit", "7", "--all"}, bulk...)...)
	var allNames []string
	for _, it := range allPage.Items {
		allNames = append(allNames, it.Name)
	}
	if !slices.Equal(allNames, paged) || allPage.NextCursor != nil {
		t.Errorf("--all gives %d names, paging %d", len(allNames), len(paged))
	}

	var versions []int64
	vcursor := ""
	pages = 0
	for {
		args := append([]string{"artifacts", "versions", "--store", store, "--name", "log.txt", "--limit", "7"}, bulk...)
		if vcursor != "" {
			args = append(args, "--cursor", vcursor)
		}
		var page versionsJSON
		jsonRun(t, &page, args...)
		pages++
		for _, it := range page.Items {
			versions = append(versions, it.Version)
		}
		if page.NextCursor == nil {
			break
		}
		vcursor = strconv.FormatInt(*page.NextCursor, 10)
		if pages > 100 {
			t.Fatal("paging does not end")
		}
	}
	var wantV []int64
	for v := int64(1); v <= 150; v++ {
		wantV = append(wantV, v)
	}
	if !slices.Equal(versions, wantV) || pages != 22 {
		t.Errorf("paged versions: %d over %d pages", len(versions), pages)
	}
	var allV versionsJSON
	jsonRun(t, &allV, append([]string{"artifacts", "versions", "--store", store, "--name", "log.txt", "--limit", "7", "--all"}, bulk...)...)
	var gotAll []int64
	for _, it := range allV.Items {
		gotAll = append(gotAll, it.Version)
	}
	if !slices.Equal(gotAll, versions) || allV.NextCursor != nil {
		t.Errorf("--all gives %d versions, paging %d", len(gotAll), len(versions))
	}
}

// TestArtifactsNeverPrintSecrets checks that no output mode of list,
// versions or a delete plan carries payload bytes or custom metadata
// values of the fixture's summary (whose metadata holds known strings).
func TestArtifactsNeverPrintSecrets(t *testing.T) {
	cleanEnv(t)
	store, err := testfixtures.CopyFSStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := fsstore.Open(store, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	scope := artifacts.SessionScope("demo-a", "secret", "s")
	const payload, value = "PAYLOAD-BYTES-xyzzy", "METADATA-VALUE-plugh"
	if _, err := st.Put(context.Background(), scope, "secret.txt", strings.NewReader(payload),
		artifacts.PutOptions{MIMEType: "text/plain", Metadata: artifacts.Metadata{"token": value, "nested": map[string]any{"deep": value}}}); err != nil {
		t.Fatal(err)
	}
	base := append([]string{"--store", store}, scopeFlags(scope)...)
	for _, args := range [][]string{
		{"artifacts", "list"},
		append([]string{"artifacts", "list"}, base...),
		append([]string{"artifacts", "versions", "--name", "secret.txt"}, base...),
		append([]string{"artifacts", "delete", "--name", "secret.txt", "--latest"}, base...),
	} {
		if args[1] == "list" && len(args) == 2 {
			args = append(args, "--store", store)
		}
		for _, o := range []string{"json", "table"} {
			_, out, errOut := runInProcess(t, append(args, "-o", o)...)
			for _, s := range []string{payload, value} {
				if strings.Contains(out+errOut, s) {
					t.Errorf("%q -o %s printed %q", args, o, s)
				}
			}
			if args[1] == "versions" && !strings.Contains(out, "token") {
				t.Errorf("%q -o %s lacks the metadata key: %s", args, o, out)
			}
		}
	}
}

// TestArtifactsDeleteStaleInProcess makes a plan, adds a version with the
// library, and checks the old plan is refused as stale by id and by JSON
// with nothing deleted; then the fresh plan deletes exactly its versions.
func TestArtifactsDeleteStaleInProcess(t *testing.T) {
	cleanEnv(t)
	store, err := testfixtures.CopyFSStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	scope := artifacts.AppScope("demo-a")
	args := append([]string{"artifacts", "delete", "--store", store, "--name", "config/settings.json", "--all-versions", "-o", "json"}, scopeFlags(scope)...)
	code, plan, errOut := runInProcess(t, args...)
	if code != cmdutil.ExitConfirmation || !strings.Contains(errOut, `"confirmation_required"`) {
		t.Fatalf("plan: exit %d, stderr %s", code, errOut)
	}
	var p struct {
		PlanID   string `json:"plan_id"`
		Versions []struct {
			Version int64 `json:"version"`
		} `json:"versions"`
	}
	if err := json.Unmarshal([]byte(plan), &p); err != nil || len(p.Versions) != 2 {
		t.Fatalf("plan %s: %v", plan, err)
	}
	before, err := treeListing(store)
	if err != nil {
		t.Fatal(err)
	}
	st, err := fsstore.Open(store, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(context.Background(), scope, "config/settings.json", bytes.NewReader([]byte("{}")), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	afterPut, _ := treeListing(store)
	for _, conf := range []string{p.PlanID, plan} {
		code, _, errOut := runInProcess(t, append(args, "--confirm", conf)...)
		if code != cmdutil.ExitConfirmation || !strings.Contains(errOut, `"stale_confirmation"`) {
			t.Errorf("stale confirm: exit %d, stderr %s", code, errOut)
		}
		if now, _ := treeListing(store); now != afterPut {
			t.Errorf("a stale confirmation changed the store")
		}
	}
	if before == afterPut {
		t.Fatal("the put changed nothing")
	}
	_, plan2, _ := runInProcess(t, args...)
	code, out, errOut := runInProcess(t, append(args, "--confirm", plan2)...)
	if code != 0 || errOut != "" {
		t.Fatalf("confirm: exit %d, stderr %s", code, errOut)
	}
	var res struct {
		Deleted []struct {
			Version int64  `json:"version"`
			Digest  string `json:"digest"`
		} `json:"deleted"`
		PlanID string `json:"plan_id"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Deleted) != 3 {
		t.Fatalf("result %s: %v", out, err)
	}
	if _, err := st.Stat(context.Background(), scope, "config/settings.json", artifacts.Latest); !artifacts.IsNotFound(err) {
		t.Errorf("after delete, stat: %v", err)
	}
}
