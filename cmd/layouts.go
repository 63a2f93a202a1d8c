package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// LayoutsJSON is the JSON output of "agentstore layouts".
type LayoutsJSON struct {
	Items []LayoutJSON `json:"items"`
}

// LayoutJSON is one layout: its facts, and Limits, what stays finite for
// a long-running deployment and how an operator sees it coming.
type LayoutJSON struct {
	artifacts.LayoutInfo
	Limits []string `json:"limits"`
}

// layoutLimits says, for a layout, what remains finite however
// snapshots are taken (incremental snapshots roll their names over and
// keep packs below the largest payload, so what is left is what they
// cannot move) and which report shows it coming.
func layoutLimits(name string) []string {
	e := artifacts.DefaultMaxScanEntries
	payload := fmt.Sprintf("largest payload: %d MiB by default; a zip snapshot is one payload, so a larger workspace snapshots only incrementally (packs stay below it): quota report --snapshot-format zip warns on workspaces near it", artifacts.DefaultMaxArtifact>>20)
	session := "per session: --ws-max-snapshots checkpoints and --ws-max-store-bytes bytes in the store, set on agentstore mcp: quota report's SNAPSHOTS OF table shows each session's headroom"
	versions := fmt.Sprintf("versions per name: %d for the name's lifetime; checkpoints roll workspace.manifest and workspace.pack over to new names before it (about 70 names per 100,000 snapshots), workspace.zip and other artifacts do not: quota report warns on the fullest name of each scope", e/3)
	names := fmt.Sprintf("names per scope: %d for the scope's lifetime (deletes do not give them back): quota report's scope rows show the name slots used", e/2)
	switch name {
	case "erlang-fs", "erlang-gcs":
		return []string{versions, names,
			fmt.Sprintf("scopes per store: %d (per prefix on Cloud Storage) for the store's lifetime: quota report's first line shows them; past it, a new store (or erlang-fs-sharded, which has no store-wide ceiling)", e/2),
			payload, session}
	case "erlang-fs-sharded":
		return []string{versions, names, "scopes per store: no store-wide ceiling (one shard per scope)", payload, session}
	}
	return []string{"no lifetime ceilings: versions, names and scopes are not used up", payload, session}
}

func newLayoutsCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "layouts",
		Short: "List the store layouts agentstore detects, with their facts",
		Long: `List the store layouts this build knows: their names (the values of
--layout), where they live, how a store of each is recognised, and what each
can and cannot do.

Every command detects the layout of --store from what the location holds.
A location that holds something no layout recognises is refused with the
code unknown_layout (exit status 2), naming what was found and the closest
guess; a location that does not exist is not_found. An empty directory is a
store only when --layout (or the layout config key, or $AGENTSTORE_LAYOUT)
names its layout. Only writing commands (ws snapshot, ws sweep) make a new
store, in --layout or else in the first layout of its scheme listed here.

Under each layout, "what stays finite" lists the limits a long-running
deployment can still reach (versions per name, names per scope, scopes
per store, the largest payload, and the per-session snapshot ceilings)
and the report that shows each coming; -o json has them as "limits".`,
		Example: `  agentstore layouts
  agentstore layouts -o json
  agentstore artifacts list --store /srv/empty --layout erlang-fs-sharded`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			infos := f.Stores.Layouts()
			if cfg.JSON() {
				out := LayoutsJSON{Items: []LayoutJSON{}}
				for _, in := range infos {
					out.Items = append(out.Items, LayoutJSON{LayoutInfo: in, Limits: layoutLimits(in.Name)})
				}
				return output.JSON(f.IO.Out, out)
			}
			w := f.IO.Out
			st := output.NewStyles(f.IO)
			for i, in := range infos {
				if i > 0 {
					fmt.Fprintln(w)
				}
				fmt.Fprintf(w, "%s  %s://  %s\n", st.Bold(in.Name), in.Scheme, in.Marker)
				fmt.Fprintf(w, "  written by %s\n", in.Writer)
				fmt.Fprintf(w, "  e.g. --store %s\n", in.Example)
				for _, fact := range in.Facts {
					fmt.Fprintf(w, "  - %s\n", fact)
				}
				fmt.Fprintf(w, "  what stays finite, and how to see it coming:\n")
				for _, l := range layoutLimits(in.Name) {
					fmt.Fprintf(w, "  - %s\n", l)
				}
			}
			if len(infos) > 0 {
				fmt.Fprintf(w, "\nNew stores: %s\n", strings.Join(defaults(infos), "; "))
			}
			return nil
		},
	}
}

// defaults names the layout new stores of each scheme are made in: the
// first of the scheme.
func defaults(infos []artifacts.LayoutInfo) []string {
	seen := map[string]bool{}
	var out []string
	for _, in := range infos {
		if !seen[in.Scheme] {
			seen[in.Scheme] = true
			out = append(out, fmt.Sprintf("%s for %s://", in.Name, in.Scheme))
		}
	}
	return out
}
