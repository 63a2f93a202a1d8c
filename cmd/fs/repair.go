package fscmd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/duration"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/promfile"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/repair"
)

// RepairStallAfter is how long a repair may go without progress (a name
// directory scanned) before it stops renewing its lock's heartbeat: the
// lock then goes stale six hours later instead of blocking every later
// repair for as long as the stuck process lives.
const RepairStallAfter = 30 * time.Minute

// RepairOptions are the flags and dependencies of "fs repair".
type RepairOptions struct {
	IO       *iostreams.IOStreams
	Config   func() (*cmdutil.Config, error)
	StoreURI func() (cmdutil.StoreURI, error)
	// OpenStore opens the store, detecting its layout.
	OpenStore func(context.Context) (*artifacts.Store, error)
	Now       func() time.Time
	// Logger returns the diagnostics logger.
	Logger func() *slog.Logger

	Grace       time.Duration
	Limit       int64
	DryRun      bool
	MetricsFile string
}

// RepairJSON is the JSON output of "fs repair": the store, then the
// report (cli.md: store, dry_run, scanned, removed, reservations_preserved,
// corrupt, corrupt_items; plus removed_items, skipped_items, young, and
// next_command per corrupt item).
type RepairJSON struct {
	cmdutil.StoreJSON
	repair.Report
}

// NewCmdRepair returns "fs repair". runF, when not nil, replaces the run
// function (tests of flag parsing).
func NewCmdRepair(f *cmdutil.Factory, runF func(context.Context, *RepairOptions) error) *cobra.Command {
	opts := &RepairOptions{IO: f.IO, Config: f.Config, StoreURI: f.StoreURI, OpenStore: f.OpenStore, Now: f.Now, Logger: f.Logger}
	cmd := &cobra.Command{
		Use:   "repair [--grace DURATION] [--limit N] [--dry-run] [--metrics-file FILE]",
		Short: "Remove what interrupted writers left in a store",
		Long: `Walk every scope and name directory of a filesystem store and classify each
file, as the layout's repair does:

  v-N.reserve                 preserved (version numbers are never reused)
  *.tmp-* (a staged write)    removed when older than --grace
  v-N.data without v-N.meta   removed when older than --grace (a write that
                              never published)
  v-N.meta without v-N.data   reported as corrupt, never removed; the exact
                              command that deletes the version is printed
  anything else               left alone

Repair plans first and then removes; --dry-run prints the plan (what would
be removed and why) and changes nothing. Files younger than --grace are never
removed, and each file is checked again right before its removal, so repair
is safe while writers are active. --grace 0 removes fresh staged files too:
use it only when no writer is running.

In every session scope holding incremental snapshots (checkpoints), a
pack version (workspace.pack, workspace.pack.2, ...) that no manifest
names, what a crashed or refused snapshot stored, is removed when older
than --grace (by its creation time), and only if the scope's manifests,
read again right before, still name none of it; it is listed with its
reason in the plan. A scope with a manifest that does not read keeps every
pack (a note says so). Snapshots do not take the store lock: a snapshot
running longer than --grace could lose a pack it has stored but not yet
named, so keep --grace above the longest snapshot.

Repair takes a lock, the file ` + LockFile + ` in the store's root (it
records host, PID, start time and purpose). Its heartbeat is renewed while
the scan makes progress; a repair that makes none for 30 minutes (stuck in a
system call, say) stops renewing it. It goes stale after six hours
without a heartbeat or when its process is gone from this host; a second
repair while one runs exits with status 5 and touches nothing. A dry run
only reads and takes no lock.

With --metrics-file FILE it writes Prometheus textfile-collector metrics
atomically: last success time, duration, the counters and the exit status.

A gs:// store is repaired the same way, object by object below the
store's prefix (there are no staged files): an orphan v-N.data is removed
only when its v-N.meta still does not exist right before the removal, and
only the generation that was listed (a payload written again is never
removed). A gs:// store is locked the same way by the object
.agentstore-repair.lock below the store's prefix, beside its artifacts
(PREFIX/.agentstore-repair.lock; for google-adk-gcs, ROOT/.agentstore-repair.lock),
created only if it does not exist, with the same heartbeat and takeover
rules. "agentstore unlock --store URI" shows either lock and removes it
when stale.

A google-adk-gcs store (Google ADK's GcsArtifactService) is checked, and
nothing is removed: ADK writes each version as one object, so there is no
half-published version to clean up. Repair reads every version object and
reports those whose bytes fail the CRC32C Cloud Storage stored (with the
command that deletes each), and the objects that are not versions of the
layout (foreign, by name); a note says that nothing was removed. Apart
from its lock object, it changes no object.`,
		Example: `  agentstore fs repair --store /var/lib/agentstore --dry-run
  agentstore fs repair --store /var/lib/agentstore -o json --metrics-file /var/lib/node_exporter/agentstore_repair.prom`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Grace < 0 {
				return cmdutil.Usagef("--grace %s is negative", opts.Grace)
			}
			if opts.Limit < 0 {
				return cmdutil.Usagef("--limit %d is negative", opts.Limit)
			}
			if err := checkMetricsPath(opts.MetricsFile); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRepair(cmd.Context(), opts)
		},
	}
	cmdutil.SetExitStatusNote(cmd, `3  corrupt versions (records without payloads, damaged bytes) or objects not part of the layout found; the rest was repaired
5  another repair holds the lock on this store; nothing was changed`)
	fl := cmd.Flags()
	fl.Var(duration.NewValue(&opts.Grace, repair.DefaultGrace), "grace", "leave staged files and orphan payloads younger than this (0: remove all; unsafe with active writers)")
	fl.Int64Var(&opts.Limit, "limit", 0, "stop, removing nothing, when there are more than N files to scan (0: no limit)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print what would be removed and why; change nothing")
	fl.StringVar(&opts.MetricsFile, "metrics-file", "", "write Prometheus textfile metrics to `FILE` (atomically)")
	return cmd
}

