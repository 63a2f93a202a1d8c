package wscmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// HydrateOptions are the inputs of "ws hydrate".
type HydrateOptions struct {
	deps
	Scope   cmdutil.ScopeFlags
	Version int64
	// Force is --force: overwrite work no snapshot holds.
	Force bool
	// To is --to DIR: restore into a new directory instead.
	To string
}

// HydrateOutput is the output of "ws hydrate -o json".
type HydrateOutput struct {
	// StoreJSON names the store and its layout, Scratch the scratch root.
	cmdutil.StoreJSON
	Scratch string           `json:"scratch"`
	Scope   *artifacts.Scope `json:"scope"`
	// Format is the format hydrated from: "zip" (Version is a version of
	// workspace.zip) or "incremental" (Version is a version of the
	// manifest Checkpoint names).
	Format workspace.SnapshotFormat `json:"format"`
	// Checkpoint is the manifest (NAME@VERSION) of an incremental
	// snapshot, "" for a zip.
	Checkpoint string `json:"checkpoint"`
	Version    int64  `json:"version"`
	Files      int    `json:"files"`
	Bytes      int64  `json:"bytes"`
	// Dir is the directory restored into.
	Dir string `json:"dir"`
}

// OverwriteOutput is what "ws hydrate" prints on stdout when it refuses
// to overwrite unsaved work (exit status 4).
type OverwriteOutput struct {
	// StoreJSON names the store and its layout, Scratch the scratch root.
	cmdutil.StoreJSON
	Scratch string           `json:"scratch"`
	Scope   *artifacts.Scope `json:"scope"`
	Version int64            `json:"version"`
	Dir     string           `json:"dir"`
	Lost    []workspace.Loss `json:"lost"`
	Total   int              `json:"total"`
}

