// Package cmd holds the agentstore command tree: the root command with the
// global flags, the command groups (artifacts, ws, fs, quota), version and
// completion. The leaf commands live in the packages below it.
//
// The shell completions (completions/), the Markdown reference (docs/cli/)
// and the man pages (docs/man/) are generated from this tree; regenerate
// them after changing a command, a flag or a help text:
//
//	go run ./internal/gendocs
package cmd

//go:generate go run ../internal/gendocs -dir ..

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	mcpcmd "github.com/agentstore/agentstore/cmd/mcp"
	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
)

func init() {
	// Persistent hooks of every ancestor run, not only the nearest one, so
	// that a group may add its own PersistentPreRunE without skipping the
	// root's (which resolves the configuration).
	cobra.EnableTraverseRunHooks = true
}

// Main runs agentstore with the process's arguments and standard streams
// and returns the exit status; SIGINT and SIGTERM cancel the command's
// context. Only package main calls os.Exit.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, cmdutil.NewFactory(iostreams.System()), os.Args[1:])
}

// Run executes the command line args with the dependencies of f and
// returns the exit status, after printing any error once on f.IO.ErrOut
// (as one JSON object with -o json).
func Run(ctx context.Context, f *cmdutil.Factory, args []string) int {
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	root := NewRootCmd(f)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	f.Cleanup()
	if err == nil {
		return cmdutil.ExitOK
	}
	err = cmdutil.AsUsageError(err, cmd)
	cmdutil.PrintError(f.IO, err, jsonMode(f, args))
	return cmdutil.ExitCode(err)
}

// jsonMode decides whether errors are printed as JSON: from the resolved
// configuration when there is one, else (the command line was rejected
// before it was resolved) from a best-effort scan of args, the
// environment and the terminal.
func jsonMode(f *cmdutil.Factory, args []string) bool {
	if cfg, err := f.Config(); err == nil {
		return cfg.JSON()
	}
	if v, ok := scanOutputFlag(args); ok {
		return v == cmdutil.OutputJSON
	}
	if v := os.Getenv(cmdutil.EnvVar(cmdutil.KeyOutput)); v != "" {
		return v == cmdutil.OutputJSON
	}
	return !f.IO.IsStdoutTTY()
}

// scanOutputFlag finds the last -o/--output value in args without a flag
// set: -o json, -ojson, -o=json, --output json, --output=json, and -vo json.
func scanOutputFlag(args []string) (value string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch {
		case a == "--":
			return value, ok
		case a == "--output":
			value, ok = next(), true
		case strings.HasPrefix(a, "--output="):
			value, ok = strings.TrimPrefix(a, "--output="), true
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(a) > 1:
			if j := strings.IndexByte(a, 'o'); j > 0 {
				if rest := strings.TrimPrefix(a[j+1:], "="); rest != "" {
					value, ok = rest, true
				} else {
					value, ok = next(), true
				}
			}
		}
	}
	return value, ok
}

