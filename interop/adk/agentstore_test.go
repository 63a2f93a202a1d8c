//go:build interop

package adk_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	artifactscmd "github.com/agentstore/agentstore/cmd/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// The agentstore side of the interop tests: what they ask of the binary
// about a scope of an ADK store, through its JSON output.

// scope is a scope as agentstore's flags select it; Session is empty for
// the user scope (ADK's "user:" names).
type scope struct {
	App, User, Session string
}

func (s scope) flags() []string {
	f := []string{"--app", s.App, "--user", s.User}
	if s.Session != "" {
		f = append(f, "--session", s.Session)
	}
	return f
}

func (s scope) user() scope { return scope{App: s.App, User: s.User} }

// storeArgs are the arguments that name the store of a test.
type storeArgs []string

// names returns the names agentstore lists in sc, in its order; none
// when agentstore says the scope holds no artifacts (not_found).
func (a *agentstore) names(st storeArgs, sc scope) []string {
	a.t.Helper()
	args := slices.Concat([]string{"artifacts", "list"}, st, sc.flags(), []string{"--all", "-o", "json"})
	r := a.run(args...)
	if r.code == 1 && strings.HasPrefix(r.stderr, `{"error":{"code":"not_found",`) && r.stdout == "" {
		return nil
	}
	if r.code != 0 || r.stderr != "" {
		a.t.Fatalf("want exit 0 and no stderr, got %s", r)
	}
	var out artifactscmd.ListResult
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		a.t.Fatalf("decoding the output: %v\n%s", err, r)
	}
	if out.NextCursor != nil {
		a.t.Fatalf("artifacts list --all of %v has a next cursor %q", sc, *out.NextCursor)
	}
	var names []string
	for _, it := range out.Items {
		names = append(names, it.Name)
	}
	return names
}

// versions returns what agentstore lists for name in sc, oldest first.
func (a *agentstore) versions(st storeArgs, sc scope, name string) []artifactscmd.VersionItem {
	a.t.Helper()
	var out artifactscmd.VersionsResult
	a.json(&out, slices.Concat([]string{"artifacts", "versions"}, st, sc.flags(), []string{"--name", name, "--all"})...)
	if out.Name != name || out.NextCursor != nil {
		a.t.Fatalf("artifacts versions of %v %q: name %q, next cursor %v", sc, name, out.Name, out.NextCursor)
	}
	return out.Items
}

// payload returns the payload of version v of name in sc, as agentstore
// reads it (artifacts get -O -).
func (a *agentstore) payload(st storeArgs, sc scope, name string, v int64) []byte {
	a.t.Helper()
	r := a.want(0, slices.Concat([]string{"artifacts", "get"}, st, sc.flags(), []string{"--name", name, "--version", strconv.FormatInt(v, 10), "-O", "-"})...)
	return []byte(r.stdout)
}

// plan is the part of a delete plan the tests read.
type plan struct {
	Action   string `json:"action"`
	Selector string `json:"selector"`
	Versions []struct {
		Version int64  `json:"version"`
		Size    int64  `json:"size"`
		Token   string `json:"token"`
	} `json:"versions"`
	ReusedNumber *int64 `json:"reused_number"`
	PlanID       string `json:"plan_id"`
}

// deletePlan asks for the plan of deleting version v of name in sc and
// checks that asking changed nothing in the store (objects lists its
// objects or files).
func (a *agentstore) deletePlan(st storeArgs, sc scope, name string, v int64, objects func() []string) plan {
	a.t.Helper()
	before := objects()
	args := slices.Concat([]string{"artifacts", "delete"}, st, sc.flags(), []string{"--name", name, "--version", strconv.FormatInt(v, 10), "-o", "json"})
	r := a.want(4, args...)
	var p plan
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		a.t.Fatalf("the plan: %v\n%s", err, r)
	}
	if p.Action != "delete" || len(p.Versions) != 1 || p.Versions[0].Version != v || len(p.PlanID) != 64 {
		a.t.Fatalf("plan %+v for v%d of %q\n%s", p, v, name, r)
	}
	if !strings.Contains(r.stderr, `"code":"confirmation_required"`) || !strings.Contains(r.stderr, "--confirm "+p.PlanID) {
		a.t.Errorf("the plan's stderr does not say how to confirm it: %s", r)
	}
	if after := objects(); !slices.Equal(before, after) {
		a.t.Fatalf("asking for a plan changed the store:\nbefore %q\nafter  %q", before, after)
	}
	return p
}

// confirmDelete runs the delete of version v of name in sc confirmed by
// p, with extra flags, wanting exit code.
func (a *agentstore) confirmDelete(st storeArgs, sc scope, name string, v int64, p plan, code int, extra ...string) result {
	a.t.Helper()
	return a.want(code, slices.Concat([]string{"artifacts", "delete"}, st, sc.flags(),
		[]string{"--name", name, "--version", strconv.FormatInt(v, 10), "--confirm", p.PlanID, "-o", "json"}, extra)...)
}

