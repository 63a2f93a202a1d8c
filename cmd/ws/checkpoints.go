package wscmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// checkAt checks the syntax of a checkpoint selector (--at, --from,
// --to): a checkpoint number (the CKPT column of "ws history") or a
// manifest version NAME@VERSION. A bad one is a usage error.
func checkAt(flag, at string) error {
	if name, v, ok := strings.Cut(at, "@"); ok {
		if _, isGen := checkpoint.ParseGen(name, checkpoint.ManifestName); !isGen {
			return cmdutil.Usagef("%s %q: want a checkpoint number or %s@VERSION", flag, at, checkpoint.ManifestName)
		}
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			return cmdutil.Usagef("%s %q: want a checkpoint number or %s@VERSION", flag, at, checkpoint.ManifestName)
		}
		return nil
	}
	if n, err := strconv.ParseInt(at, 10, 64); err != nil || n < 1 {
		return cmdutil.Usagef("%s %q: want a checkpoint number (1 or more; see ws history) or %s@VERSION", flag, at, checkpoint.ManifestName)
	}
	return nil
}

// resolveAt returns the manifest a checked selector names: by NAME@VERSION
// directly, by number the one of History with that seq; not_found when the
// session has none such.
func resolveAt(ctx context.Context, cp *checkpoint.Checkpoints, op, at string) (checkpoint.Ref, error) {
	if name, v, ok := strings.Cut(at, "@"); ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		ref := checkpoint.Ref{Name: name, Version: n}
		if _, err := cp.Load(ctx, ref); err != nil {
			return checkpoint.Ref{}, err
		}
		return ref, nil
	}
	seq, _ := strconv.ParseInt(at, 10, 64)
	rows, err := history(ctx, cp, op)
	if err != nil {
		return checkpoint.Ref{}, err
	}
	var found []checkpoint.Ref
	for _, r := range rows {
		if r.Seq == seq {
			found = append(found, r.Ref)
		}
	}
	switch len(found) {
	case 0:
		return checkpoint.Ref{}, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "%s has no checkpoint %d (it has %d to %d: see ws history)", cp.Scope(), seq, rows[0].Seq, rows[len(rows)-1].Seq)
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, r := range found {
		names[i] = r.String()
	}
	return checkpoint.Ref{}, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "%s has %d checkpoints numbered %d (%s): name one as NAME@VERSION", cp.Scope(), len(found), seq, strings.Join(names, ", "))
}

// history returns the session's checkpoints, oldest first, or not_found
// when it has none: an empty history is never a healthy answer.
func history(ctx context.Context, cp *checkpoint.Checkpoints, op string) ([]checkpoint.HistoryRow, error) {
	rows, err := cp.History(ctx)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "%s has no checkpoint (incremental snapshot): make one with ws snapshot --snapshot-format incremental", cp.Scope())
	}
	return rows, nil
}

// ckptSession is what the checkpoint commands open: the session scope,
// the configuration, a manager (to close), the store's name and the
// session's checkpoints.
type ckptSession struct {
	scope artifacts.Scope
	cfg   *cmdutil.Config
	m     *workspace.Manager
	name  cmdutil.StoreName
	cp    *checkpoint.Checkpoints
}

// openCheckpoints opens the store for reading and the checkpoints of the
// session flags name.
func (d deps) openCheckpoints(ctx context.Context, flags cmdutil.ScopeFlags) (*ckptSession, error) {
	scope, cfg, m, name, err := d.sessionManager(ctx, flags, false)
	if err != nil {
		return nil, err
	}
	cp, err := m.Checkpoints(scope)
	if err != nil {
		m.Close()
		return nil, err
	}
	return &ckptSession{scope: scope, cfg: cfg, m: m, name: name, cp: cp}, nil
}

// HistoryOptions are the inputs of "ws history".
type HistoryOptions struct {
	deps
	Scope cmdutil.ScopeFlags
}