// NewRootCmd returns the agentstore command tree over the dependencies of
// f: the global flags, the groups artifacts, ws, fs and quota (see
// groups.go), mcp, version and completion.
func NewRootCmd(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentstore <command> [flags]",
		Short: "Inspect and maintain agent artifact stores and scratch workspaces",
		Long: `agentstore inspects and maintains agent artifact stores (a directory or a
Cloud Storage bucket) and the per-session scratch workspaces next to them.

Data goes to stdout: tables on a terminal, JSON otherwise (-o json to force
it). Progress, logs and warnings go to stderr.

Every global flag is also a config file key and an environment variable
(--no-color is no-color and AGENTSTORE_NO_COLOR). Precedence: flag, then
environment, then config file, then default.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			err := f.Setup(cmd, configTolerant(cmd))
			if cmd.Name() == cobra.ShellCompRequestCmd || cmd.Name() == cobra.ShellCompNoDescRequestCmd {
				return nil // completion must work even with bad settings
			}
			if err != nil {
				return err
			}
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			return cmdutil.CheckOutputFormat(cmd, cfg.Output)
		},
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(cmdutil.FlagError)
	cmdutil.AddGlobalFlags(root.PersistentFlags())
	cmdutil.RegisterGlobalCompletions(root)
	_ = root.RegisterFlagCompletionFunc(cmdutil.KeyStore, completeStore)
	cmdutil.SetHelp(root)
	root.SetHelpCommand(cmdutil.NewHelpCmd(root))
	root.Example = `  # the scopes of a store, then the artifacts of one session
  agentstore --store /var/lib/agentstore artifacts list
  agentstore --store /var/lib/agentstore artifacts list --app demo-a --user user-42 --session session-7

  # a Cloud Storage bucket, as JSON
  agentstore --store gs://my-bucket/adk-artifacts/v1 artifacts list -o json

  # what repair would remove, changing nothing
  agentstore --store /var/lib/agentstore fs repair --dry-run`

	root.AddCommand(
		newArtifactsCmd(f),
		newWsCmd(f),
		newFsCmd(f),
		newQuotaCmd(f),
		mcpcmd.NewCmdMCP(f, BuildVersion().Version, nil),
		newLayoutsCmd(f),
		newVersionCmd(f),
		newUnlockCmd(f),
		newDoctorCmd(f),
	)
	// Add cobra's completion command now rather than at Execute, so that it
	// is part of the tree the docs and tests see, and decorate it.
	root.InitDefaultCompletionCmd()
	decorateCompletionCmd(root)
	cmdutil.WrapArgsErrors(root)
	registerValueCompletions(f, root)
	return root
}

// configTolerant reports whether cmd must work even with a broken config
// file: help, version, completion and the shell's completion requests.
func configTolerant(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		switch c.Name() {
		case "help", "version", "completion", "doctor", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			return c.Parent() != nil && !c.Parent().HasParent()
		}
	}
	return false
}

// completionExamples are the examples of "completion SHELL".
var completionExamples = map[string]string{
	"bash": `  # this shell only
  source <(agentstore completion bash)

  # every new shell (needs the bash-completion package)
  agentstore completion bash > /etc/bash_completion.d/agentstore`,
	"zsh": `  # every new shell: a directory on $fpath, then restart zsh
  agentstore completion zsh > "${fpath[1]}/_agentstore"

  # this shell only
  source <(agentstore completion zsh)`,
	"fish": `  agentstore completion fish > ~/.config/fish/completions/agentstore.fish`,
	"powershell": `  agentstore completion powershell | Out-String | Invoke-Expression
  agentstore completion powershell --no-descriptions > agentstore.ps1`,
}

// decorateCompletionCmd gives cobra's completion command and its
// subcommands examples and the release archives' location of the scripts.
func decorateCompletionCmd(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Long += `
The release archives also hold the scripts, in completions/.`
		c.Example = `  agentstore completion bash > /etc/bash_completion.d/agentstore
  agentstore completion zsh > "${fpath[1]}/_agentstore"`
		for _, s := range c.Commands() {
			if ex, ok := completionExamples[s.Name()]; ok {
				s.Example = ex
			}
		}
	}
}

// completeStore completes --store values: the schemes file:// and gs://,
// and directories, plain or after file://. Bucket names are not completed
// (that would need credentials and a network call).
func completeStore(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	const fileScheme, gsScheme = "file://", "gs://"
	switch {
	case strings.HasPrefix(toComplete, gsScheme):
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	case strings.HasPrefix(toComplete, fileScheme):
		return completeDirs(fileScheme, strings.TrimPrefix(toComplete, fileScheme)), cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, s := range []string{fileScheme, gsScheme} {
		if strings.HasPrefix(s, toComplete) {
			out = append(out, s)
		}
	}
	return append(out, completeDirs("", toComplete)...), cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// completeDirs returns prefix+D+"/" for each directory D whose path starts
// with partial (hidden directories only when partial's last element starts
// with a dot).
func completeDirs(prefix, partial string) []string {
	dir, base := filepath.Split(partial)
	list := dir
	if list == "" {
		list = "."
	}
	entries, err := os.ReadDir(list)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, base) || strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".") {
			continue
		}
		if !e.IsDir() {
			if fi, err := os.Stat(filepath.Join(list, name)); err != nil || !fi.IsDir() {
				continue // a symbolic link to a directory counts
			}
		}
		out = append(out, prefix+dir+name+"/")
	}
	return out
}