// NewCmdHydrate returns "ws hydrate". runF, when not nil, replaces the run
// function.
func NewCmdHydrate(f *cmdutil.Factory, runF func(context.Context, *HydrateOptions) error) *cobra.Command {
	opts := &HydrateOptions{deps: depsOf(f)}
	cmd := &cobra.Command{
		Use:   "hydrate --app A --user U --session S [--version V] [--force | --to DIR]",
		Short: "Restore a session's workspace from its newest snapshot or a workspace.zip version",
		Long: `Fetch the session's newest snapshot from --store, of either format (the
newer of the latest workspace.zip and the latest incremental checkpoint),
or the workspace.zip version --version names, verify it, and extract it
into the session's directory under the --scratch root, all or nothing: the
directory is replaced only when every entry was extracted and checked. The
index record is kept (and created when missing).

Hydrate never overwrites unsaved work on its own: when the workspace holds
anything that differs from the version being restored (a new or edited
file, a symbolic link) and its tree is not the one a snapshot recorded, it
lists what would be lost and exits with status 4 (would_overwrite),
changing nothing. Snapshot it first, restore into a new directory with
--to DIR (the workspace is not touched, no index is written), or overwrite
it with --force.

The output says which format was hydrated (a "format" line; "format" in
JSON). To restore an older checkpoint, or chosen files of one, use
"ws restore".

With -o json: {"store","layout","scratch","scope","format","checkpoint",
"version","files","bytes","dir"}; when refused, {"store","layout","scratch","scope",
"version","dir","lost":[{"path","change"}],"total"} (change is
new, modified, or the kind of an entry a snapshot cannot hold).`,
		Example: `  agentstore ws hydrate --scratch /var/lib/agents/scratch --store /var/lib/agents/store \
    --app demo-a --user user-42 --session session-7 --version 3
  # look at version 3 without touching the workspace
  agentstore ws hydrate --scratch /var/lib/agents/scratch --store /var/lib/agents/store \
    --app demo-a --user user-42 --session session-7 --version 3 --to /tmp/session-7-v3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.Scope.Scope(true, artifacts.KindSession); err != nil {
				return err
			}
			if opts.Version < 0 {
				return cmdutil.Usagef("--version must be a version number (absent: the latest), not %d", opts.Version)
			}
			if !cmd.Flags().Changed("version") {
				opts.Version = artifacts.Latest
			}
			if opts.Force && opts.To != "" {
				return cmdutil.Usagef("give --force or --to, not both: --to never touches the workspace")
			}
			if cmd.Flags().Changed("to") && opts.To == "" {
				return cmdutil.Usagef("--to needs a directory that does not exist yet")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runHydrate(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	cmd.Flags().Int64Var(&opts.Version, "version", 0, "version of workspace.zip to hydrate (default: the latest)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite the workspace even when it holds work no snapshot has")
	cmd.Flags().StringVar(&opts.To, "to", "", "restore into `DIR`, a new directory, leaving the workspace alone")
	_ = cmd.MarkFlagDirname("to")
	cmdutil.SetExitStatusNote(cmd, `1 also when the session has no snapshot (not_found) or it is corrupt (corrupt_artifact)
4  the workspace holds work no snapshot has (would_overwrite); nothing
   was changed`)
	return cmd
}

func runHydrate(ctx context.Context, opts *HydrateOptions) error {
	scope, cfg, m, name, err := opts.sessionManager(ctx, opts.Scope, false)
	if err != nil {
		return err
	}
	defer m.Close()
	update, done := progress(opts.IO, "hydrate")
	hopts := workspace.HydrateOptions{Progress: update, Force: opts.Force}
	var res workspace.HydrateResult
	if opts.To != "" {
		res, err = m.HydrateTo(ctx, scope, opts.Version, opts.To, hopts)
	} else {
		res, err = m.Hydrate(ctx, scope, opts.Version, hopts)
	}
	done()
	if oe, ok := asOverwrite(err); ok {
		return refuseOverwrite(opts.deps, cfg, name, oe, "ws hydrate", "--version "+strconv.FormatInt(oe.Version, 10))
	}
	if err != nil {
		return err
	}
	return printHydrated(opts.deps, cfg, name, res, opts.To != "")
}

// printHydrated prints a hydration's result (of hydrate and restore):
// what was restored, where, and from which format.
func printHydrated(d deps, cfg *cmdutil.Config, name cmdutil.StoreName, res workspace.HydrateResult, to bool) error {
	out := HydrateOutput{StoreJSON: name.JSON(), Scratch: cfg.Scratch, Scope: scopeJSON(res.Scope), Format: res.Format, Version: res.Version, Files: res.Files, Bytes: res.Bytes, Dir: res.Dir}
	from := fmt.Sprintf("zip (%s v%d)", workspace.SnapshotName, res.Version)
	if res.Format == workspace.FormatIncremental {
		out.Checkpoint = res.Checkpoint.String()
		from = fmt.Sprintf("incremental (checkpoint %s)", res.Checkpoint)
	}
	if cfg.JSON() {
		return output.JSON(d.IO.Out, out)
	}
	header(d.IO, name, cfg.Scratch)
	fmt.Fprintf(d.IO.Out, "hydrated %s v%d: %s, %s", res.Scope, res.Version, plural(res.Files, "file", "files"), output.Size(res.Bytes))
	if to {
		fmt.Fprintf(d.IO.Out, " into %s", res.Dir)
	}
	fmt.Fprintln(d.IO.Out)
	fmt.Fprintf(d.IO.Out, "format %s\n", from)
	return nil
}

// asOverwrite returns err's *workspace.OverwriteError, if it is one.
func asOverwrite(err error) (*workspace.OverwriteError, bool) {
	var oe *workspace.OverwriteError
	return oe, errors.As(err, &oe)
}

// refuseOverwrite prints what a hydration would lose and returns the
// error (exit status 4) with the commands that go on from here: verb
// ("ws hydrate", "ws restore") again with sel (the flag that chose the
// snapshot), with --to or --force.
func refuseOverwrite(opts deps, cfg *cmdutil.Config, name cmdutil.StoreName, oe *workspace.OverwriteError, verb, sel string) error {
	out := OverwriteOutput{StoreJSON: name.JSON(), Scratch: cfg.Scratch, Scope: scopeJSON(oe.Scope), Version: oe.Version, Dir: oe.Dir, Lost: oe.Lost, Total: oe.Total}
	if cfg.JSON() {
		if err := output.JSON(opts.IO.Out, out); err != nil {
			return err
		}
	} else {
		w := opts.IO.Out
		header(opts.IO, name, cfg.Scratch)
		fmt.Fprintf(w, "hydrating v%d would lose %s of %s that no snapshot holds:\n", oe.Version, plural(oe.Total, "entry", "entries"), oe.Dir)
		for _, l := range oe.Lost {
			fmt.Fprintf(w, "  %-8s %s\n", l.Change, safe(l.Path))
		}
		if oe.Total > len(oe.Lost) {
			fmt.Fprintf(w, "  ... and %d more\n", oe.Total-len(oe.Lost))
		}
	}
	base := "agentstore ws --scratch " + shell.Quote(cfg.Scratch) + " --store " + shell.Quote(cfg.Store)
	scope := " --app " + shell.Quote(oe.Scope.App) + " --user " + shell.Quote(oe.Scope.User) + " --session " + shell.Quote(oe.Scope.Session)
	again := strings.Replace(base, "agentstore ws ", "agentstore "+verb+" ", 1) + scope + " " + sel
	msg := fmt.Sprintf("%s\nnext: save it first: %s\nnext: restore beside it: %s\nnext: overwrite it (loses it): %s",
		oe.Error(),
		strings.Replace(base, " ws ", " ws snapshot ", 1)+scope,
		again+" --to ./workspace-v"+strconv.FormatInt(oe.Version, 10),
		again+" --force")
	return cmdutil.CodedError(cmdutil.CodeWouldOverwrite, errors.New(msg))
}
