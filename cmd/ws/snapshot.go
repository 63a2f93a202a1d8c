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

// SnapshotOptions are the inputs of "ws snapshot".
type SnapshotOptions struct {
	deps
	Scope cmdutil.ScopeFlags
}

// SnapshotOutput is the output of "ws snapshot -o json".
type SnapshotOutput struct {
	Scope   *artifacts.Scope `json:"scope"`
	Version int64            `json:"version"`
	Files   int              `json:"files"`
	Bytes   int64            `json:"bytes"`
	Digest  string           `json:"digest"`
	Size    int64            `json:"size"`
}

// NewCmdSnapshot returns "ws snapshot". runF, when not nil, replaces the
// run function.
func NewCmdSnapshot(f *cmdutil.Factory, runF func(context.Context, *SnapshotOptions) error) *cobra.Command {
	opts := &SnapshotOptions{deps: depsOf(f)}
	cmd := &cobra.Command{
		Use:   "snapshot --app A --user U --session S",
		Short: "Publish a session's workspace as a new workspace.zip version",
		Long: `Zip the session's directory under the --scratch root (without its index
record) and put it into --store as a new version of the artifact
workspace.zip (application/zip) of the session scope. The archive streams
into the store; the version is printed once the store has published it.

With -o json: {"scope","version","files","bytes","digest"}; bytes counts
the files' bytes, size the archive's.`,
		Example: `  agentstore ws snapshot --scratch /var/lib/agents/scratch --store /var/lib/agents/store \
    --app demo-a --user user-42 --session session-7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.Scope.Scope(true, artifacts.KindSession); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runSnapshot(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	cmdutil.SetExitStatusNote(cmd, "1 also when the session has no directory under the scratch root (not_found)")
	return cmd
}

func runSnapshot(ctx context.Context, opts *SnapshotOptions) error {
	scope, cfg, m, err := opts.sessionManager(ctx, opts.Scope, true)
	if err != nil {
		return err
	}
	defer m.Close()
	update, done := progress(opts.IO, "snapshot")
	res, err := m.Snapshot(ctx, scope, workspace.SnapshotOptions{Progress: update})
	done()
	if err != nil {
		return err
	}
	out := SnapshotOutput{
		Scope: scopeJSON(res.Scope), Version: res.Version, Files: res.Files, Bytes: res.Bytes,
		Digest: res.Record.Digest, Size: res.Record.Size,
	}
	if cfg.JSON() {
		return output.JSON(opts.IO.Out, out)
	}
	fmt.Fprintf(opts.IO.Out, "snapshot %s v%d: %d files, %s (archive %s, sha256 %s)\n",
		res.Scope, res.Version, res.Files, output.Size(res.Bytes), output.Size(res.Record.Size), res.Record.Digest)
	return nil
}
