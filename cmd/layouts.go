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
	Items []artifacts.LayoutInfo `json:"items"`
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
store, in --layout or else in the first layout of its scheme listed here.`,
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
				return output.JSON(f.IO.Out, LayoutsJSON{Items: infos})
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
