// Package quotacmd holds the leaf commands of "agentstore quota": report,
// which shows how much of its lifetime capacity a store has used and how
// full the scratch workspaces are.
package quotacmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/quota"
	"github.com/agentstore/agentstore/pkg/workspace"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// ReportOptions are the flags and dependencies of "quota report".
type ReportOptions struct {
	IO        *iostreams.IOStreams
	Config    func() (*cmdutil.Config, error)
	StoreURI  func() (cmdutil.StoreURI, error)
	OpenStore func(context.Context) (*artifacts.Store, error)
	Now       func() time.Time

	// Scope is --app/--user/--session.
	Scope cmdutil.ScopeFlags
	// Warn and FailOver are the thresholds in percent (FailOver 0: none).
	Warn     float64
	FailOver float64
	// Top keeps the N fullest rows (0: all; 20 for Prometheus output).
	Top int
	// MetricsFile is --metrics-file.
	MetricsFile string
	// WsMaxBytes and WsMaxFiles are --ws-max-bytes and --ws-max-files as
	// given ("" for the default).
	WsMaxBytes string
	WsMaxFiles int
	// WsMaxSnapshots, WsMaxStoreBytes and SnapshotFormat are what session
	// snapshots are measured against, as agentstore mcp takes them.
	WsMaxSnapshots  int
	WsMaxStoreBytes string
	SnapshotFormat  string
}

