package wscmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/duration"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/promfile"
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/sweep"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// SweepOptions are the flags and dependencies of "ws sweep".
type SweepOptions struct {
	deps
	// StoreURI returns the parsed --store.
	StoreURI func() (cmdutil.StoreURI, error)

	// Idle is --idle: workspaces idle longer than this are removed.
	Idle time.Duration
	// DryRun is --dry-run.
	DryRun bool
	// MaxRemovals is --max-removals (0: no limit).
	MaxRemovals int
	// Discard is --discard: remove without a snapshot, under a confirmed
	// plan.
	Discard bool
	// Confirm is --confirm (a plan's JSON or its plan_id); ConfirmSet is
	// true when it was given.
	Confirm    string
	ConfirmSet bool
	// ConfirmFile is --confirm-file (- for standard input).
	ConfirmFile string
	// MetricsFile is --metrics-file.
	MetricsFile string
	// Force is --force: accept an --idle below sweep.MinIdle.
	Force bool
	// Exclude is --exclude: patterns of entry names to leave alone, on
	// top of the sweep-exclude setting.
	Exclude []string
}

// SweepItem is one item of "ws sweep -o json".
type SweepItem struct {
	Dir             string           `json:"dir"`
	Scope           *artifacts.Scope `json:"scope"`
	Decision        sweep.Decision   `json:"decision"`
	Reason          string           `json:"reason"`
	SnapshotVersion *int64           `json:"snapshot_version"`
	Bytes           int64            `json:"bytes"`
	Files           int              `json:"files"`
	LastAccess      string           `json:"last_access,omitempty"`
	IdleSeconds     int64            `json:"idle_seconds"`
	// Code is "unsnapshottable" for a workspace kept because a snapshot
	// cannot hold some of its entries, listed in Omitted.
	Code    string               `json:"code,omitempty"`
	Omitted []workspace.Omission `json:"omitted,omitempty"`
}

// SweepOutput is the output of "ws sweep -o json" (cli.md: dry_run, items,
// removed, kept; plus skipped, bytes_removed, scratch, and plan_id for a
// discard).
type SweepOutput struct {
	// StoreJSON names the store and its layout.
	cmdutil.StoreJSON
	DryRun       bool        `json:"dry_run"`
	Items        []SweepItem `json:"items"`
	Removed      int         `json:"removed"`
	Kept         int         `json:"kept"`
	Skipped      int         `json:"skipped"`
	Cleaned      int         `json:"cleaned"`
	BytesRemoved int64       `json:"bytes_removed"`
	Scratch      string      `json:"scratch"`
	PlanID       string      `json:"plan_id,omitempty"`
}