// verify runs fs verify on the store and wants it clean.
func (a *agentstore) verify(st storeArgs) {
	a.t.Helper()
	r := a.want(0, slices.Concat([]string{"fs", "verify"}, st, []string{"-o", "json"})...)
	if !json.Valid([]byte(r.stdout)) {
		a.t.Fatalf("fs verify: output is not JSON: %s", r)
	}
}

// workspaceTree writes files into the workspace directory of sc under
// scratch and returns them.
func workspaceTree(t *testing.T, scratch string, sc scope, files map[string]string) {
	t.Helper()
	dir := filepath.Join(scratch, workspace.DirName(sc.App, sc.User, sc.Session))
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// idleWorkspace writes files as sc's workspace below scratch, with an
// index and times that make it idle since 2020.
func idleWorkspace(t *testing.T, scratch string, sc scope, files map[string]string) {
	t.Helper()
	workspaceTree(t, scratch, sc, files)
	dir := filepath.Join(scratch, workspace.DirName(sc.App, sc.User, sc.Session))
	ix, err := json.Marshal(workspace.Index{Format: workspace.IndexFormat, App: sc.App, User: sc.User, Session: sc.Session, Created: idleSince, LastAccess: idleSince})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".agentstore-index"), ix, 0o600); err != nil {
		t.Fatal(err)
	}
	var paths []string
	if err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		paths = append(paths, p)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range slices.Backward(paths) { // entries before their directories
		if err := os.Chtimes(p, idleSince, idleSince); err != nil {
			t.Fatal(err)
		}
	}
}

var idleSince = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// sweepOne runs ws sweep --idle 24h over scratch, which holds one idle
// workspace, and returns the version its snapshot was published as.
func sweepOne(t *testing.T, a *agentstore, st storeArgs, scratch string) int64 {
	t.Helper()
	var out struct {
		Items []struct {
			Decision        string `json:"decision"`
			Reason          string `json:"reason"`
			SnapshotVersion *int64 `json:"snapshot_version"`
		} `json:"items"`
	}
	a.json(&out, slices.Concat([]string{"ws", "sweep"}, st, []string{"--scratch", scratch, "--idle", "24h"})...)
	if len(out.Items) != 1 || out.Items[0].Decision != "removed" || out.Items[0].SnapshotVersion == nil {
		t.Fatalf("ws sweep: %+v, want one workspace removed after its snapshot", out.Items)
	}
	return *out.Items[0].SnapshotVersion
}

// snapshotOut is the part of ws snapshot's output the tests read.
type snapshotOut struct {
	Version   int64  `json:"version"`
	Files     int    `json:"files"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Unchanged bool   `json:"unchanged"`
}

// snapshot runs ws snapshot of sc from scratch into the store.
func (a *agentstore) snapshot(st storeArgs, scratch string, sc scope) snapshotOut {
	a.t.Helper()
	var out snapshotOut
	a.json(&out, slices.Concat([]string{"ws", "snapshot"}, st, []string{"--scratch", scratch}, sc.flags())...)
	if out.Unchanged {
		a.t.Fatalf("ws snapshot of %v wrote nothing (unchanged)", sc)
	}
	return out
}

// zipFiles returns the regular files of a zip archive and their contents.
func zipFiles(t *testing.T, b []byte) map[string]string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a zip archive: %v", err)
	}
	files := map[string]string{}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		c, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = string(c)
	}
	return files
}

// makeZip returns a zip archive of files.
func makeZip(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, files[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// treeFiles returns the regular files under dir and their contents, but
// the workspace manager's index record.
func treeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == ".agentstore-index" {
			return nil
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// checkLoadedSnapshot checks that load, an ADK library's answer to loading
// workspace.zip, is the archive snap wrote for the workspace files of sc:
// its MIME type, size, digest (where the layout gives one), the bytes
// agentstore reads back, and the files inside.
func checkLoadedSnapshot(t *testing.T, a *agentstore, st storeArgs, sc scope, snap snapshotOut, load adkResult, files map[string]string) {
	t.Helper()
	if load.MIME != "application/zip" || int64(len(load.Data)) != snap.Size {
		t.Fatalf("the library loads %d bytes (%s), the snapshot wrote %d", len(load.Data), load.MIME, snap.Size)
	}
	if snap.Digest != "" && sha256hex(load.Data) != snap.Digest {
		t.Fatalf("the library loads sha256 %s, the snapshot wrote %s", sha256hex(load.Data), snap.Digest)
	}
	if ours := a.payload(st, sc, "workspace.zip", snap.Version); !bytes.Equal(ours, load.Data) {
		t.Fatalf("agentstore reads %d bytes of workspace.zip v%d, the library %d", len(ours), snap.Version, len(load.Data))
	}
	if got := zipFiles(t, load.Data); !maps.Equal(got, files) {
		t.Errorf("the archive the library loads holds %q, want %q", got, files)
	}
}
