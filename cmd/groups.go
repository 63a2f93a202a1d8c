package cmd

import (
	"github.com/spf13/cobra"

	artifactscmd "github.com/agentstore/agentstore/cmd/artifacts"
	fscmd "github.com/agentstore/agentstore/cmd/fs"
	quotacmd "github.com/agentstore/agentstore/cmd/quota"
	wscmd "github.com/agentstore/agentstore/cmd/ws"
	"github.com/agentstore/agentstore/internal/cmdutil"
)

// The command groups. Each returns a parent command with no behaviour of
// its own; add leaf commands with cmd.AddCommand(pkg.NewCmdX(f, nil)).

func newArtifactsCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := cmdutil.NewGroupCmd("artifacts",
		"List, inspect and delete stored artifacts",
		`List the artifacts of a scope (or every scope), list the versions of one
artifact, delete versions after confirming a plan, and prune versions by
a retention policy.

Select a scope with --app A [--user U [--session S]].`)
	cmd.AddCommand(
		artifactscmd.NewCmdList(f, nil),
		artifactscmd.NewCmdVersions(f, nil),
		artifactscmd.NewCmdDelete(f, nil),
		artifactscmd.NewCmdPrune(f, nil),
		artifactscmd.NewCmdGet(f, nil),
		artifactscmd.NewCmdLocate(f, nil),
	)
	return cmd
}

func newWsCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := cmdutil.NewGroupCmd("ws",
		"Manage per-session scratch workspaces",
		`List, snapshot, hydrate, sweep and delete the per-session scratch
workspaces under the --scratch root.`)
	cmd.AddCommand(
		wscmd.NewCmdList(f, nil),
		wscmd.NewCmdSnapshot(f, nil),
		wscmd.NewCmdHydrate(f, nil),
		wscmd.NewCmdSweep(f, nil),
		wscmd.NewCmdDelete(f, nil),
		wscmd.NewCmdHistory(f, nil),
		wscmd.NewCmdDiff(f, nil),
		wscmd.NewCmdRestore(f, nil),
	)
	return cmd
}

func newFsCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := cmdutil.NewGroupCmd("fs",
		"Verify, repair and migrate a filesystem store",
		`Verify the records and payloads of a store, repair what interrupted
writers left behind, and move a Google ADK file store's old users/ tree to
where ADK Python reads it (fs migrate --from legacy).`)
	cmd.AddCommand(fscmd.NewCmdRepair(f, nil), fscmd.NewCmdVerify(f, nil), fscmd.NewCmdMigrate(f, nil))
	return cmd
}

func newQuotaCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := cmdutil.NewGroupCmd("quota",
		"Report store and workspace usage against capacities",
		`Report how many scopes, names, versions and bytes a store holds against its
capacities, and the size of scratch workspaces.`)
	cmd.AddCommand(quotacmd.NewCmdReport(f, nil))
	return cmd
}
