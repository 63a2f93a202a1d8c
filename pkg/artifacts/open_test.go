package artifacts_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/shardedfs"
)

func fileMux() *artifacts.URLMux {
	m := &artifacts.URLMux{}
	m.RegisterScheme(artifacts.SchemeFile, artifacts.InspectDir)
	m.RegisterLayout(fsstore.NewLayout(fsstore.Options{}))
	m.RegisterLayout(shardedfs.NewLayout(shardedfs.Options{}))
	return m
}

func TestURLMuxOpen(t *testing.T) {
	dir := t.TempDir()
	mk := func(parts ...string) string {
		p := filepath.Join(append([]string{dir}, parts...)...)
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("fs", "v1", "scopes")
	mk("sharded", "scope-shards")
	mk("both", "v1")
	mk("both", "scope-shards")
	mk("empty")
	mk("other", "x")
	mk("gcscopy", "v1", "s", "ab")
	mk("fresh", "v1")
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "file"), filepath.Join(dir, "filelink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "fs"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path   string
		opts   artifacts.OpenOptions
		layout string
		code   artifacts.Code
		msg    string
	}{
		{path: "fs", layout: "erlang-fs"},
		{path: "sharded", layout: "erlang-fs-sharded"},
		{path: "both", code: artifacts.CodeUnknownLayout, msg: "holds stores of 2 layouts at once (erlang-fs, erlang-fs-sharded): give --layout"},
		{path: "both", opts: artifacts.OpenOptions{Layout: "erlang-fs-sharded"}, layout: "erlang-fs-sharded"},
		{path: "empty", code: artifacts.CodeUnknownLayout, msg: "is an empty directory"},
		{path: "empty", opts: artifacts.OpenOptions{Layout: "erlang-fs"}, layout: "erlang-fs"},
		{path: "empty", opts: artifacts.OpenOptions{Create: true}, layout: "erlang-fs"},
		{path: "other", code: artifacts.CodeUnknownLayout, msg: "found a directory holding x/"},
		{path: "other", opts: artifacts.OpenOptions{Create: true}, code: artifacts.CodeUnknownLayout},
		{path: "file", code: artifacts.CodeUnknownLayout, msg: "found a regular file, not a directory"},
		{path: "fresh", layout: "erlang-fs"},
		{path: "gcscopy", code: artifacts.CodeUnknownLayout, msg: "found a directory holding v1/; " + filepath.Join(dir, "gcscopy", "v1") + " holds s/, the object names of Erlang ADK's Cloud Storage adapter (layout erlang-gcs)"},
		{path: "gcscopy", opts: artifacts.OpenOptions{Create: true}, code: artifacts.CodeUnknownLayout, msg: "holds s/"},
		{path: "gcscopy", opts: artifacts.OpenOptions{Layout: "erlang-fs"}, code: artifacts.CodeUnknownLayout, msg: "is not a store of layout erlang-fs"},
		{path: "gcscopy/v1", code: artifacts.CodeUnknownLayout, msg: "v1 holds s/"},
		{path: "link", code: artifacts.CodeUnsafeStore, msg: "is a symbolic link, not a directory: stores are opened only at a real directory; use --store " + filepath.Join(dir, "fs") + ", the directory it points to"},
		{path: "dangling", code: artifacts.CodeUnsafeStore, msg: "is a symbolic link, not a directory, and it leads nowhere readable"},
		{path: "filelink", code: artifacts.CodeUnsafeStore, msg: "it points to " + filepath.Join(dir, "file") + ", which is not a directory"},
		{path: "missing", code: artifacts.CodeNotFound, msg: "nothing is there"},
		{path: "fs/v1", code: artifacts.CodeUnknownLayout, msg: "use --store " + filepath.Join(dir, "fs") + ", the directory that holds v1/"},
		{path: "fs/v1/new", opts: artifacts.OpenOptions{Create: true}, code: artifacts.CodeUnknownLayout, msg: "does not exist and is no place for a new store"},
		{path: "sharded/scope-shards", code: artifacts.CodeUnknownLayout, msg: "use --store " + filepath.Join(dir, "sharded") + ", the directory that holds scope-shards/"},
		{path: "fs", opts: artifacts.OpenOptions{Layout: "nope"}, code: artifacts.CodeInvalidArgument, msg: `unknown layout "nope"`},
		{path: "fs?first_version=1", code: artifacts.CodeInvalidArgument, msg: "?first_version=1 does not apply to layout erlang-fs"},
		{path: "sharded?first_version=0", code: artifacts.CodeInvalidArgument, msg: "?first_version=0 does not apply to layout erlang-fs-sharded"},
		{path: "empty?first_version=1", opts: artifacts.OpenOptions{Create: true}, code: artifacts.CodeInvalidArgument, msg: "does not apply to layout erlang-fs"},
	}
	m := fileMux()
	for _, tt := range tests {
		t.Run(tt.path+"/"+tt.opts.Layout, func(t *testing.T) {
			uri := filepath.Join(dir, tt.path)
			if strings.Contains(tt.path, "?") {
				uri = "file://" + uri
			}
			o, err := m.Open(context.Background(), uri, tt.opts)
			if tt.layout != "" {
				if err != nil || o.Layout != tt.layout || o.Store.Capabilities().Layout != tt.layout {
					t.Fatalf("Open: %+v, %v; want layout %s", o, err, tt.layout)
				}
				return
			}
			if artifacts.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Open: %v; want code %s with %q", err, tt.code, tt.msg)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("a read created a store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fs", "v1", "new")); !os.IsNotExist(err) {
		t.Errorf("a store was made inside a store: %v", err)
	}
	if _, err := m.Open(context.Background(), "gs://bucket-x/p", artifacts.OpenOptions{}); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Errorf("an unregistered scheme: %v", err)
	}
}

func TestURLMuxRegistration(t *testing.T) {
	m := fileMux()
	if got := strings.Join(m.LayoutNames(), ","); got != "erlang-fs,erlang-fs-sharded" {
		t.Errorf("LayoutNames = %s", got)
	}
	for _, in := range m.Layouts() {
		if in.Scheme != artifacts.SchemeFile || in.Marker == "" || len(in.Facts) == 0 {
			t.Errorf("layout %+v lacks facts", in)
		}
	}
	for name, f := range map[string]func(){
		"layout": func() { m.RegisterLayout(fsstore.NewLayout(fsstore.Options{})) },
		"scheme": func() { m.RegisterScheme(artifacts.SchemeFile, artifacts.InspectDir) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("registering a %s twice did not panic", name)
				}
			}()
			f()
		}()
	}
}