// NewCmdSweep returns "ws sweep". runF, when not nil, replaces the run
// function (tests of flag parsing).
func NewCmdSweep(f *cmdutil.Factory, runF func(context.Context, *SweepOptions) error) *cobra.Command {
	opts := &SweepOptions{deps: depsOf(f), StoreURI: f.StoreURI}
	cmd := &cobra.Command{
		Use:   "sweep --idle DURATION [--dry-run] [--max-removals N] [--exclude PATTERN]... [--discard] [--confirm PLAN | --confirm-file FILE|-] [--metrics-file FILE]",
		Short: "Snapshot and remove the workspaces idle longer than --idle",
		Long: `Remove from the --scratch root every workspace idle longer than --idle (now
minus its last use: the later of the last access its index records and the
newest modification of any file or directory in it, so that files edited
directly count; a time in the future counts as now), after putting it into
--store as a new version of its workspace.zip (or finding that the latest
version already holds its tree) and reading that version back: the store's
verifying reader must reach the end and the zip must list exactly the
files, sizes and checksums of the whole tree. Only then is the directory
renamed to a tombstone
(.agentstore-sweep-DIR-TOKEN, beside a marker recording the verified
version) and removed. A sweep killed at any moment leaves every workspace
either as its directory or as a verified snapshot; the next sweep finishes
a tombstone whose snapshot still verifies and renames back one without.

Never removed, always reported as skipped (exit status 3): a directory
without an index, an index that does not decode or whose key does not hash
to the directory's name, anything that is not a directory (symbolic links
are never followed), a workspace touched since the plan or during its
removal, any workspace whose snapshot failed or did not verify, and any
workspace holding entries a snapshot cannot hold (symbolic links, FIFOs,
sockets, devices: code unsnapshottable, with the entries listed) unless it
is discarded under a confirmed plan, and a directory under the name earlier
versions gave a session (user and session only) whose app the store does
not confirm (code unbound_app). One the store confirms (its index names a
snapshot version and digest the store holds for that app's session) is
moved to its app-bound name and kept; a later sweep treats it as any
workspace. Each entry is printed with its
decision (removed, would_remove, kept, skipped, cleaned) and the reason.

--idle below 5m0s needs --force: a shorter one sweeps sessions in the
middle of their work. The file system's lost+found is never touched, nor
any entry whose name matches an --exclude pattern (shell patterns as in
path.Match, e.g. 'backup-*'; repeatable) or one of the sweep-exclude
setting (config file list, or space-separated $AGENTSTORE_SWEEP_EXCLUDE);
they are reported as kept.

What killed hydrations leave in the scratch root (a downloaded archive
.agentstore-hydrate-*.zip, a half-extracted tree .DIR.zipsafe-new-*) is
removed once it has not changed for an hour and no hydration holds it,
and reported as cleaned.

--dry-run prints the plan and changes nothing: what would be removed, with
about which snapshot version (the latest plus one: another writer could
take it first), and why everything else is kept. --max-removals N stops
after N removals.

The store must be named (--store, $AGENTSTORE_STORE or the config file),
never the default one: the sweep snapshots into it, and a discard plan
names it. With --discard, idle workspaces are removed WITHOUT a snapshot, and only after confirming a
plan, as "artifacts delete" does: without --confirm the plan is printed and
the command exits with status 4, changing nothing. The plan:
  {"action": "discard", "scratch", "idle",
   "items": [{"dir", "scope", "bytes", "files", "last_access", "fingerprint"}],
   "plan_id", "store", "layout"}
plan_id is the lowercase hex SHA-256 of the plan's canonical JSON (the plan
without plan_id, store and layout, fields in that order, no whitespace,
HTML escaping off).
--confirm takes the plan's JSON or its plan_id, --confirm-file a file
holding the plan ("-": standard input); a workspace touched, added or
removed since makes it stale (exit 4, nothing removed).

A sweep takes a lock, the file .agentstore-sweep.lock in the scratch root
(host, PID, start time; stale after six hours without a heartbeat or when
its process is gone); a second sweep exits with status 5. A dry run takes
no lock. With --metrics-file FILE it writes Prometheus textfile metrics
atomically.

With -o json: {"store", "layout", "dry_run", "items": [{"dir", "scope",
"decision", "reason", "snapshot_version", "bytes", "files", "last_access",
"idle_seconds", "code", "omitted"}], "removed", "kept", "skipped", "cleaned",
"bytes_removed", "scratch"}; removed counts what a dry run would remove,
kept includes skipped (the table and the metrics count the same way).`,
		Example: `  agentstore ws sweep --scratch /var/lib/agents/scratch --store /var/lib/agents/store --idle 24h --dry-run
  agentstore ws sweep --scratch /var/lib/agents/scratch --store /var/lib/agents/store --idle 24h -o json \
      --metrics-file /var/lib/node_exporter/agentstore_sweep.prom

  # without a snapshot: plan (exit 4), then confirm
  agentstore ws sweep --scratch /scratch --idle 72h --discard -o json > plan.json
  agentstore ws sweep --scratch /scratch --idle 72h --discard --confirm-file plan.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			if !fl.Changed("idle") {
				return cmdutil.Usagef("give --idle DURATION: workspaces idle longer than this are swept")
			}
			if opts.Idle < 0 {
				return cmdutil.Usagef("--idle %s is negative", opts.Idle)
			}
			if opts.Idle < sweep.MinIdle && !opts.Force {
				return cmdutil.Usagef("--idle %s is below %s: it would sweep sessions in the middle of their work; add --force if you mean it", sweep.FormatIdle(opts.Idle), sweep.FormatIdle(sweep.MinIdle))
			}
			for _, p := range opts.Exclude {
				if _, err := filepath.Match(p, ""); err != nil {
					return cmdutil.Usagef("--exclude %q is not a valid pattern: %v", p, err)
				}
			}
			if opts.MaxRemovals < 0 {
				return cmdutil.Usagef("--max-removals %d is negative", opts.MaxRemovals)
			}
			opts.ConfirmSet = fl.Changed("confirm")
			if opts.ConfirmSet && fl.Changed("confirm-file") {
				return cmdutil.Usagef("give --confirm or --confirm-file, not both")
			}
			if fl.Changed("confirm-file") && opts.ConfirmFile == "" {
				return cmdutil.Usagef("--confirm-file needs a file name, or - for standard input")
			}
			if opts.MetricsFile != "" {
				if fi, err := os.Stat(filepath.Dir(opts.MetricsFile)); err != nil || !fi.IsDir() {
					return cmdutil.Usagef("--metrics-file %s: directory %s does not exist", opts.MetricsFile, filepath.Dir(opts.MetricsFile))
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runSweep(cmd.Context(), opts)
		},
	}
	cmdutil.SetExitStatusNote(cmd, `3  some workspace could not be swept safely (skipped: not a workspace, a
   forged index, touched during the sweep, or a store failure); the rest
   was swept
4  --discard (or no store) without a confirmation, or with one that no
   longer matches the plan; nothing was removed
5  another sweep holds the lock on this scratch root; nothing was changed`)
	fl := cmd.Flags()
	fl.Var(duration.NewValue(&opts.Idle, 0), "idle", "sweep workspaces idle longer than this (required)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print what would be removed and why; change nothing")
	fl.IntVar(&opts.MaxRemovals, "max-removals", 0, "stop after N removals (0: no limit)")
	fl.BoolVar(&opts.Discard, "discard", false, "remove without a snapshot, after confirming a plan")
	fl.StringVar(&opts.Confirm, "confirm", "", "the discard plan to execute: its JSON or its plan_id")
	fl.StringVar(&opts.ConfirmFile, "confirm-file", "", "read the discard plan's JSON from `FILE` (- for standard input)")
	fl.StringVar(&opts.MetricsFile, "metrics-file", "", "write Prometheus textfile metrics to `FILE` (atomically)")
	fl.BoolVar(&opts.Force, "force", false, "accept an --idle below 5m0s")
	fl.StringArrayVar(&opts.Exclude, "exclude", nil, "leave scratch-root entries whose name matches `PATTERN` alone (repeatable)")
	return cmd
}

func runSweep(ctx context.Context, opts *SweepOptions) (err error) {
	start := opts.Now()
	m := sweepMetrics{start: start}
	defer func() {
		if opts.MetricsFile == "" {
			return
		}
		m.end = opts.Now()
		m.exitCode = cmdutil.ExitCode(err)
		if werr := m.write(opts.MetricsFile); werr != nil {
			if err == nil {
				err = fmt.Errorf("writing metrics: %w", werr)
				return
			}
			fmt.Fprintf(opts.IO.ErrOut, "agentstore: writing metrics: %v\n", werr)
		}
	}()
	cfg, err := opts.scratch()
	if err != nil {
		return err
	}
	m.scratch = cfg.Scratch
	var conf *sweep.Confirmation
	switch {
	case opts.ConfirmSet:
		c, err := sweep.ParseConfirmation(opts.Confirm)
		if err != nil {
			return err
		}
		conf = &c
	case opts.ConfirmFile != "":
		c, err := readSweepConfirmation(opts)
		if err != nil {
			return err
		}
		conf = &c
	}
	st, err := sweepStore(ctx, opts, cfg)
	if err != nil {
		return err
	}
	if cfg.ScratchDefault {
		if err := os.MkdirAll(cfg.Scratch, 0o700); err != nil {
			return artifacts.Errorf(artifacts.CodeIO, "ws sweep", err, "cannot create the default scratch root %s", cfg.Scratch)
		}
	}
	sopts := sweep.Options{
		Scratch: cfg.Scratch, Store: st, Idle: opts.Idle, DryRun: opts.DryRun,
		MaxRemovals: opts.MaxRemovals, Discard: opts.Discard, Confirm: conf, Now: opts.Now,
		Exclude: append(slices.Clone(cfg.SweepExclude), opts.Exclude...),
	}
	if !opts.DryRun {
		l, err := lock.Acquire(filepath.Join(cfg.Scratch, sweep.LockFile), lock.Options{Purpose: "ws sweep"})
		if err != nil {
			return cmdutil.LockHeld(err, "--sweep", "--scratch", cfg.Scratch)
		}
		if prev, ok := l.TookOver(); ok {
			opts.Logger().Info(cmdutil.TakeoverMessage(prev))
		}
		defer func() {
			if rerr := l.Release(); rerr != nil && err == nil {
				err = rerr
			}
		}()
		var cancel context.CancelFunc
		ctx, cancel = l.Context(ctx)
		defer cancel()
		sopts.BeforeExecute = l.Refresh
	}
	prog := output.NewProgress(opts.IO)
	prog.Start("sweep")
	sopts.Progress = func(phase string, done, total int) { prog.Update(int64(done), 0) }
	rep, err := sweep.Run(ctx, sopts)
	prog.Done()
	name, nerr := opts.storeName(st)
	if nerr != nil {
		return nerr
	}
	var cerr *sweep.ConfirmationError
	if errors.As(err, &cerr) && rep != nil && rep.Plan != nil {
		rep.Plan.Store, rep.Plan.Layout = name.URI, name.Layout
		if perr := printDiscardPlan(opts, cfg, name, rep); perr != nil {
			return perr
		}
		if !cerr.Stale && conf == nil {
			cerr.Msg += "; run: " + nextSweepCommand(cfg, opts, rep.Plan.PlanID)
		}
		return err
	}
	if err != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			return fmt.Errorf("%w (%v)", err, c)
		}
		return err
	}
	m.rep = rep
	out := sweepOutput(rep)
	out.StoreJSON = name.JSON()
	if cfg.JSON() {
		if err := output.JSON(opts.IO.Out, out); err != nil {
			return err
		}
	} else {
		printSweep(opts.IO, name, rep)
	}
	if n := rep.Problems(); n > 0 {
		word := "workspaces"
		if n == 1 {
			word = "workspace"
		}
		return &cmdutil.ProblemsFound{Msg: fmt.Sprintf("%d %s could not be swept safely (see the skipped items)", n, word)}
	}
	return nil
}

// sweepStore opens --store for writing (a sweep snapshots workspaces into
// it). The store must be named (flag, environment or config file): a
// sweep never snapshots into, or decides by, the default store.
func sweepStore(ctx context.Context, opts *SweepOptions, cfg *cmdutil.Config) (*artifacts.Store, error) {
	if cfg.StoreDefault || cfg.Store == "" {
		return nil, cmdutil.Usagef("ws sweep needs the store to snapshot into: use --store URI or set %s", cmdutil.EnvVar(cmdutil.KeyStore))
	}
	return opts.CreateStore(ctx)
}

func readSweepConfirmation(opts *SweepOptions) (sweep.Confirmation, error) {
	if opts.ConfirmFile == "-" {
		return sweep.ReadConfirmation(opts.IO.In)
	}
	f, err := os.Open(opts.ConfirmFile)
	if err != nil {
		return sweep.Confirmation{}, &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: fmt.Errorf("--confirm-file: %v", err)}
	}
	defer f.Close()
	return sweep.ReadConfirmation(f)
}

// nextSweepCommand is the command line that confirms a discard plan.
func nextSweepCommand(cfg *cmdutil.Config, opts *SweepOptions, planID string) string {
	s := "agentstore ws sweep --scratch " + shell.Quote(cfg.Scratch) + " --idle " + opts.Idle.String()
	if opts.Discard {
		s += " --discard"
	}
	if opts.MaxRemovals > 0 {
		s += " --max-removals " + strconv.Itoa(opts.MaxRemovals)
	}
	if opts.Force {
		s += " --force"
	}
	for _, p := range opts.Exclude {
		s += " --exclude " + shell.Quote(p)
	}
	return s + " --confirm " + planID
}

func sweepOutput(rep *sweep.Report) SweepOutput {
	out := SweepOutput{
		DryRun: rep.DryRun, Items: make([]SweepItem, 0, len(rep.Items)),
		Removed: rep.Removed, Kept: rep.Kept, Skipped: rep.Skipped, Cleaned: rep.Cleaned, BytesRemoved: rep.BytesRemoved,
		Scratch: rep.Scratch,
	}
	if rep.Plan != nil {
		out.PlanID = rep.Plan.PlanID
	}
	for _, it := range rep.Items {
		si := SweepItem{
			Dir: it.Dir, Scope: it.Scope, Decision: it.Decision, Reason: it.Reason,
			Bytes: it.Bytes, Files: it.Files, LastAccess: output.Time(it.LastAccess),
			IdleSeconds: int64(it.Idle / time.Second),
			Code:        it.Code, Omitted: it.Omitted,
		}
		if it.HasSnapshot {
			v := it.SnapshotVersion
			si.SnapshotVersion = &v
		}
		out.Items = append(out.Items, si)
	}
	return out
}

func printDiscardPlan(opts *SweepOptions, cfg *cmdutil.Config, name cmdutil.StoreName, rep *sweep.Report) error {
	if cfg.JSON() {
		return output.JSON(opts.IO.Out, rep.Plan)
	}
	st := output.NewStyles(opts.IO)
	var total int64
	for _, it := range rep.Plan.Items {
		total += it.Bytes
	}
	w := opts.IO.Out
	fmt.Fprintln(w, name.Line(st))
	fmt.Fprintf(w, "%s %s (%s) WITHOUT a snapshot\n", st.Bold("Plan: discard"), plural(len(rep.Plan.Items), "workspace", "workspaces"), output.Size(total))
	fmt.Fprintf(w, "  scratch:  %s\n", rep.Plan.Scratch)
	fmt.Fprintf(w, "  idle:     longer than %s\n", rep.Plan.Idle)
	fmt.Fprintf(w, "  plan_id:  %s\n\n", rep.Plan.PlanID)
	t := output.NewTable(opts.IO, "DIR", "SCOPE", "SIZE", "FILES", "LAST ACCESS")
	t.NoTruncate(0, 2, 3, 4)
	for _, it := range rep.Plan.Items {
		t.Row(it.Dir, it.Scope.String(), output.Size(it.Bytes), strconv.Itoa(it.Files), it.LastAccess)
	}
	return t.Render()
}

func printSweep(ios *iostreams.IOStreams, name cmdutil.StoreName, rep *sweep.Report) {
	w := ios.Out
	st := output.NewStyles(ios)
	fmt.Fprintln(w, name.Line(st))
	fmt.Fprint(w, cmdutil.ScratchLine(st, rep.Scratch))
	if rep.DryRun {
		fmt.Fprint(w, st.Warn(" (dry run: nothing was changed)"))
	}
	fmt.Fprintln(w)
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	fmt.Fprintf(w, "%s: %s %d (%s), kept %d (%d skipped)", plural(len(rep.Items), "entry", "entries"), verb, rep.Removed, output.Size(rep.BytesRemoved), rep.Kept, rep.Skipped)
	if rep.Cleaned > 0 {
		fmt.Fprintf(w, ", cleaned %d", rep.Cleaned)
	}
	fmt.Fprintln(w)
	if len(rep.Items) == 0 {
		return
	}
	fmt.Fprintln(w)
	t := output.NewTable(ios, "DIR", "SCOPE", "DECISION", "SNAPSHOT", "IDLE", "REASON")
	t.NoTruncate(2, 3, 4)
	for _, it := range rep.Items {
		scope := ""
		if it.Scope != nil {
			scope = it.Scope.String()
		}
		snap := "-"
		if it.HasSnapshot {
			snap = "v" + strconv.FormatInt(it.SnapshotVersion, 10)
			if it.Decision == sweep.WouldRemove {
				snap = "~" + snap
			}
		}
		dec := string(it.Decision)
		switch it.Decision {
		case sweep.Removed:
			dec = st.OK(dec)
		case sweep.Skipped:
			dec = st.Bad(dec)
		}
		t.Row(safe(it.Dir), scope, dec, snap, sweep.FormatIdle(it.Idle), it.Reason)
	}
	_ = t.Render()
}

// sweepMetrics is what a sweep reports in its --metrics-file.
type sweepMetrics struct {
	scratch  string
	start    time.Time
	end      time.Time
	exitCode int
	rep      *sweep.Report
}

func (m sweepMetrics) write(path string) error {
	const prefix = "agentstore_ws_sweep"
	label := promfile.Label{Name: "scratch", Value: m.scratch}
	lastSuccess := prefix + "_last_success_timestamp_seconds"
	success := float64(0)
	if m.exitCode == cmdutil.ExitOK || m.exitCode == cmdutil.ExitProblems {
		success = float64(m.end.UnixMilli()) / 1000
	} else if v, ok := promfile.ReadValue(path, promfile.Series(lastSuccess, label)); ok {
		success = v
	}
	ms := []promfile.Metric{
		promfile.Gauge(lastSuccess, "Unix time of the end of the last sweep that completed (exit status 0 or 3).", success, label),
		promfile.Gauge(prefix+"_last_run_timestamp_seconds", "Unix time of the end of the last sweep.", float64(m.end.UnixMilli())/1000, label),
		promfile.Gauge(prefix+"_duration_seconds", "Duration of the last sweep.", m.end.Sub(m.start).Seconds(), label),
		promfile.Gauge(prefix+"_exit_code", "Exit status of the last sweep (0 ok, 3 problems found, 4 confirmation required, 5 locked, 1 failed).", float64(m.exitCode), label),
	}
	if r := m.rep; r != nil {
		dry := 0.0
		if r.DryRun {
			dry = 1
		}
		ms = append(ms,
			promfile.Gauge(prefix+"_entries", "Entries of the scratch root reported by the last sweep.", float64(len(r.Items)), label),
			promfile.Gauge(prefix+"_removed", "Workspaces removed by the last sweep (in a dry run: that would be).", float64(r.Removed), label),
			promfile.Gauge(prefix+"_removed_bytes", "Bytes of the workspaces removed by the last sweep.", float64(r.BytesRemoved), label),
			promfile.Gauge(prefix+"_kept", "Entries left in place by the last sweep, skipped ones included.", float64(r.Kept), label),
			promfile.Gauge(prefix+"_skipped", "Entries the last sweep could not sweep safely.", float64(r.Skipped), label),
			promfile.Gauge(prefix+"_cleaned", "Debris of killed hydrations the last sweep removed (in a dry run: would remove).", float64(r.Cleaned), label),
			promfile.Gauge(prefix+"_dry_run", "1 when the last sweep was a dry run.", dry, label),
		)
	}
	return promfile.WriteFile(path, ms)
}
