package fscmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/promfile"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/repair"
)

// VerifyOptions are the flags and dependencies of "fs verify".
type VerifyOptions struct {
	IO        *iostreams.IOStreams
	Config    func() (*cmdutil.Config, error)
	StoreURI  func() (cmdutil.StoreURI, error)
	OpenStore func(context.Context) (*artifacts.Store, error)
	Now       func() time.Time

	Scope       cmdutil.ScopeFlags
	Sample      float64
	Seed        uint64
	MetricsFile string
}

// VerifyJSON is the JSON output of "fs verify": the store, the scope
// checked (null for all), then the report.
type VerifyJSON struct {
	cmdutil.StoreJSON
	Scope *artifacts.Scope `json:"scope"`
	repair.VerifyReport
}

// NewCmdVerify returns "fs verify". runF, when not nil, replaces the run
// function (tests of flag parsing).
func NewCmdVerify(f *cmdutil.Factory, runF func(context.Context, *VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{IO: f.IO, Config: f.Config, StoreURI: f.StoreURI, OpenStore: f.OpenStore, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "verify [--app A [--user U [--session S]]] [--sample PERCENT] [--metrics-file FILE]",
		Short: "Read every published version and check its record and payload",
		Long: `Read every published version of the store (or of one scope) and check that
its record decodes and belongs where it lies, and that its payload has the
size and SHA-256 the record says. Payloads are streamed, a few at a time.

--sample PERCENT checks the payloads of a random share of the versions
(records are always all read); the seed is printed, and --seed repeats the
same sample.

Each corrupt version is listed with the exact command that deletes it. A
version that cannot be read (permission denied, an I/O error) is not
corrupt: it is listed apart, as not checked, and the run exits with
status 1 and code permission_denied or io_error. A layout file that is a
symbolic link, a named pipe or another non-regular file is refused unread
and reported (code unsafe_store). Objects or files in the store's
namespace that are not part of its layout (a Google ADK object name that
does not end in a version number, say) are never guessed at: they are
listed by name as foreign.

In every session scope holding incremental snapshots (checkpoints:
workspace.manifest and workspace.pack), each manifest is read as hostile
input and its references are checked: every pack it names must exist with
the size and SHA-256 the manifest recorded, so that each of its blobs
lies inside its pack. A manifest that does not decode, or names a missing
or different pack, is a broken checkpoint, listed with the workspace
paths it breaks (exit status 3, as corrupt versions).
Verify only reads, takes no lock and may run while writers are active.

With --metrics-file FILE it writes Prometheus textfile-collector metrics
atomically: last success time, duration, the counters and the exit status.`,
		Example: `  agentstore fs verify --store /var/lib/agentstore
  agentstore fs verify --store /var/lib/agentstore --app demo --user u1 --sample 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.Scope.Scope(false); err != nil {
				return err
			}
			if opts.Sample <= 0 || opts.Sample > 100 {
				return cmdutil.Usagef("--sample %v is not a percentage above 0 and at most 100", opts.Sample)
			}
			if err := checkMetricsPath(opts.MetricsFile); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runVerify(cmd.Context(), opts)
		},
	}
	cmdutil.SetExitStatusNote(cmd, `1  also when some versions could not be read (permission_denied, io_error)
3  corrupt versions, broken checkpoints or foreign objects found`)
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	fl := cmd.Flags()
	fl.Float64Var(&opts.Sample, "sample", 100, "check the payloads of this `PERCENT` of the versions, picked at random")
	fl.Uint64Var(&opts.Seed, "seed", 0, "seed of the --sample choice (0: random; the seed used is reported)")
	fl.StringVar(&opts.MetricsFile, "metrics-file", "", "write Prometheus textfile metrics to `FILE` (atomically)")
	return cmd
}

func runVerify(ctx context.Context, opts *VerifyOptions) (err error) {
	start := opts.Now()
	m := runMetrics{Prefix: "agentstore_fs_verify", Start: start}
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
	scope, err := opts.Scope.Scope(false)
	if err != nil {
		return err
	}
	var only *artifacts.Scope
	if scope.Kind != "" {
		only = &scope
	}
	st, err := opts.OpenStore(ctx)
	if err != nil {
		return err
	}
	if !st.CanWalk() {
		return artifacts.Errorf(artifacts.CodeUnsupported, "verify", nil, "the %s store cannot walk its store", st.Capabilities().Name)
	}
	if only != nil {
		if err := cmdutil.CheckScope(ctx, st, *only); err != nil {
			return err
		}
	}
	storeArg := u.String()
	if u.Scheme == cmdutil.SchemeFile {
		storeArg = u.Root
	}
	prog := output.NewProgress(opts.IO)
	prog.Start("verify: checked")
	rep, err := repair.Verify(ctx, st, repair.VerifyOptions{
		Scope:    only,
		Sample:   opts.Sample,
		Seed:     opts.Seed,
		StoreArg: storeArg,
		Progress: prog.Update,
	})
	prog.Done()
	if err != nil {
		return err
	}
	elapsed := opts.Now().Sub(start)
	m.Values = []promfile.Metric{
		promfile.Gauge("versions", "Published versions found by the last run.", float64(rep.Versions)),
		promfile.Gauge("checked_versions", "Versions whose payloads the last run read and checked.", float64(rep.Checked)),
		promfile.Gauge("verified_bytes", "Payload bytes the last run read.", float64(rep.Bytes)),
		promfile.Gauge("corrupt_versions", "Corrupt versions found by the last run.", float64(rep.Corrupt)),
		promfile.Gauge("broken_checkpoints", "Checkpoints (incremental snapshot manifests) found naming a missing or different pack, or not decoding, by the last run.", float64(rep.BrokenCheckpoints)),
		promfile.Gauge("unreadable_versions", "Versions the last run could not read (permission or I/O errors), not known to be corrupt.", float64(rep.Unreadable)),
		promfile.Gauge("foreign_objects", "Objects or files in the store's namespace the last run found not part of its layout.", float64(rep.Foreign)),
		promfile.Gauge("sample_percent", "Share of versions whose payloads were checked, in percent.", rep.SamplePercent),
	}
	if opts.IO.ProgressEnabled() {
		fmt.Fprintf(opts.IO.ErrOut, "verify: %d versions, %s in %s (%s versions/s, %s/s)\n",
			rep.Checked, output.Size(rep.Bytes), elapsed.Round(time.Millisecond),
			rate(float64(rep.Checked), elapsed), output.Size(int64(float64(rep.Bytes)/max(elapsed.Seconds(), 1e-9))))
	}
	name := cmdutil.NameStore(u, st)
	if cfg.JSON() {
		if err := output.JSON(opts.IO.Out, VerifyJSON{StoreJSON: name.JSON(), Scope: only, VerifyReport: rep}); err != nil {
			return err
		}
	} else {
		w := opts.IO.Out
		sty := output.NewStyles(opts.IO)
		fmt.Fprint(w, name.Line(sty))
		if only != nil {
			fmt.Fprintf(w, ", scope %s", only)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%d scopes, %d published versions; checked %d payloads (%s)", rep.Scopes, rep.Versions, rep.Checked, output.Size(rep.Bytes))
		if rep.SamplePercent < 100 {
			fmt.Fprintf(w, ", a %v%% sample with --seed %d", rep.SamplePercent, rep.Seed)
		}
		fmt.Fprintln(w)
		if rep.Checkpoints > 0 {
			fmt.Fprintf(w, "%d checkpoints: references checked\n", rep.Checkpoints)
		}
		if rep.Corrupt == 0 && rep.Unreadable == 0 && rep.BrokenCheckpoints == 0 {
			fmt.Fprintln(w, sty.OK("no corrupt versions"))
		}
		corruptSection(opts.IO, sty, rep.CorruptItems)
		checkpointSection(opts.IO, sty, rep.CheckpointItems)
		if len(rep.CheckpointNotes) > 0 {
			fmt.Fprintln(w)
			for _, n := range rep.CheckpointNotes {
				fmt.Fprintf(w, "note: %s\n", output.Escape(n))
			}
		}
		unreadableSection(opts.IO, sty, rep.UnreadableItems)
		foreignSection(opts.IO, sty, rep.ForeignItems)
	}
	if rep.Unreadable > 0 {
		// An incomplete check is a failure (exit 1), whatever else it found.
		return unreadable(rep.UnreadableItems)
	}
	if rep.Corrupt > 0 || rep.Foreign > 0 || rep.BrokenCheckpoints > 0 {
		return foundBroken(rep.Corrupt, rep.BrokenCheckpoints, rep.Foreign)
	}
	return nil
}

// checkpointSection prints the broken checkpoints: the manifest, what is
// wrong, and the workspace paths it breaks.
func checkpointSection(ios *iostreams.IOStreams, st output.Styles, items []repair.CheckpointItem) {
	w := ios.Out
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", st.Bad(fmt.Sprintf("%d broken %s:", len(items), plural(len(items), "checkpoint", "checkpoints"))))
	for _, it := range items {
		fmt.Fprintf(w, "  %s %q v%d: %s\n", it.Scope, it.Manifest.Name, it.Manifest.Version, output.Escape(it.Reason))
		if it.PathCount == 0 {
			continue
		}
		paths := make([]string, len(it.Paths))
		for i, p := range it.Paths {
			paths[i] = output.Escape(p)
		}
		more := ""
		if n := it.PathCount - len(it.Paths); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		fmt.Fprintf(w, "    breaks %d %s: %s%s\n", it.PathCount, plural(it.PathCount, "path", "paths"), strings.Join(paths, ", "), more)
	}
}