// HistoryRow is one checkpoint of "ws history -o json".
type HistoryRow struct {
	// Checkpoint is the checkpoint's number (the manifest's seq), what
	// --at takes; Manifest its manifest version (NAME@VERSION).
	Checkpoint int64  `json:"checkpoint"`
	Manifest   string `json:"manifest"`
	// Parent is the manifest it was built on, "" for the first.
	Parent  string    `json:"parent"`
	Created time.Time `json:"created"`
	Turn    string    `json:"turn"`
	Files   int       `json:"files"`
	Bytes   int64     `json:"bytes"`
	// Added, Changed and Removed count the paths that differ from the
	// previous checkpoint listed; AddedBytes is what it stored in packs.
	Added      int   `json:"added"`
	Changed    int   `json:"changed"`
	Removed    int   `json:"removed"`
	AddedBytes int64 `json:"added_bytes"`
}

// HistoryOutput is the output of "ws history -o json".
type HistoryOutput struct {
	// StoreJSON names the store and its layout, Scratch the scratch root.
	cmdutil.StoreJSON
	Scratch     string           `json:"scratch"`
	Scope       *artifacts.Scope `json:"scope"`
	Checkpoints []HistoryRow     `json:"checkpoints"`
}

// NewCmdHistory returns "ws history". runF, when not nil, replaces the
// run function.
func NewCmdHistory(f *cmdutil.Factory, runF func(context.Context, *HistoryOptions) error) *cobra.Command {
	opts := &HistoryOptions{deps: depsOf(f)}
	cmd := &cobra.Command{
		Use:   "history --app A --user U --session S",
		Short: "List a session's checkpoints (incremental snapshots)",
		Long: `List the checkpoints (incremental snapshots) of a session held in --store,
oldest first: one row per checkpoint with its number (CKPT, what "ws diff"
and "ws restore" take), its manifest version, when it was taken, its turn,
the tree's files, the paths added, changed and removed since the previous
checkpoint listed, and the bytes it stored in new packs. A session keeps
its last 100 checkpoints; older ones are deleted as new ones are taken.
Whole workspace.zip snapshots are not listed: see "artifacts versions
--name workspace.zip".

A session with no checkpoint is an error (not_found, exit status 1),
never an empty list.

With -o json: {"store","layout","scratch","scope","checkpoints":
[{"checkpoint","manifest","parent","created","turn","files","bytes",
"added","changed","removed","added_bytes"}]}.`,
		Example: `  agentstore ws history --scratch /var/lib/agents/scratch --store /var/lib/agents/store \
    --app demo-a --user user-42 --session session-7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.Scope.Scope(true, artifacts.KindSession); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runHistory(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	cmdutil.SetExitStatusNote(cmd, `1 also when the session has no checkpoint (not_found) or one is corrupt`)
	return cmd
}

func runHistory(ctx context.Context, opts *HistoryOptions) error {
	const op = "ws history"
	cs, err := opts.openCheckpoints(ctx, opts.Scope)
	if err != nil {
		return err
	}
	defer cs.m.Close()
	scope, cfg, name, cp := cs.scope, cs.cfg, cs.name, cs.cp
	rows, err := history(ctx, cp, op)
	if err != nil {
		return err
	}
	out := HistoryOutput{StoreJSON: name.JSON(), Scratch: cfg.Scratch, Scope: scopeJSON(scope), Checkpoints: make([]HistoryRow, len(rows))}
	for i, r := range rows {
		h := HistoryRow{Checkpoint: r.Seq, Manifest: r.Ref.String(), Created: r.Created.UTC(), Turn: r.Turn,
			Files: r.Files, Bytes: r.Bytes, Added: r.Added, Changed: r.Changed, Removed: r.Removed, AddedBytes: r.AddedBytes}
		if r.Parent != nil {
			h.Parent = r.Parent.String()
		}
		out.Checkpoints[i] = h
	}
	if cfg.JSON() {
		return output.JSON(opts.IO.Out, out)
	}
	header(opts.IO, name, cfg.Scratch)
	tb := output.NewTable(opts.IO, "CKPT", "MANIFEST", "CREATED", "TURN", "FILES", "ADDED", "CHANGED", "REMOVED", "STORED")
	tb.NoTruncate(0, 4, 5, 6, 7, 8)
	for _, h := range out.Checkpoints {
		tb.Row(strconv.FormatInt(h.Checkpoint, 10), h.Manifest, output.Time(h.Created), safe(h.Turn), strconv.Itoa(h.Files),
			strconv.Itoa(h.Added), strconv.Itoa(h.Changed), strconv.Itoa(h.Removed), output.Size(h.AddedBytes))
	}
	return tb.Render()
}

// DiffOptions are the inputs of "ws diff".
type DiffOptions struct {
	deps
	Scope cmdutil.ScopeFlags
	// From and To are --from and --to: checkpoints ("" for From: the
	// latest; "" for To: the workspace on disk).
	From, To string
	// Stat is --stat: counts and sizes only.
	Stat bool
}

// DiffStat sums the changes of "ws diff".
type DiffStat struct {
	Added    int `json:"added"`
	Modified int `json:"modified"`
	Removed  int `json:"removed"`
	// AddedBytes is the new size of added files, RemovedBytes the old
	// size of removed ones; ModifiedBytes the new size of modified ones.
	AddedBytes    int64 `json:"added_bytes"`
	ModifiedBytes int64 `json:"modified_bytes"`
	RemovedBytes  int64 `json:"removed_bytes"`
}

// DiffOutput is the output of "ws diff -o json".
type DiffOutput struct {
	// StoreJSON names the store and its layout, Scratch the scratch root.
	cmdutil.StoreJSON
	Scratch string           `json:"scratch"`
	Scope   *artifacts.Scope `json:"scope"`
	// From is the older checkpoint's manifest (NAME@VERSION); To the newer
	// one's, or "workspace" for the directory on disk.
	From    string              `json:"from"`
	To      string              `json:"to"`
	Changes []checkpoint.Change `json:"changes"`
	Stat    DiffStat            `json:"stat"`
}

// NewCmdDiff returns "ws diff". runF, when not nil, replaces the run
// function.
func NewCmdDiff(f *cmdutil.Factory, runF func(context.Context, *DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{deps: depsOf(f)}
	cmd := &cobra.Command{
		Use:   "diff --app A --user U --session S [--from V] [--to V] [--stat]",
		Short: "Show what changed between checkpoints, or since the latest one",
		Long: `List the paths added, modified and removed between two checkpoints of a
session (--from and --to), or from a checkpoint (--from, default the latest)
to the session's workspace on disk under the --scratch root (no --to). A
checkpoint is its number (CKPT in "ws history") or its manifest version
workspace.manifest@VERSION. Files whose size, time and executable bit are the
checkpoint's are taken as unchanged; others are read to compare their
content. Nothing is written.

--stat prints only the counts and sizes. The exit status is 0 whether or
not anything changed.

With -o json: {"store","layout","scratch","scope","from","to","changes":
[{"path","kind","type","old_size","new_size"}],"stat":{"added",
"modified","removed","added_bytes","modified_bytes","removed_bytes"}};
"to" is "workspace" for the directory on disk; changes are listed with
--stat too.`,
		Example: `  # what the agent changed since the latest checkpoint
  agentstore ws diff --scratch /scratch --store /store --app demo-a --user user-42 --session session-7
  # between checkpoints 3 and 5, counts only
  agentstore ws diff --scratch /scratch --store /store --app demo-a --user user-42 --session session-7 \
    --from 3 --to 5 --stat`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.Scope.Scope(true, artifacts.KindSession); err != nil {
				return err
			}
			for _, s := range []struct{ flag, v string }{{"--from", opts.From}, {"--to", opts.To}} {
				if cmd.Flags().Changed(strings.TrimPrefix(s.flag, "--")) {
					if err := checkAt(s.flag, s.v); err != nil {
						return err
					}
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDiff(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	fl := cmd.Flags()
	fl.StringVar(&opts.From, "from", "", "the older checkpoint (default: the latest)")
	fl.StringVar(&opts.To, "to", "", "the newer checkpoint (default: the workspace on disk)")
	fl.BoolVar(&opts.Stat, "stat", false, "print only the counts and sizes")
	cmdutil.SetExitStatusNote(cmd, `1 also when the session has no checkpoint, or not the one named
  (not_found), or no workspace on disk to compare with`)
	return cmd
}

func runDiff(ctx context.Context, opts *DiffOptions) error {
	const op = "ws diff"
	cs, err := opts.openCheckpoints(ctx, opts.Scope)
	if err != nil {
		return err
	}
	defer cs.m.Close()
	scope, cfg, m, name, cp := cs.scope, cs.cfg, cs.m, cs.name, cs.cp
	var from checkpoint.Ref
	if opts.From != "" {
		from, err = resolveAt(ctx, cp, op, opts.From)
	} else {
		var rows []checkpoint.HistoryRow
		rows, err = history(ctx, cp, op)
		if err == nil {
			from = rows[len(rows)-1].Ref
		}
	}
	if err != nil {
		return err
	}
	out := DiffOutput{StoreJSON: name.JSON(), Scratch: cfg.Scratch, Scope: scopeJSON(scope), From: from.String(), To: "workspace"}
	if opts.To == "" {
		out.Changes, err = m.DiffCheckpoint(ctx, scope, from)
	} else {
		out.Changes, err = diffCheckpoints(ctx, cp, op, from, opts.To, &out.To)
	}
	if err != nil {
		return err
	}
	if out.Changes == nil {
		out.Changes = []checkpoint.Change{}
	}
	for _, c := range out.Changes {
		switch c.Kind {
		case checkpoint.Added:
			out.Stat.Added++
			out.Stat.AddedBytes += c.NewSize
		case checkpoint.Modified:
			out.Stat.Modified++
			out.Stat.ModifiedBytes += c.NewSize
		case checkpoint.Removed:
			out.Stat.Removed++
			out.Stat.RemovedBytes += c.OldSize
		}
	}
	if cfg.JSON() {
		return output.JSON(opts.IO.Out, out)
	}
	w := opts.IO.Out
	header(opts.IO, name, cfg.Scratch)
	fmt.Fprintf(w, "diff %s %s -> %s\n", scope, out.From, out.To)
	if !opts.Stat {
		for _, c := range out.Changes {
			p := safe(c.Path)
			if c.Type == checkpoint.TypeDir {
				p += "/"
			}
			switch c.Kind {
			case checkpoint.Added:
				fmt.Fprintf(w, "  added     %s (%s)\n", p, output.Size(c.NewSize))
			case checkpoint.Modified:
				fmt.Fprintf(w, "  modified  %s (%s -> %s)\n", p, output.Size(c.OldSize), output.Size(c.NewSize))
			case checkpoint.Removed:
				fmt.Fprintf(w, "  removed   %s (%s)\n", p, output.Size(c.OldSize))
			}
		}
	}
	s := out.Stat
	fmt.Fprintf(w, "%d added (%s), %d modified (%s), %d removed (%s)\n",
		s.Added, output.Size(s.AddedBytes), s.Modified, output.Size(s.ModifiedBytes), s.Removed, output.Size(s.RemovedBytes))
	return nil
}

// diffCheckpoints returns the changes from the manifest from to the
// checkpoint the selector to names, whose manifest it stores in *toName.
func diffCheckpoints(ctx context.Context, cp *checkpoint.Checkpoints, op string, from checkpoint.Ref, to string, toName *string) ([]checkpoint.Change, error) {
	ref, err := resolveAt(ctx, cp, op, to)
	if err != nil {
		return nil, err
	}
	*toName = ref.String()
	a, err := cp.Load(ctx, from)
	if err != nil {
		return nil, err
	}
	b, err := cp.Load(ctx, ref)
	if err != nil {
		return nil, err
	}
	return checkpoint.Diff(a, b), nil
}

// RestoreOptions are the inputs of "ws restore".
type RestoreOptions struct {
	deps
	Scope cmdutil.ScopeFlags
	// At is --at: the checkpoint to restore.
	At string
	// Paths are the files and directories to restore (none: all).
	Paths []string
	// Force is --force: overwrite work no snapshot holds.
	Force bool
	// To is --to DIR: restore into a new directory instead.
	To string
}

// NewCmdRestore returns "ws restore". runF, when not nil, replaces the run
// function.
func NewCmdRestore(f *cmdutil.Factory, runF func(context.Context, *RestoreOptions) error) *cobra.Command {
	opts := &RestoreOptions{deps: depsOf(f)}
	cmd := &cobra.Command{
		Use:   "restore --app A --user U --session S --at V [--force | --to DIR] [PATH...]",
		Short: "Restore a session's workspace, or chosen files, from a checkpoint",
		Long: `Restore the checkpoint --at names (its number in "ws history", or its
manifest version workspace.manifest@VERSION) from --store, every blob
checked against its digest, all or nothing.

Without PATH the session's whole workspace under the --scratch root is
replaced by the checkpoint's tree, under hydrate's rule: when the workspace
holds work no snapshot has, the command lists what would be lost and exits
with status 4 (would_overwrite), changing nothing; --force overwrites it,
--to DIR restores into a new directory and leaves the workspace alone.

With PATH arguments only those files and directories (and the directories
above them) are restored, into the new directory --to DIR (required: a
workspace is replaced whole; copy what you need from DIR). A PATH the
checkpoint does not hold is an error and nothing is written.

With -o json: as "ws hydrate" ({"store","layout","scratch","scope",
"format","checkpoint","version","files","bytes","dir"}, or the refusal).`,
		Example: `  # the whole workspace as it was at checkpoint 3
  agentstore ws restore --scratch /scratch --store /store --app demo-a --user user-42 --session session-7 --at 3
  # one file of checkpoint 3, beside the workspace
  agentstore ws restore --scratch /scratch --store /store --app demo-a --user user-42 --session session-7 \
    --at 3 --to /tmp/ckpt-3 reports/by_region.csv`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.Scope.Scope(true, artifacts.KindSession); err != nil {
				return err
			}
			if !cmd.Flags().Changed("at") {
				return cmdutil.Usagef("give --at V: the checkpoint to restore (see ws history)")
			}
			if err := checkAt("--at", opts.At); err != nil {
				return err
			}
			if opts.Force && opts.To != "" {
				return cmdutil.Usagef("give --force or --to, not both: --to never touches the workspace")
			}
			if cmd.Flags().Changed("to") && opts.To == "" {
				return cmdutil.Usagef("--to needs a directory that does not exist yet")
			}
			opts.Paths = args
			if len(args) > 0 && opts.To == "" {
				return cmdutil.Usagef("restoring chosen paths needs --to DIR: a workspace is replaced whole, so the paths go into a new directory to copy from")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRestore(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	fl := cmd.Flags()
	fl.StringVar(&opts.At, "at", "", "the checkpoint to restore: its number (ws history) or workspace.manifest@VERSION")
	fl.BoolVar(&opts.Force, "force", false, "overwrite the workspace even when it holds work no snapshot has")
	fl.StringVar(&opts.To, "to", "", "restore into `DIR`, a new directory, leaving the workspace alone")
	_ = cmd.MarkFlagDirname("to")
	cmdutil.SetExitStatusNote(cmd, `1 also when the session has no such checkpoint or PATH (not_found), or a
  blob is corrupt (corrupt_artifact)
4  the workspace holds work no snapshot has (would_overwrite); nothing
   was changed
6  --to DIR exists already, or the workspace is in use (conflict)`)
	return cmd
}

func runRestore(ctx context.Context, opts *RestoreOptions) error {
	const op = "ws restore"
	cs, err := opts.openCheckpoints(ctx, opts.Scope)
	if err != nil {
		return err
	}
	defer cs.m.Close()
	scope, cfg, m, name, cp := cs.scope, cs.cfg, cs.m, cs.name, cs.cp
	ref, err := resolveAt(ctx, cp, op, opts.At)
	if err != nil {
		return err
	}
	update, done := progress(opts.IO, "restore")
	hopts := workspace.HydrateOptions{Progress: update, Force: opts.Force, Checkpoint: ref, Paths: opts.Paths}
	var res workspace.HydrateResult
	if opts.To != "" {
		res, err = m.HydrateTo(ctx, scope, artifacts.Latest, opts.To, hopts)
	} else {
		res, err = m.Hydrate(ctx, scope, artifacts.Latest, hopts)
	}
	done()
	if oe, ok := asOverwrite(err); ok {
		return refuseOverwrite(opts.deps, cfg, name, oe, "ws restore", "--at "+opts.At)
	}
	if err != nil {
		return err
	}
	return printHydrated(opts.deps, cfg, name, res, opts.To != "")
}
