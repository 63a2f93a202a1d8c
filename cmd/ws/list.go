package wscmd

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/sweep"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// ListOptions are the inputs of "ws list".
type ListOptions struct {
	deps
	// All is --all: also the sweep's lock file, tombstones and the
	// temporary entries of hydrations.
	All bool
}

// ListItem is one item of "ws list -o json".
type ListItem struct {
	Dir             string           `json:"dir"`
	State           workspace.State  `json:"state"`
	Scope           *artifacts.Scope `json:"scope,omitempty"`
	Claims          *artifacts.Scope `json:"claims,omitempty"`
	Bytes           int64            `json:"bytes"`
	Files           int              `json:"files"`
	LastAccess      *string          `json:"last_access"`
	IdleSeconds     *int64           `json:"idle_seconds"`
	SnapshotVersion *int64           `json:"snapshot_version"`
	Temporary       bool             `json:"temporary,omitempty"`
	Problem         string           `json:"problem,omitempty"`
}

// ListResult is the output of "ws list -o json".
type ListResult struct {
	// StoreJSON names the store and its layout (null without --store),
	// Scratch the scratch root.
	cmdutil.StoreJSON
	Scratch string     `json:"scratch"`
	Items   []ListItem `json:"items"`
}

// NewCmdList returns "ws list". runF, when not nil, replaces the run
// function (tests use it to check flag parsing).
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{deps: depsOf(f)}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the workspaces under the scratch root",
		Long: `List every entry of the --scratch root: its state (ok, no_index, bad_index,
legacy, not_a_directory or symlink; symbolic links are reported, never
followed), the session scope its index names (only when the index is good:
it decodes and its app, user and session hash to the directory's name), its
size, last access, idle time and the latest published version of its
workspace.zip (when --store is set).

legacy is a directory under the name earlier versions gave a session (a
hash of user and session only): nothing binds the app its index claims
(claims in JSON), so it has no scope. The problem says whether the store
confirms the claim (then opening the session or the next sweep moves it to
its app-bound name) or why not (then nothing reads it; see
docs/operations.md).

The last access is the later of the index's and the newest modification
of any file or directory in the workspace: files edited directly count as
use. Where there is no good index it is unknown. The sweep's lock file and
tombstones and the temporary entries of hydrations are hidden unless --all
is given.

With -o json: {"store","layout","scratch","items":[{"dir","state","scope",
"claims","bytes","files","last_access","idle_seconds","snapshot_version",
"problem"}]}; last_access and idle_seconds are null where unknown; store
and layout are null without a store. A table starts with the store (or
"No artifact store") and the scratch root.`,
		Example: `  agentstore ws list --scratch /var/lib/agents/scratch
  agentstore ws list --scratch /var/lib/agents/scratch --store /var/lib/agents/store -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runList(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "also list the sweep's lock file and tombstones and the temporary entries of hydrations")
	return cmd
}

func runList(ctx context.Context, opts *ListOptions) error {
	cfg, err := opts.scratch()
	if err != nil {
		return err
	}
	var st *artifacts.Store
	if cfg.Store != "" {
		st, err = opts.OpenStore(ctx)
		switch code := artifacts.CodeOf(err); {
		case err == nil:
		case cfg.StoreDefault && (code == artifacts.CodeNotFound || code == artifacts.CodeUnknownLayout):
			// The default store not made yet: list without it.
			st = nil
		default:
			return err
		}
	}
	name, err := opts.storeName(st)
	if err != nil {
		return err
	}
	m, err := opts.newManager(cfg, st)
	if err != nil {
		return err
	}
	defer m.Close()
	infos, err := m.ListWorkspaces(ctx)
	if err != nil {
		return err
	}
	if !opts.All {
		infos = slices.DeleteFunc(infos, func(in workspace.Info) bool { return in.Temporary || sweep.IsOwn(in.Dir) })
	}
	res := ListResult{StoreJSON: name.JSON(), Scratch: cfg.Scratch, Items: make([]ListItem, 0, len(infos))}
	for _, in := range infos {
		it := ListItem{
			Dir: in.Dir, State: in.State, Bytes: in.Bytes, Files: in.Files,
			Temporary: in.Temporary,
			Problem:   in.Problem,
		}
		if in.State == workspace.StateOK {
			last, idle := output.Time(in.LastAccess), int64(in.Idle/time.Second)
			it.LastAccess, it.IdleSeconds = &last, &idle
		}
		if sc, ok := in.Scope(); ok {
			it.Scope = scopeJSON(sc)
		}
		if in.Claimed != nil {
			it.Claims = scopeJSON(in.Claimed.Scope())
		}
		if in.HasSnapshot {
			v := in.SnapshotVersion
			it.SnapshotVersion = &v
		}
		if in.SnapshotErr != nil {
			opts.Logger().Warn("cannot look up the workspace snapshot", "dir", in.Dir, "err", in.SnapshotErr)
		}
		res.Items = append(res.Items, it)
	}
	if cfg.JSON() {
		return output.JSON(opts.IO.Out, res)
	}
	header(opts.IO, name, cfg.Scratch)
	if len(res.Items) == 0 {
		if opts.IO.IsStdoutTTY() {
			fmt.Fprintf(opts.IO.ErrOut, "no workspaces under %s\n", cfg.Scratch)
		}
		return nil
	}
	now := opts.Now()
	tb := output.NewTable(opts.IO, "DIR", "STATE", "SCOPE", "SIZE", "FILES", "LAST ACCESS", "IDLE", "SNAPSHOT")
	tb.NoTruncate(1, 3, 4, 7)
	for i, it := range res.Items {
		in := infos[i]
		state := string(it.State)
		if it.Temporary {
			state += " (temporary)"
		}
		scope := ""
		switch {
		case it.Scope != nil:
			scope = it.Scope.String()
		case it.Claims != nil && in.LegacyConfirmed > 0:
			scope = "claims " + it.Claims.String() + " (confirmed)"
		case it.Claims != nil:
			scope = "claims " + it.Claims.String() + " (unconfirmed)"
		}
		snap := "-"
		if it.SnapshotVersion != nil {
			snap = "v" + strconv.FormatInt(*it.SnapshotVersion, 10)
		}
		last, idle := "unknown", "unknown"
		if it.LastAccess != nil {
			last, idle = output.HumanTime(opts.IO, now, in.LastAccess), sweep.FormatIdle(in.Idle)
		}
		tb.Row(safe(it.Dir), state, scope, output.Size(it.Bytes), strconv.Itoa(it.Files), last, idle, snap)
	}
	return tb.Render()
}
