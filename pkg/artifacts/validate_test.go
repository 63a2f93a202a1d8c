package artifacts_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

func TestPageArgs(t *testing.T) {
	ok := artifacts.SessionScope("a", "u", "s")
	cases := []struct {
		name      string
		scope     artifacts.Scope
		aname     string
		opts      artifacts.ListOptions
		max       int
		wantLimit int
		wantAfter int64
		code      artifacts.Code // for both helpers unless cursor-specific
		names     bool           // only NamePageArgs
		versions  bool           // only VersionPageArgs
	}{
		{name: "defaults", scope: ok, aname: "n", wantLimit: 100, wantAfter: -1},
		{name: "small max caps the default", scope: ok, aname: "n", max: 7, wantLimit: 7, wantAfter: -1},
		{name: "limit at max", scope: ok, aname: "n", opts: artifacts.ListOptions{Limit: 1000}, wantLimit: 1000, wantAfter: -1},
		{name: "limit past max", scope: ok, aname: "n", opts: artifacts.ListOptions{Limit: 1001}, code: artifacts.CodeInvalidArgument},
		{name: "negative limit", scope: ok, aname: "n", opts: artifacts.ListOptions{Limit: -1}, code: artifacts.CodeInvalidArgument},
		{name: "bad scope", scope: artifacts.AppScope(""), aname: "n", code: artifacts.CodeInvalidScope},
		{name: "bad name", scope: ok, aname: "a//b", code: artifacts.CodeInvalidName, versions: true},
		{name: "name cursor", scope: ok, opts: artifacts.ListOptions{Cursor: "x/y"}, wantLimit: 100, names: true},
		{name: "bad name cursor", scope: ok, opts: artifacts.ListOptions{Cursor: "x//y"}, code: artifacts.CodeInvalidArgument, names: true},
		{name: "version cursor", scope: ok, aname: "n", opts: artifacts.ListOptions{Cursor: "42"}, wantLimit: 100, wantAfter: 42, versions: true},
		{name: "negative version cursor", scope: ok, aname: "n", opts: artifacts.ListOptions{Cursor: "-1"}, code: artifacts.CodeInvalidArgument, versions: true},
		{name: "word as version cursor", scope: ok, aname: "n", opts: artifacts.ListOptions{Cursor: "v3"}, code: artifacts.CodeInvalidArgument, versions: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !c.versions {
				limit, err := artifacts.NamePageArgs(c.scope, c.opts, c.max)
				if artifacts.CodeOf(err) != c.code || (err == nil && limit != c.wantLimit) {
					t.Errorf("NamePageArgs = %d, %v; want %d, %q", limit, err, c.wantLimit, c.code)
				}
			}
			if !c.names {
				limit, after, err := artifacts.VersionPageArgs(c.scope, c.aname, c.opts, c.max)
				if artifacts.CodeOf(err) != c.code || (err == nil && (limit != c.wantLimit || after != c.wantAfter)) {
					t.Errorf("VersionPageArgs = %d, %d, %v; want %d, %d, %q", limit, after, err, c.wantLimit, c.wantAfter, c.code)
				}
			}
		})
	}
}

func TestValidateNameEdges(t *testing.T) {
	for name, want := range map[string]artifacts.Code{
		"a":                          "",
		"reports/summary.txt":        "",
		strings.Repeat("n", 1024):    "",
		strings.Repeat("n", 1025):    artifacts.CodeInvalidName,
		"..":                         artifacts.CodeInvalidName,
		"a/./b":                      artifacts.CodeInvalidName,
		"a/":                         artifacts.CodeInvalidName,
		"a\x00b":                     artifacts.CodeInvalidName,
		"\xc3":                       artifacts.CodeInvalidName,
		"données/résumé.md":          "",
		"sessão/ü 1 with spaces.txt": "",
	} {
		if got := artifacts.CodeOf(artifacts.ValidateName(name)); got != want {
			t.Errorf("ValidateName(%q) = %q, want %q", name, got, want)
		}
	}
}

// Scope and name hashes are the directory and object keys of the layout.
func ExampleScope_Hash() {
	s := artifacts.SessionScope("demo-a", "user-42", "session-7")
	fmt.Println(s.Hash())
	fmt.Println(artifacts.NameHash("reports/summary.txt"))
	// Output:
	// 8f364540aa791e7636c26878b48aec9ef8a6c7144847b213324427eb4420f5b7
	// 7e5c177646b9aefed838831273ffa92433dff3100eee3ec2d95c9f1176701441
}