func runRepair(ctx context.Context, opts *RepairOptions) (err error) {
	start := opts.Now()
	m := runMetrics{Prefix: "agentstore_fs_repair", Start: start}
	defer func() {
		m.End = opts.Now()
		err = finish(opts.IO, opts.MetricsFile, m, err)
	}()
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	u, err := opts.StoreURI()
	if err != nil {
		return err
	}
	m.Store = u.String()
	if cfg.StoreDefault {
		return cmdutil.Usagef("fs repair needs the store named: use --store URI or set %s (it never repairs the default store unasked)", cmdutil.EnvVar(cmdutil.KeyStore))
	}
	st, err := opts.OpenStore(ctx)
	if err != nil {
		return err
	}
	layout := st.Capabilities().Layout
	if !st.CanRepair() {
		return cmdutil.CodedError(cmdutil.CodeUnsupportedStore,
			fmt.Errorf("fs repair cannot repair the %s store %s", layout, u.String()))
	}
	// A dry run only reads, so it takes no lock (and so leaves even the
	// root directory untouched). The heartbeat is renewed only while the
	// scan makes progress: a repair stuck for RepairStallAfter gives its
	// lock up to go stale.
	var beforeExecute func() error
	var heldLock *cmdutil.StoreLock
	if !opts.DryRun {
		var logger *slog.Logger
		if opts.Logger != nil {
			logger = opts.Logger()
		}
		lctx, lk, err := cmdutil.LockStore(ctx, st, u, "fs repair", RepairStallAfter, logger)
		if err != nil {
			return err
		}
		defer func() {
			if rerr := lk.Release(); rerr != nil && err == nil {
				err = rerr
			}
		}()
		ctx = lctx
		beforeExecute = lk.Refresh
		heldLock = lk
	}

	grace := opts.Grace
	if grace == 0 {
		grace = repair.NoGrace
	}
	prog := output.NewProgress(opts.IO)
	prog.Start("repair: scanned")
	ropts := repair.Options{
		Grace:    grace,
		Limit:    opts.Limit,
		DryRun:   opts.DryRun,
		Now:      opts.Now,
		StoreArg: u.Root,
		Progress: func(n int64) {
			if heldLock != nil {
				heldLock.Progress()
			}
			prog.Update(n, 0)
		},
		BeforeExecute: beforeExecute,
	}
	if u.Scheme != cmdutil.SchemeFile {
		ropts.StoreArg = u.String()
	}
	rep, err := repair.Run(ctx, st, ropts)
	prog.Done()
	if err != nil {
		if cerr := context.Cause(ctx); cerr != nil && ctx.Err() != nil {
			return fmt.Errorf("%w (%v)", err, cerr)
		}
		return err
	}
	elapsed := opts.Now().Sub(start)
	m.Values = []promfile.Metric{
		promfile.Gauge("scanned_files", "Files examined in name directories by the last run.", float64(rep.Scanned)),
		promfile.Gauge("removed_files", "Files removed by the last run (in a dry run: that would be removed).", float64(rep.Removed)),
		promfile.Gauge("reservations_preserved", "Version reservations found (never removed).", float64(rep.ReservationsPreserved)),
		promfile.Gauge("corrupt_versions", "Records without payloads found (never removed).", float64(rep.Corrupt)),
		promfile.Gauge("young_files", "Staged files and orphan payloads left alone as younger than the grace period.", float64(rep.Young)),
		promfile.Gauge("skipped_files", "Files planned for removal but left alone because they changed meanwhile.", float64(len(rep.SkippedItems))),
		promfile.Gauge("dry_run", "1 when the last run was a dry run.", boolFloat(rep.DryRun)),
	}
	if opts.IO.ProgressEnabled() {
		fmt.Fprintf(opts.IO.ErrOut, "repair: %d files in %s (%s files/s)\n", rep.Scanned, elapsed.Round(time.Millisecond), rate(float64(rep.Scanned), elapsed))
	}
	if cfg.JSON() {
		if err := output.JSON(opts.IO.Out, RepairJSON{StoreJSON: cmdutil.StoreName{URI: u.String(), Layout: layout}.JSON(), Report: rep}); err != nil {
			return err
		}
	} else {
		printRepair(opts.IO, u, layout, rep)
	}
	if rep.Corrupt > 0 {
		corrupt, foreign := splitForeign(rep.CorruptItems)
		return found(int64(len(corrupt)), int64(len(foreign)))
	}
	return nil
}

