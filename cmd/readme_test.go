package cmd

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/testfixtures"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the sample output in README.md from real runs")

// readmeStore is the store path the README's sample output shows.
const readmeStore = "/var/lib/agents/artifacts"

// readmeBlock is the README's sample session: the fenced block after the
// line announcing real output.
var readmeBlock = regexp.MustCompile("(?s)(What follows is real output.*?\n```\n)(.*?)(```\n)")

// TestReadmeSamples runs every "$ agentstore ..." line of the README's
// sample session against a copy of the Erlang fixture store, with
// AGENTSTORE_STORE set and tables forced, and checks that the README shows
// exactly its output (stdout, then the "agentstore: ..." lines of stderr,
// then "exit N" where the line asks for it), the store's path written as
// /var/lib/agents/artifacts. The version command's output depends on the
// build, so only its first word is checked. -update-readme rewrites the
// block from the runs.
func TestReadmeSamples(t *testing.T) {
	isolate(t)
	path := filepath.Join("..", "README.md") // the test runs in cmd/
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := readmeBlock.FindSubmatchIndex(readme)
	if m == nil {
		t.Fatal("README.md has no sample session block")
	}
	block := string(readme[m[4]:m[5]])
	root := filepath.Join(t.TempDir(), "store")
	if _, err := testfixtures.CopyFSStore(root); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTSTORE_STORE", root)
	t.Setenv("AGENTSTORE_OUTPUT", "table")

	var got strings.Builder
	for i, part := range strings.Split(block, "\n$ ") {
		if i == 0 {
			part = strings.TrimPrefix(part, "$ ")
		}
		line, shown, _ := strings.Cut(part, "\n")
		shown = strings.TrimRight(shown, "\n")
		cmdline, _, _ := strings.Cut(line, "  #")
		cmdline = strings.TrimSpace(cmdline)
		cmdline, echoExit := strings.CutSuffix(cmdline, `; echo "exit $?"`)
		args := strings.Fields(cmdline)
		if len(args) == 0 || args[0] != "agentstore" {
			t.Fatalf("README sample line %q does not run agentstore", line)
		}
		code, stdout, stderr := run(t, false, args[1:]...)
		out := stdout
		for l := range strings.Lines(stderr) {
			if strings.HasPrefix(l, "agentstore: ") {
				out += l
			}
		}
		if echoExit {
			out += fmt.Sprintf("exit %d\n", code)
		} else if code != 0 {
			t.Errorf("%s: exit %d\n%s", cmdline, code, stderr)
		}
		out = strings.TrimRight(strings.ReplaceAll(out, root, readmeStore), "\n")
		if args[1] == "version" {
			if !strings.HasPrefix(out, "agentstore ") || !strings.HasPrefix(shown, "agentstore ") {
				t.Errorf("version: got %q, README shows %q", out, shown)
			}
			out = shown
		} else if out != shown && !*updateReadme {
			t.Errorf("README shows for %q:\n%s\n\nthe command prints:\n%s\n\n(go test ./cmd -run TestReadmeSamples -update-readme rewrites it)", cmdline, shown, out)
		}
		if i > 0 {
			got.WriteString("\n")
		}
		got.WriteString("$ " + line + "\n" + out + "\n")
	}
	if *updateReadme {
		next := append(append(append([]byte{}, readme[:m[4]]...), got.String()...), readme[m[5]:]...)
		if err := os.WriteFile(path, next, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
