package wscmd

import (
	"context"
	"fmt"
	"strconv"

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
	// Format is --snapshot-format: incremental, zip or auto.
	Format string
}

// SnapshotOutput is the output of "ws snapshot -o json".
type SnapshotOutput struct {
	// StoreJSON names the store and its layout, Scratch the scratch root.
	cmdutil.StoreJSON
	Scratch string           `json:"scratch"`
	Scope   *artifacts.Scope `json:"scope"`
	// Format is the format written: "zip" (Version is a version of
	// workspace.zip) or "incremental" (Version is a version of the
	// manifest Checkpoint names).
	Format  workspace.SnapshotFormat `json:"format"`
	Version int64                    `json:"version"`
	// Checkpoint is the manifest of an incremental snapshot
	// (NAME@VERSION), "" for a zip.
	Checkpoint string `json:"checkpoint"`
	// AddedBytes is what an incremental snapshot stored in new packs.
	AddedBytes int64  `json:"added_bytes"`
	Files      int    `json:"files"`
	Bytes      int64  `json:"bytes"`
	Digest     string `json:"digest"`
	Size       int64  `json:"size"`
	// Unchanged is true when the tree is the one Version already holds:
	// nothing was written.
	Unchanged bool `json:"unchanged"`
	// Omitted lists the entries a snapshot cannot hold, left out.
	Omitted []workspace.Omission `json:"omitted"`
}

// NewCmdSnapshot returns "ws snapshot". runF, when not nil, replaces the
// run function.
func NewCmdSnapshot(f *cmdutil.Factory, runF func(context.Context, *SnapshotOptions) error) *cobra.Command {
	opts := &SnapshotOptions{deps: depsOf(f)}
	cmd := &cobra.Command{
		Use:   "snapshot --app A --user U --session S",
		Short: "Publish a session's workspace as a new snapshot (zip or incremental)",
		Long: `Snapshot the session's directory under the --scratch root (without its
index record) into the session scope of --store, in the format of
--snapshot-format:

  zip          a new version of the artifact workspace.zip
               (application/zip), the whole tree: what an ADK runtime
               following the design loads
  incremental  a checkpoint: a new version of workspace.manifest naming
               the tree's files, and packs (workspace.pack) holding only
               the content no earlier checkpoint of the session stored
               (docs/layout.md, "Incremental snapshot format")
  auto         zip for a tree under 8 MiB, incremental from there (default)

The flag is also the config key ws.snapshot-format (AGENTSTORE_WS_SNAPSHOT_FORMAT).
The snapshot is printed once the store has published it. An incremental
snapshot names its parent, the latest checkpoint; when another writer
published a checkpoint since, it fails with conflict (exit status 6) and
keeps the local tree: see "ws diff", then snapshot again.

A tree that is the one the latest version already holds (nothing touched
since that version was made or hydrated) writes nothing: "unchanged since
vN", and no version number is used up.

A snapshot holds regular files and directories only. Symbolic links,
FIFOs, sockets and devices are left out, and every one is listed (path and
kind); the command then exits with status 3, and "ws sweep" never removes
the workspace.

With -o json: {"store","layout","scratch","scope","format","version",
"checkpoint","added_bytes","files","bytes","digest","size","unchanged",
"omitted":[{"path","kind"}]}; bytes counts the files' bytes, size the
archive's (the manifest's for incremental), added_bytes the new packs'.`,
		Example: `  agentstore ws snapshot --scratch /var/lib/agents/scratch --store /var/lib/agents/store \
    --app demo-a --user user-42 --session session-7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.Scope.Scope(true, artifacts.KindSession); err != nil {
				return err
			}
			if err := formatFlag(cmd, opts.deps, &opts.Format); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runSnapshot(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	addFormatFlag(cmd, &opts.Format)
	cmdutil.SetExitStatusNote(cmd, `1 also when the session has no directory under the scratch root (not_found)
3  the snapshot left out entries it cannot hold (symbolic links, FIFOs,
   sockets, devices); they are listed
6  another writer published a checkpoint since the one this snapshot
   builds on (conflict); nothing was published, the local tree is kept`)
	return cmd
}

func runSnapshot(ctx context.Context, opts *SnapshotOptions) error {
	scope, cfg, m, name, err := opts.sessionManager(ctx, opts.Scope, true)
	if err != nil {
		return err
	}
	defer m.Close()
	update, done := progress(opts.IO, "snapshot")
	format, err := parseFormat(opts.Format)
	if err != nil {
		return err
	}
	res, err := m.Snapshot(ctx, scope, workspace.SnapshotOptions{Progress: update, Format: format})
	done()
	if err != nil {
		return err
	}
	out := SnapshotOutput{
		StoreJSON: name.JSON(), Scratch: cfg.Scratch, Format: res.Format, AddedBytes: res.AddedBytes,
		Scope: scopeJSON(res.Scope), Version: res.Version, Files: res.Files, Bytes: res.Bytes,
		Digest: res.Record.Digest, Size: res.Record.Size, Unchanged: res.Unchanged,
		Omitted: res.Omitted,
	}
	if res.Format == workspace.FormatIncremental {
		out.Checkpoint = res.Checkpoint.String()
	}
	if out.Omitted == nil {
		out.Omitted = []workspace.Omission{}
	}
	if cfg.JSON() {
		if err := output.JSON(opts.IO.Out, out); err != nil {
			return err
		}
	} else {
		w := opts.IO.Out
		header(opts.IO, name, cfg.Scratch)
		switch {
		case res.Format == workspace.FormatIncremental && res.Unchanged:
			fmt.Fprintf(w, "snapshot %s unchanged since checkpoint %s: %s, %s; nothing written\n",
				res.Scope, res.Checkpoint, plural(res.Files, "file", "files"), output.Size(res.Bytes))
		case res.Format == workspace.FormatIncremental:
			fmt.Fprintf(w, "snapshot %s checkpoint %s (incremental): %s, %s; %s new in packs\n",
				res.Scope, res.Checkpoint, plural(res.Files, "file", "files"), output.Size(res.Bytes), output.Size(res.AddedBytes))
		case res.Unchanged:
			fmt.Fprintf(w, "snapshot %s unchanged since v%d: %s, %s; nothing written\n",
				res.Scope, res.Version, plural(res.Files, "file", "files"), output.Size(res.Bytes))
		default:
			fmt.Fprintf(w, "snapshot %s v%d: %s, %s (archive %s, sha256 %s)\n",
				res.Scope, res.Version, plural(res.Files, "file", "files"), output.Size(res.Bytes), output.Size(res.Record.Size), res.Record.Digest)
		}
		if len(res.Omitted) > 0 {
			fmt.Fprintf(w, "left out (a snapshot cannot hold them):\n")
			for _, o := range res.Omitted {
				fmt.Fprintf(w, "  %s (%s)\n", safe(o.Path), o.Kind)
			}
		}
	}
	if n := len(res.Omitted); n > 0 {
		return &cmdutil.ProblemsFound{Msg: fmt.Sprintf("%s left out of snapshot v%d: symbolic links and special files cannot be kept; the workspace is never swept while it holds them", plural(n, "entry was", "entries were"), res.Version)}
	}
	return nil
}

// plural says "1 file" or "2 files".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