// TestListingAfter checks when a listing's first page answers whether an
// object name with a prefix exists.
func TestListingAfter(t *testing.T) {
	tests := []struct {
		name   string
		lst    artifacts.Listing
		prefix string
		want   bool
	}{
		{"complete", artifacts.Listing{Names: []string{"a"}, Complete: true}, "adk-artifacts/", true},
		{"complete and empty", artifacts.Listing{Complete: true}, "x/", true},
		{"empty, cut short", artifacts.Listing{}, "x/", false},
		{"last sorts after the prefix's names", artifacts.Listing{Names: []string{"a/1", "b/1"}}, "adk-artifacts/", true},
		{"last is the first name after them", artifacts.Listing{Names: []string{"adk-artifacts0"}}, "adk-artifacts/", true},
		{"last is one of them", artifacts.Listing{Names: []string{"adk-artifacts/v1/s/x"}}, "adk-artifacts/", false},
		{"last sorts before them", artifacts.Listing{Names: []string{"a/1", "abc/2"}}, "adk-artifacts/", false},
		{"last is the prefix's parent", artifacts.Listing{Names: []string{"adk-artifacts"}}, "adk-artifacts/", false},
		{"no prefix", artifacts.Listing{Names: []string{"z"}}, "", false},
		{"prefix ending in 0xff", artifacts.Listing{Names: []string{"b"}}, "a\xff", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.lst.After(tt.prefix); got != tt.want {
				t.Errorf("After(%q) of %q = %v, want %v", tt.prefix, tt.lst.Names, got, tt.want)
			}
		})
	}
}

// pages is a PageReader over names, in pages whose token is the index of
// their first name; a read of the page at failAt fails with err. It
// counts the reads and records the size each asked for.
type pages struct {
	names  []string
	failAt int
	err    error
	asked  []int
}