// NewCmdReport returns "quota report". runF, when not nil, replaces the
// run function (tests of flag parsing).
func NewCmdReport(f *cmdutil.Factory, runF func(context.Context, *ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{IO: f.IO, Config: f.Config, StoreURI: f.StoreURI, OpenStore: f.OpenStore, Now: f.Now}
	def := quota.DefaultWorkspaceLimits()
	cmd := &cobra.Command{
		Use:   "report [--app A [--user U [--session S]]] [--scratch DIR] [--warn PERCENT] [--fail-over PERCENT] [--top N] [--metrics-file FILE]",
		Short: "Report store and workspace usage against their capacities",
		Long: `Report how much of the store's lifetime capacity is used, and how full the
scratch workspaces are.

The store layout has ceilings that deletion never gives back: at most
max_scan_entries/2 scopes in a store and names in a scope, and at most
max_scan_entries/3 version reservations for a name (max_scan_entries is
10,000 by default). For each scope the report shows its names, published
versions, bytes and largest version, the name slots it has used and its
fullest name's reservations, and names the binding limit: whichever is
closer to its ceiling. Rows come fullest first. Only records are read,
never payloads, but the latest checkpoint manifest of each session scope
reported that holds incremental snapshots: a table (and, in JSON, the
scope's "checkpoints" object) shows their manifests, packs and stored
bytes, and how much of the packs the latest checkpoint uses (live) and
does not (dead: what only older checkpoints use, and packs no manifest
names, which fs repair removes). Google ADK's layouts (google-adk-file) have no lifetime
ceilings: the report says so and judges no usage against the thresholds.

With --scratch (or the scratch config key) every session workspace is
measured against --ws-max-bytes and --ws-max-files, with its idle time.
Without them, the limits are those a workspace must stay within to be
snapshotted: 4 GiB and 100,000 files; with --snapshot-format zip, the
layout's largest payload (64 MiB on Erlang layouts) instead of 4 GiB, since
a zip snapshot is one payload.

A table "SNAPSHOTS OF" (JSON: "snapshots") has a row per session scope
holding workspace snapshots of either format: the checkpoints kept of
--ws-max-snapshots, packs no manifest names (fs repair removes them), the
bytes the session holds in the store and what is left under
--ws-max-store-bytes, and the limit closest to stopping the next
snapshot. With --snapshot-format zip (as the server writes them) a
workspace.zip near the layout's largest payload (64 MiB on Erlang
layouts) or near its name's version ceiling is that limit, and a warning
says the way out: incremental snapshots, which split packs and roll
their names over. Give the three flags as agentstore mcp has them.

--warn marks rows at or above PERCENT (default 80); --fail-over makes the
command exit 3 when any usage is above PERCENT. --top N keeps the N fullest
scopes and workspaces (the totals still count everything).

The table has the columns that fit 80 columns (on a terminal, ids are cut
with an ellipsis to fit its width); -o wide adds each scope's largest
version, name slots, fullest name, reservations and binding limit.

With -o json the top-level "store" object is the store's usage; it names
the store inside it: "uri" (as --store takes it) and "layout".

-o prometheus prints metrics in the textfile-collector format, with series
of their own for the --top fullest scopes and workspaces only (default 20)
plus the store totals; --metrics-file FILE writes them to FILE atomically,
whatever -o says, and with -o prometheus prints nothing on stdout.`,
		Example: `  agentstore quota report --store /var/lib/agentstore
  agentstore quota report --store /var/lib/agentstore --app demo --top 10
  agentstore quota report --scratch /var/lib/agentstore/scratch --fail-over 90 -o json
  agentstore quota report -o prometheus --metrics-file /var/lib/node_exporter/agentstore_quota.prom`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.Scope.Scope(false); err != nil {
				return err
			}
			if err := checkPercent("--warn", opts.Warn); err != nil {
				return err
			}
			if cmd.Flags().Changed("fail-over") {
				if err := checkPercent("--fail-over", opts.FailOver); err != nil {
					return err
				}
			}
			if opts.Top < 0 {
				return cmdutil.Usagef("--top %d is negative", opts.Top)
			}
			if _, err := parseSize(opts.WsMaxBytes); err != nil {
				return cmdutil.Usagef("--ws-max-bytes: %v", err)
			}
			if opts.WsMaxFiles < 0 {
				return cmdutil.Usagef("--ws-max-files %d is negative", opts.WsMaxFiles)
			}
			if opts.WsMaxSnapshots < 1 {
				return cmdutil.Usagef("--ws-max-snapshots %d: want at least 1", opts.WsMaxSnapshots)
			}
			if _, err := parseSize(opts.WsMaxStoreBytes); err != nil {
				return cmdutil.Usagef("--ws-max-store-bytes: %v", err)
			}
			if _, err := workspace.ParseSnapshotFormat(opts.SnapshotFormat); err != nil || opts.SnapshotFormat == "" {
				return cmdutil.Usagef("--snapshot-format %q: want incremental, zip or auto", opts.SnapshotFormat)
			}
			if opts.MetricsFile != "" {
				if fi, err := os.Stat(filepath.Dir(opts.MetricsFile)); err != nil || !fi.IsDir() {
					return cmdutil.Usagef("--metrics-file %s: directory %s does not exist", opts.MetricsFile, filepath.Dir(opts.MetricsFile))
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runReport(cmd.Context(), opts)
		},
	}
	cmdutil.AllowPrometheus(cmd)
	cmdutil.AllowWide(cmd)
	cmdutil.NoteSizes(cmd)
	cmdutil.SetExitStatusNote(cmd, `3  a usage (store scopes, a scope's binding limit, a workspace) is above
   --fail-over`)
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	fl := cmd.Flags()
	fl.Float64Var(&opts.Warn, "warn", quota.DefaultWarnPercent, "mark rows whose usage is at or above `PERCENT`")
	fl.Float64Var(&opts.FailOver, "fail-over", 0, "exit 3 when any usage is above `PERCENT` (default: never)")
	fl.IntVar(&opts.Top, "top", 0, "keep the `N` fullest scopes, workspaces and sessions' snapshots (default all; 20 for Prometheus metrics)")
	fl.StringVar(&opts.MetricsFile, "metrics-file", "", "write Prometheus textfile metrics to `FILE` (atomically)")
	fl.StringVar(&opts.WsMaxBytes, "ws-max-bytes", "", "bytes a workspace may hold, e.g. 512MiB or 4GiB (default "+output.Size(def.MaxBytes)+")")
	fl.IntVar(&opts.WsMaxFiles, "ws-max-files", 0, "files a workspace may hold (default "+strconv.Itoa(def.MaxFiles)+")")
	fl.IntVar(&opts.WsMaxSnapshots, "ws-max-snapshots", checkpoint.DefaultMaxSnapshots, "checkpoints a session keeps, as agentstore mcp --ws-max-snapshots")
	fl.StringVar(&opts.WsMaxStoreBytes, "ws-max-store-bytes", "", "bytes a session's snapshots may hold, as agentstore mcp --ws-max-store-bytes (default no limit)")
	fl.StringVar(&opts.SnapshotFormat, "snapshot-format", string(workspace.FormatAuto), "the format sessions snapshot in, as agentstore mcp --snapshot-format: incremental, zip or auto")
	_ = cmd.RegisterFlagCompletionFunc("snapshot-format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{string(workspace.FormatIncremental), string(workspace.FormatZip), string(workspace.FormatAuto)}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func checkPercent(flag string, p float64) error {
	if !(p > 0 && p <= 100) {
		return cmdutil.Usagef("%s %v is not a percentage above 0 and at most 100", flag, p)
	}
	return nil
}

// parseSize parses a byte count; see cmdutil.ParseSize.
func parseSize(s string) (int64, error) { return cmdutil.ParseSize(s) }

func runReport(ctx context.Context, opts *ReportOptions) error {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	u, err := opts.StoreURI()
	if err != nil {
		return err
	}
	scope, err := opts.Scope.Scope(false)
	if err != nil {
		return err
	}
	qo := quota.Options{URI: u.String(), WarnPercent: opts.Warn, FailOverPercent: opts.FailOver, Now: opts.Now}
	if scope.Kind != "" {
		qo.Scope = &scope
	}
	// The workspace side: the configured scratch root, or the default one
	// when it exists.
	if cfg.Scratch != "" {
		fi, err := os.Stat(cfg.Scratch)
		switch {
		case err == nil && fi.IsDir():
			qo.Scratch = cfg.Scratch
		case cfg.ScratchDefault && errors.Is(err, fs.ErrNotExist):
		case err == nil:
			return cmdutil.Usagef("--scratch %s is not a directory", cfg.Scratch)
		case errors.Is(err, fs.ErrNotExist):
			return cmdutil.Usagef("--scratch %s does not exist", cfg.Scratch)
		default:
			return err
		}
	}
	qo.WorkspaceLimits.MaxBytes, _ = parseSize(opts.WsMaxBytes)
	qo.WorkspaceLimits.MaxFiles = opts.WsMaxFiles
	qo.MaxSnapshots = opts.WsMaxSnapshots
	qo.MaxStoreBytes, _ = parseSize(opts.WsMaxStoreBytes)
	qo.SnapshotFormat = workspace.SnapshotFormat(opts.SnapshotFormat)

	st, err := opts.OpenStore(ctx)
	if err != nil {
		return err
	}
	if !st.CanWalk() {
		return artifacts.Errorf(artifacts.CodeUnsupported, "quota report", nil, "the %s store cannot walk its store", st.Capabilities().Name)
	}
	if qo.Scope != nil {
		if err := cmdutil.CheckScope(ctx, st, scope); err != nil {
			return err
		}
	}
	prog := output.NewProgress(opts.IO)
	prog.Start("quota: read the records of")
	qo.Progress = prog.Update
	rep, err := quota.Compute(ctx, st, qo)
	prog.Done()
	if err != nil {
		return err
	}

	promTop := opts.Top
	if promTop == 0 {
		promTop = quota.DefaultPrometheusTop
	}
	po := quota.PromOptions{Store: u.String(), Top: promTop}
	if opts.MetricsFile != "" {
		n, err := rep.WritePrometheusFile(opts.MetricsFile, po)
		if err != nil {
			return fmt.Errorf("writing metrics: %w", err)
		}
		if opts.IO.ProgressEnabled() {
			fmt.Fprintf(opts.IO.ErrOut, "quota: wrote %d series to %s\n", n, opts.MetricsFile)
		}
	}
	switch {
	case cfg.Output == cmdutil.OutputPrometheus:
		if opts.MetricsFile == "" {
			if err := rep.WritePrometheus(opts.IO.Out, po); err != nil {
				return err
			}
		}
	case cfg.JSON():
		if err := output.JSON(opts.IO.Out, rep.Top(opts.Top)); err != nil {
			return err
		}
	default:
		if err := printTable(opts.IO, u.String(), rep.Top(opts.Top), opts.Now(), cfg.Wide()); err != nil {
			return err
		}
	}
	if n := rep.Store.Unreadable; n > 0 {
		// The report is incomplete: a failure (exit 1), not a finding.
		why := "input/output errors"
		if rep.Store.UnreadableCode == artifacts.CodePermission {
			why = "permission denied"
		}
		return cmdutil.CodedError(string(rep.Store.UnreadableCode), fmt.Errorf("could not read %d %s (%s), left out of the counts and not known to be corrupt: run as a user who can read the whole store",
			n, plural(n, "version", "versions"), why))
	}
	if rep.Over > 0 {
		msg := fmt.Sprintf("%d %s above --fail-over %v%%", rep.Over, plural(rep.Over, "usage", "usages"), opts.FailOver)
		if len(rep.OverItems) > 0 {
			msg += ", the fullest " + rep.OverItems[0]
		}
		return &cmdutil.ProblemsFound{Msg: msg}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