// splitForeign separates the items that are not part of the layout (code
// foreign) from the corrupt versions.
func splitForeign(items []repair.CorruptItem) (corrupt, foreign []repair.CorruptItem) {
	for _, it := range items {
		if it.Code == artifacts.CodeForeign {
			foreign = append(foreign, it)
		} else {
			corrupt = append(corrupt, it)
		}
	}
	return corrupt, foreign
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func printRepair(ios *iostreams.IOStreams, u cmdutil.StoreURI, layout string, rep repair.Report) {
	w := ios.Out
	st := output.NewStyles(ios)
	verb, title := "removed", "REMOVED"
	if rep.DryRun {
		verb, title = "would remove", "WOULD REMOVE"
	}
	fmt.Fprint(w, cmdutil.StoreName{URI: u.String(), Layout: layout}.Line(st))
	if rep.DryRun {
		fmt.Fprint(w, st.Warn(" (dry run: nothing was changed)"))
	}
	fmt.Fprintln(w)
	corrupt, foreign := splitForeign(rep.CorruptItems)
	fmt.Fprintf(w, "scanned %d files: %s %d, %d reservations preserved, %d corrupt",
		rep.Scanned, verb, rep.Removed, rep.ReservationsPreserved, len(corrupt))
	if len(foreign) > 0 {
		fmt.Fprintf(w, ", %d not part of the layout", len(foreign))
	}
	if rep.Young > 0 {
		fmt.Fprintf(w, ", %d younger than the grace period left alone", rep.Young)
	}
	fmt.Fprintln(w)
	if len(rep.RemovedItems) > 0 {
		fmt.Fprintln(w)
		t := output.NewTable(ios, "SCOPE", "ARTIFACT", title, "AGE", "SIZE", "REASON")
		t.NoTruncate(3, 4, 5)
		owners := map[string][2]string{}
		for _, it := range rep.RemovedItems {
			dir := filepath.Dir(it.Path)
			o, ok := owners[dir]
			if it.Scope != nil {
				o, ok = [2]string{it.Scope.String(), strconv.Quote(it.Name)}, true
			}
			if !ok {
				o = nameDirOwner(dir)
				owners[dir] = o
			}
			t.Row(o[0], o[1], filepath.Base(it.Path), age(it.Age), output.Size(it.Size), it.Reason)
		}
		_ = t.Render()
	}
	if len(rep.SkippedItems) > 0 {
		fmt.Fprintf(w, "\n%d left alone after all (they changed while repair ran):\n", len(rep.SkippedItems))
		for _, it := range rep.SkippedItems {
			fmt.Fprintf(w, "  %s: %s\n", it.Path, it.Reason)
		}
	}
	corruptSection(ios, st, corrupt)
	foreignSection(ios, st, foreign)
	if len(rep.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range rep.Notes {
			fmt.Fprintf(w, "note: %s\n", output.Escape(n))
		}
	}
}

// age formats a file age compactly: 45s, 12m, 3h, 4d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// nameDirOwner names the scope and artifact of a name directory (or, for
// a gs:// store, of the objects under one name prefix) from the first of
// its records that decodes; without one, the directories' hashes stand in,
// shortened ("scope 1d13…", "name 93a7…").
func nameDirOwner(dir string) [2]string {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".meta") {
			continue
		}
		b, err := osutil.ReadFileMax(filepath.Join(dir, e.Name()), 1<<20)
		if err != nil {
			continue
		}
		if rec, err := artifacts.DecodeRecord(b); err == nil {
			return [2]string{rec.Scope.String(), strconv.Quote(rec.Name)}
		}
	}
	short := func(h string) string {
		if len(h) > 12 {
			return h[:12] + output.Ellipsis
		}
		return h
	}
	return [2]string{"scope " + short(filepath.Base(filepath.Dir(filepath.Dir(dir)))), "name " + short(filepath.Base(dir))}
}