func (p *pages) read(_ context.Context, token string, n int) ([]string, string, error) {
	p.asked = append(p.asked, n)
	i := 0
	if token != "" {
		var err error
		if i, err = strconv.Atoi(token); err != nil {
			return nil, "", err
		}
	}
	if p.err != nil && i == p.failAt {
		return nil, "", p.err
	}
	end := min(i+n, len(p.names))
	next := ""
	if end < len(p.names) {
		next = strconv.Itoa(end)
	}
	return p.names[i:end], next, nil
}

// TestListingExtend checks that a listing reads its first page, reads
// further pages only up to the names asked for, stops when complete, and
// is unchanged by a page that fails.
func TestListingExtend(t *testing.T) {
	names := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("o-%04d", i))
		}
		return out
	}
	denied := artifacts.Errorf(artifacts.CodePermission, "open", nil, "bucket %q is not readable", "b")
	tests := []struct {
		name     string
		objects  int
		first    int   // NewListing's page
		extend   []int // Extend calls, in order
		failAt   int   // the page (index of its first name) that fails, when fail
		fail     bool
		want     int // names held at the end
		complete bool
		asked    []int
		code     artifacts.Code // of the first error
	}{
		{name: "empty", first: 100, complete: true, asked: []int{100}},
		{name: "first page is all", objects: 40, first: 100, extend: []int{1000}, want: 40, complete: true, asked: []int{100}},
		{name: "exactly one page", objects: 100, first: 100, extend: []int{1000}, want: 100, complete: true, asked: []int{100}},
		{name: "first page decides", objects: 5000, first: 100, want: 100, asked: []int{100}},
		{name: "extended once, to 1,000", objects: 5000, first: 100, extend: []int{1000}, want: 1000, asked: []int{100, 900}},
		{name: "extending to what it holds reads nothing", objects: 5000, first: 100, extend: []int{100, 50}, want: 100, asked: []int{100}},
		{name: "extended twice", objects: 5000, first: 100, extend: []int{300, 1000}, want: 1000, asked: []int{100, 200, 700}},
		{name: "extended past the end", objects: 250, first: 100, extend: []int{1000}, want: 250, complete: true, asked: []int{100, 900}},
		{name: "first page fails", objects: 250, first: 100, fail: true, failAt: 0, asked: []int{100}, code: artifacts.CodePermission},
		{name: "second page fails", objects: 250, first: 100, extend: []int{1000}, fail: true, failAt: 100, want: 100, asked: []int{100, 900}, code: artifacts.CodePermission},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pages{names: names(tt.objects), failAt: tt.failAt}
			if tt.fail {
				p.err = denied
			}
			lst, err := artifacts.NewListing(t.Context(), p.read, tt.first)
			for _, n := range tt.extend {
				if err != nil {
					break
				}
				err = lst.Extend(t.Context(), n)
			}
			if artifacts.CodeOf(err) != tt.code || (tt.code == "" && err != nil) {
				t.Fatalf("error %v (%s), want %q", err, artifacts.CodeOf(err), tt.code)
			}
			if !slices.Equal(p.asked, tt.asked) {
				t.Errorf("pages asked for %v names, want %v", p.asked, tt.asked)
			}
			if lst == nil {
				return
			}
			if !slices.Equal(lst.Names, names(tt.objects)[:tt.want]) || lst.Complete != tt.complete {
				t.Errorf("holds %d names (complete %v), want the first %d (complete %v)", len(lst.Names), lst.Complete, tt.want, tt.complete)
			}
		})
	}
}

// TestListingLiteralExtend checks that a Listing literal, which has no
// reader, extends only as far as it holds names.
func TestListingLiteralExtend(t *testing.T) {
	lst := &artifacts.Listing{Names: []string{"a", "b"}}
	if err := lst.Extend(t.Context(), 2); err != nil {
		t.Fatalf("Extend to what it holds: %v", err)
	}
	if err := lst.Extend(t.Context(), 3); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Fatalf("Extend past what it holds: %v, want %s", err, artifacts.CodeInvalidArgument)
	}
	done := &artifacts.Listing{Names: []string{"a"}, Complete: true}
	if err := done.Extend(t.Context(), 1000); err != nil {
		t.Fatalf("Extend of a complete literal: %v", err)
	}
}
