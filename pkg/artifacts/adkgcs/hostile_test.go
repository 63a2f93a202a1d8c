package adkgcs_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// TestHostileObjects fills a bucket with the names ADK libraries accept
// and other writers leave (., .., empty segments, 1,024-byte segments, a
// session named "user", user ids with "/", a name that is a prefix of
// another, both user-scope forms of one name, objects outside the store's
// prefix) and checks that nothing is guessed at: every object that is not
// exactly a version is reported foreign by name, a name that is a prefix
// of another keeps its own versions, and nothing outside the prefix is
// read.
func TestHostileObjects(t *testing.T) {
	srv := newEmulator(t)
	const root = "p/"
	long := strings.Repeat("n", 1000)
	versions := map[string]string{ // object -> what it is
		"a/u/s/docs/0":                             "session a/u/s docs v0",
		"a/u/s/docs/readme.txt/0":                  "session a/u/s docs/readme.txt v0",
		"a/u/s/docs/readme.txt/1":                  "session a/u/s docs/readme.txt v1",
		"a/u/s/" + long + "/3":                     "session a/u/s long v3",
		"a/u/user/x.json/0":                        "user a/u user:x.json v0 (JS form)",
		"a/u/user/user:k.json/2":                   "user a/u user:k.json v2 (kept form)",
		"a/u/user/user:both/0":                     "user a/u user:both v0 (kept form)",
		"a/u/v/s/x/0":                              "session a/u/v s/x v0 (a user id with / cannot be told apart)",
		"a/" + strings.Repeat("u", 256) + "/s/y/0": "a 256-byte user id",
	}
	foreign := []string{
		"a/u/s/docs/readme.txt",        // non-numeric tail
		"a/u/s//0",                     // empty filename
		"a/u/s/../1",                   // ..
		"a/u/s/./1",                    // .
		"a/u/s/a//b/0",                 // empty segment inside the name
		"a/u/s/x/007",                  // leading zero
		"a/u/s/x/-1",                   // sign
		"a/u/s/x/99999999999999999999", // past int64
		"a/u/0",                        // too few segments
		"a//s/x/0",                     // empty user id
		"a/" + strings.Repeat("u", 257) + "/s/y/0", // user id past 256 bytes
		"a/u/s/user:z/0",   // user: name in a session
		"a/u/user/both/1",  // the JS form of a name that has the kept form
		"a/u/user/user:/0", // nothing after user:
	}
	for name := range versions {
		putObject(srv, root+name, []byte(name), "text/plain", nil)
	}
	for _, name := range foreign {
		putObject(srv, root+name, []byte(name), "text/plain", nil)
	}
	// Outside the store's prefix: never read.
	putObject(srv, "q/a/u/s/outside/0", []byte("x"), "text/plain", nil)
	putObject(srv, "p", []byte("x"), "text/plain", nil)
	before := objectNames(t, srv)

	st := artifacts.NewStore(openStore(t, newClient(t, srv), root, adkgcsOptions(0)))
	var gotForeign []string
	versionsFound := 0
	err := st.Walk(t.Context(), func(u artifacts.ScopeUsage) error {
		for _, n := range u.Names {
			for _, r := range n.Records {
				versionsFound++
				if r.Scope.App == "q" || strings.Contains(r.Name, "outside") {
					t.Errorf("read outside the prefix: %+v", r)
				}
			}
			for _, p := range n.Problems {
				if p.Code != artifacts.CodeForeign {
					t.Errorf("problem %+v: want code foreign", p)
				}
				if p.Reason == "" {
					t.Errorf("foreign %s has no reason", p.Path)
				}
				gotForeign = append(gotForeign, strings.TrimPrefix(p.Path, root))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(gotForeign)
	wantForeign := slices.Clone(foreign)
	slices.Sort(wantForeign)
	if !slices.Equal(gotForeign, wantForeign) {
		t.Errorf("foreign objects:\n got  %q\n want %q", gotForeign, wantForeign)
	}
	if versionsFound != len(versions) {
		t.Errorf("walk found %d versions, want %d", versionsFound, len(versions))
	}

	// The session's names: docs and docs/readme.txt apart, foreign ones
	// counted, not listed.
	sess := artifacts.SessionScope("a", "u", "s")
	page, err := st.ListNames(t.Context(), sess, artifacts.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range page.Items {
		names = append(names, e.Name)
	}
	if want := []string{"docs", "docs/readme.txt", long}; !slices.Equal(names, want) {
		t.Errorf("ListNames = %q, want %q", names, want)
	}
	if page.Foreign != 9 {
		t.Errorf("ListNames counted %d foreign objects in the session, want 9", page.Foreign)
	}
	for _, tc := range []struct {
		scope artifacts.Scope
		name  string
		want  []int64
	}{
		{sess, "docs", []int64{0}},
		{sess, "docs/readme.txt", []int64{0, 1}},
		{artifacts.UserScope("a", "u"), "user:x.json", []int64{0}},
		{artifacts.UserScope("a", "u"), "user:k.json", []int64{2}},
		{artifacts.UserScope("a", "u"), "user:both", []int64{0}},
		{artifacts.SessionScope("a", "u", "v"), "s/x", []int64{0}},
	} {
		vp, err := st.ListVersions(t.Context(), tc.scope, tc.name, artifacts.ListOptions{})
		if err != nil {
			t.Errorf("ListVersions(%s, %q): %v", tc.scope, tc.name, err)
			continue
		}
		var got []int64
		for _, r := range vp.Items {
			got = append(got, r.Version)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ListVersions(%s, %q) = %v, want %v", tc.scope, tc.name, got, tc.want)
		}
	}
	// Scopes the layout cannot hold unambiguously are refused.
	for _, sc := range []artifacts.Scope{artifacts.SessionScope("a", "u", "user"), artifacts.SessionScope("a", "u/v", "s")} {
		if _, err := st.ListNames(t.Context(), sc, artifacts.ListOptions{}); artifacts.CodeOf(err) != artifacts.CodeInvalidScope {
			t.Errorf("ListNames(%s): %v, want invalid_scope", sc, err)
		}
	}
	if after := objectNames(t, srv); !slices.Equal(before, after) {
		t.Errorf("reading changed the bucket:\n before %q\n after  %q", before, after)
	}
}
