package shell_test

import (
	"fmt"
	"testing"

	"github.com/agentstore/agentstore/internal/shell"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"demo-a":       "demo-a",
		"":             "''",
		"sessão/ü 1":   "'sessão/ü 1'",
		"it's":         `'it'\''s'`,
		"$(rm -rf /)":  "'$(rm -rf /)'",
		"a/b.txt":      "a/b.txt",
		"--app=x":      "--app=x",
		"new\nline":    "'new\nline'",
		"glob*":        "'glob*'",
		"/tmp/x y/st":  "'/tmp/x y/st'",
		"user@host:80": "user@host:80",
		"~home":        "'~home'",
		"a;b":          "'a;b'",
	} {
		if got := shell.Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

func ExampleJoin() {
	fmt.Println(shell.Join("agentstore", "artifacts", "list", "--app", "it's mine"))
	// Output: agentstore artifacts list --app 'it'\''s mine'
}
