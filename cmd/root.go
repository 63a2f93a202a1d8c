// Package cmd holds the agentstore command tree: the root command with the
// global flags, the command groups (artifacts, ws, fs, quota), version and
// completion. The leaf commands live in the packages below it.
package cmd

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

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
// groups.go), version and completion.
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
			err := f.Setup(cmd)
			if cmd.Name() == cobra.ShellCompRequestCmd || cmd.Name() == cobra.ShellCompNoDescRequestCmd {
				return nil // completion must work even with a broken config
			}
			if err != nil {
				return err
			}
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			if cfg.Output == cmdutil.OutputPrometheus && cmd.Annotations[cmdutil.AnnotationPrometheus] != "true" {
				return cmdutil.Usagef("%s does not support -o prometheus (want table or json)", cmd.CommandPath())
			}
			return nil
		},
	}
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &cmdutil.UsageError{Err: err, CommandPath: c.CommandPath()}
	})
	cmdutil.AddGlobalFlags(root.PersistentFlags())
	cmdutil.RegisterGlobalCompletions(root)
	cmdutil.SetHelp(root)

	root.AddCommand(
		newArtifactsCmd(f),
		newWsCmd(f),
		newFsCmd(f),
		newQuotaCmd(f),
		newVersionCmd(f),
	)
	cmdutil.WrapArgsErrors(root)
	return root
}
