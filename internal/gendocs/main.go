// Command gendocs regenerates, from the agentstore command tree, the shell
// completion scripts in completions/, the Markdown reference in docs/cli/
// and the man pages in docs/man/. Run it from the repository root after
// changing a command, a flag or a help text:
//
//	go run ./internal/gendocs [-dir REPO_ROOT]
//
// (or "go generate ./cmd"). Files in those directories that the tree no
// longer produces are removed. cmd/docs_test.go fails while the committed
// files differ from what the tree produces.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentstore/agentstore/cmd"
	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/gendocs/docgen"
	"github.com/agentstore/agentstore/internal/iostreams"
)

func main() {
	dir := flag.String("dir", ".", "the repository root (holding go.mod)")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return fmt.Errorf("%s is not the repository root (no go.mod); run from there or pass -dir", dir)
	}
	ios, _, _, _ := iostreams.Test()
	files, err := docgen.Render(cmd.NewRootCmd(cmdutil.NewFactory(ios)))
	if err != nil {
		return err
	}
	if err := docgen.Write(dir, files); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gendocs: wrote %d files under %s\n", len(files), filepath.Join(dir, "{completions,docs/cli,docs/man}"))
	return nil
}
