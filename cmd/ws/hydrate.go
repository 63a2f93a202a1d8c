package wscmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// HydrateOptions are the inputs of "ws hydrate".
type HydrateOptions struct {
	deps
	Scope   cmdutil.ScopeFlags
	Version int64
}

// HydrateOutput is the output of "ws hydrate -o json".
type HydrateOutput struct {
	Scope   *artifacts.Scope `json:"scope"`
	Version int64            `json:"version"`
	Files   int              `json:"files"`
	Bytes   int64            `json:"bytes"`
}

// NewCmdHydrate returns "ws hydrate". runF, when not nil, replaces the run
// function.
func NewCmdHydrate(f *cmdutil.Factory, runF func(context.Context, *HydrateOptions) error) *cobra.Command {
	opts := &HydrateOptions{deps: depsOf(f)}
	cmd := &cobra.Command{
		Use:   "hydrate --app A --user U --session S [--version V]",
		Short: "Restore a session's workspace from a workspace.zip version",
		Long: `Fetch a version of the session's workspace.zip from --store (the latest
unless --version is given), verify it against its record, and extract it
into the session's directory under the --scratch root, all or nothing: the
directory is replaced only when every entry was extracted and checked. The
index record is kept (and created when missing).

With -o json: {"scope","version","files","bytes"}.`,
		Example: `  agentstore ws hydrate --scratch /var/lib/agents/scratch --store /var/lib/agents/store \
    --app demo-a --user user-42 --session session-7 --version 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.Scope.Scope(true, artifacts.KindSession); err != nil {
				return err
			}
			if opts.Version < 0 {
				return cmdutil.Usagef("--version must be a positive version number (0 or absent: the latest), not %d", opts.Version)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runHydrate(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	cmd.Flags().Int64Var(&opts.Version, "version", 0, "version of workspace.zip to hydrate (default: the latest)")
	cmdutil.SetExitStatusNote(cmd, "1 also when the session has no snapshot (not_found) or it is corrupt (corrupt_artifact)")
	return cmd
}

func runHydrate(ctx context.Context, opts *HydrateOptions) error {
	scope, cfg, m, err := opts.sessionManager(ctx, opts.Scope, false)
	if err != nil {
		return err
	}
	defer m.Close()
	update, done := progress(opts.IO, "hydrate")
	res, err := m.Hydrate(ctx, scope, opts.Version, workspace.HydrateOptions{Progress: update})
	done()
	if err != nil {
		return err
	}
	out := HydrateOutput{Scope: scopeJSON(res.Scope), Version: res.Version, Files: res.Files, Bytes: res.Bytes}
	if cfg.JSON() {
		return output.JSON(opts.IO.Out, out)
	}
	fmt.Fprintf(opts.IO.Out, "hydrated %s v%d: %d files, %s\n", res.Scope, res.Version, res.Files, output.Size(res.Bytes))
	return nil
}
