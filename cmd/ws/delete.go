package wscmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/sweep"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// DeleteOptions are the flags and dependencies of "ws delete".
type DeleteOptions struct {
	deps
	// StoreURI returns the parsed --store.
	StoreURI func() (cmdutil.StoreURI, error)

	// Scope are --app, --user and --session: the session to delete.
	Scope cmdutil.ScopeFlags
	// Discard is --discard: remove without a snapshot, under a confirmed
	// plan.
	Discard bool
	// WithArtifacts is --with-artifacts: delete the session scope's
	// artifacts too, under the same plan.
	WithArtifacts bool
	// AllowNumberReuse is --allow-number-reuse: execute a plan whose
	// deleted numbers the layout hands out again.
	AllowNumberReuse bool
	// Confirm is --confirm (a plan's JSON or its plan_id); ConfirmSet is
	// true when it was given.
	Confirm    string
	ConfirmSet bool
	// ConfirmFile is --confirm-file (- for standard input).
	ConfirmFile string
}

// DeletedArtifact is one artifact version "ws delete" deleted.
type DeletedArtifact struct {
	Name    string `json:"name"`
	Version int64  `json:"version"`
	Size    int64  `json:"size"`
	Digest  string `json:"digest"`
}

// DeleteOutput is the output of "ws delete -o json".
type DeleteOutput struct {
	// StoreJSON names the store and its layout.
	cmdutil.StoreJSON
	Scratch string           `json:"scratch"`
	Scope   *artifacts.Scope `json:"scope"`
	Dir     string           `json:"dir"`
	// Workspace is the directory's item; null when the session had none.
	Workspace *SweepItem `json:"workspace"`
	// Recovered lists what an interrupted delete of the same directory
	// had left, and what became of it.
	Recovered []SweepItem `json:"recovered"`
	// Deleted lists the artifact versions deleted (--with-artifacts).
	Deleted []DeletedArtifact `json:"deleted"`
	PlanID  string            `json:"plan_id,omitempty"`
}

// NewCmdDelete returns "ws delete". runF, when not nil, replaces the run
// function (tests of flag parsing).
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{deps: depsOf(f), StoreURI: f.StoreURI}
	cmd := &cobra.Command{
		Use:   "delete --app A --user U --session S [--discard | --with-artifacts] [--confirm PLAN | --confirm-file FILE|-]",
		Short: "Delete the workspace of a session that has ended",
		Long: `Delete the workspace of the session --app A --user U --session S from the
--scratch root, however recently it was used (the session has ended), the
way "ws sweep" removes an idle one: the tree is put into --store as a new
version of the session's workspace.zip (unless the latest version already
holds it), that version is read back and must list exactly the tree, and
only then is the directory renamed to a tombstone and removed. A delete
killed at any moment leaves the workspace either as its directory or as a
verified snapshot; running it again (or the next sweep) finishes it.

Never removed, reported as skipped (exit status 3): a directory whose index
is missing, does not decode, or names another scope; a workspace a live
session holds locked; one touched during the delete; one holding entries a
snapshot cannot hold (symbolic links, FIFOs, sockets, devices), unless it
is discarded; any store failure.

--discard removes the workspace WITHOUT a snapshot, and only after a plan
is confirmed, as "artifacts delete" does: without --confirm the plan is
printed and the command exits with status 4, changing nothing.
--with-artifacts deletes, besides, every version of every artifact of the
session scope (and so implies --discard: a snapshot would be deleted with
the rest), under the same plan: one plan, one confirmation. The workspace
goes first; when it cannot be removed safely, no artifact is deleted. A
session whose directory is already gone can still have its artifacts
deleted this way. The plan:
  {"action": "delete-session", "scratch", "store", "scope",
   "workspace": {"dir", "scope", "bytes", "files", "last_access",
   "fingerprint"} | null,
   "artifacts": [{"name", "versions": [{"version", "size", "digest", "token"}]}],
   "plan_id", "layout"}
plan_id is the lowercase hex SHA-256 of the plan's canonical JSON (without
plan_id and layout, fields in that order, no whitespace, HTML escaping
off). A workspace touched, or an artifact version added, deleted or
rewritten since makes the confirmation stale (exit 4, nothing deleted).

The delete takes the scratch root's sweep lock (.agentstore-sweep.lock): a
running sweep or delete makes it exit with status 5.

With -o json: {"store", "layout", "scratch", "scope", "dir",
"workspace": {"dir", "scope", "decision", "reason", "snapshot_version",
...} | null, "recovered": [...], "deleted": [{"name", "version", "size",
"digest"}], "plan_id"}.`,
		Example: `  # snapshot, verify, then remove
  agentstore ws delete --scratch /var/lib/agents/scratch --store /var/lib/agents/store \
      --app demo-a --user user-42 --session session-7

  # remove the workspace and every artifact of the session: plan (exit 4), then confirm
  agentstore ws delete --scratch /scratch --store /store --app demo-a --user user-42 \
      --session session-7 --with-artifacts -o json > plan.json
  agentstore ws delete --scratch /scratch --store /store --app demo-a --user user-42 \
      --session session-7 --with-artifacts --confirm-file plan.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.Scope.Scope(true, artifacts.KindSession); err != nil {
				return err
			}
			fl := cmd.Flags()
			opts.ConfirmSet = fl.Changed("confirm")
			if opts.ConfirmSet && fl.Changed("confirm-file") {
				return cmdutil.Usagef("give --confirm or --confirm-file, not both")
			}
			if fl.Changed("confirm-file") && opts.ConfirmFile == "" {
				return cmdutil.Usagef("--confirm-file needs a file name, or - for standard input")
			}
			if (opts.ConfirmSet || opts.ConfirmFile != "") && !opts.Discard && !opts.WithArtifacts {
				return cmdutil.Usagef("a confirmation is for --discard or --with-artifacts: a delete with a snapshot needs none")
			}
			if opts.AllowNumberReuse && !opts.WithArtifacts {
				return cmdutil.Usagef("--allow-number-reuse is for --with-artifacts: only deleting artifacts can free a number")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDelete(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.Scope)
	cmdutil.SetExitStatusNote(cmd, `1 also when the session has no workspace (and, with --with-artifacts, no
  artifacts) (not_found)
3  the workspace could not be removed safely (skipped: not this session's
   workspace, locked by a live session, touched, unsnapshottable, or a
   store failure); nothing was deleted
4  --discard or --with-artifacts without a confirmation, or with one that
   no longer matches the plan; nothing was deleted
5  a sweep or another delete holds the lock on this scratch root`)
	fl := cmd.Flags()
	fl.BoolVar(&opts.Discard, "discard", false, "remove without a snapshot, after confirming a plan")
	fl.BoolVar(&opts.WithArtifacts, "with-artifacts", false, "delete the session's artifacts too, under the same plan (implies --discard)")
	fl.BoolVar(&opts.AllowNumberReuse, "allow-number-reuse", false, "with --with-artifacts, execute a plan whose deleted numbers the layout will hand out again")
	fl.StringVar(&opts.Confirm, "confirm", "", "the plan to execute: its JSON or its plan_id")
	fl.StringVar(&opts.ConfirmFile, "confirm-file", "", "read the plan's JSON from `FILE` (- for standard input)")
	return cmd
}

func runDelete(ctx context.Context, opts *DeleteOptions) (err error) {
	scope, err := opts.Scope.Scope(true, artifacts.KindSession)
	if err != nil {
		return err
	}
	cfg, err := opts.scratch()
	if err != nil {
		return err
	}
	var conf *sweep.SessionConfirmation
	switch {
	case opts.ConfirmSet:
		c, err := sweep.ParseSessionConfirmation(opts.Confirm)
		if err != nil {
			return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: errors.New(artifacts.ReasonOf(err))}
		}
		conf = &c
	case opts.ConfirmFile != "":
		c, err := readSessionConfirmation(opts)
		if err != nil {
			return err
		}
		conf = &c
	}
	if cfg.StoreDefault || cfg.Store == "" {
		return cmdutil.Usagef("ws delete needs the store that holds the session's snapshots: use --store URI or set %s", cmdutil.EnvVar(cmdutil.KeyStore))
	}
	u, err := opts.StoreURI()
	if err != nil {
		return err
	}
	// Only a snapshot writes, and only of a directory that exists: else a
	// missing store stays missing.
	open := opts.OpenStore
	if _, err := os.Lstat(filepath.Join(cfg.Scratch, workspace.DirName(scope.App, scope.User, scope.Session))); err == nil && !opts.Discard && !opts.WithArtifacts {
		open = opts.CreateStore
	}
	st, err := open(ctx)
	if err != nil {
		return err
	}
	if _, err := os.Stat(cfg.Scratch); err != nil {
		return artifacts.Errorf(artifacts.CodeNotFound, "ws delete", nil, "the scratch root %s does not exist", cfg.Scratch)
	}
	l, err := lock.Acquire(filepath.Join(cfg.Scratch, sweep.LockFile), lock.Options{Purpose: "ws delete"})
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
	ctx, cancel := l.Context(ctx)
	defer cancel()
	rep, err := sweep.DeleteSession(ctx, sweep.SessionOptions{
		Scratch: cfg.Scratch, Store: st, StoreURI: u.String(), Scope: scope,
		Discard: opts.Discard, WithArtifacts: opts.WithArtifacts, Confirm: conf,
		AllowNumberReuse: opts.AllowNumberReuse,
		Now:              opts.Now, BeforeExecute: l.Refresh,
	})
	name := cmdutil.NameStore(u, st)
	var cerr *sweep.ConfirmationError
	if errors.As(err, &cerr) && rep != nil && rep.Plan != nil {
		rep.Plan.Layout = name.Layout
		if perr := printSessionPlan(opts, cfg, name, rep.Plan); perr != nil {
			return perr
		}
		if !cerr.Stale && conf == nil {
			cerr.Msg += "; run: " + nextDeleteCommand(cfg, u, opts, scope, rep.Plan)
		}
		return err
	}
	if rep != nil {
		out := deleteOutput(rep)
		out.StoreJSON = name.JSON()
		if cfg.JSON() {
			if perr := output.JSON(opts.IO.Out, out); perr != nil && err == nil {
				err = perr
			}
		} else {
			printDelete(opts, name, rep)
		}
	}
	if err != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			return fmt.Errorf("%w (%v)", err, c)
		}
		return err
	}
	if rep.Problems() > 0 {
		return &cmdutil.ProblemsFound{Msg: fmt.Sprintf("the workspace of %s was not removed: %s", scope, rep.Workspace.Reason)}
	}
	return nil
}

func readSessionConfirmation(opts *DeleteOptions) (sweep.SessionConfirmation, error) {
	var c sweep.SessionConfirmation
	var err error
	if opts.ConfirmFile == "-" {
		c, err = sweep.ReadSessionConfirmation(opts.IO.In)
	} else {
		f, oerr := os.Open(opts.ConfirmFile)
		if oerr != nil {
			return c, &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: fmt.Errorf("--confirm-file: %v", oerr)}
		}
		defer f.Close()
		c, err = sweep.ReadSessionConfirmation(f)
	}
	if artifacts.CodeOf(err) == artifacts.CodeInvalidArgument {
		return c, &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: errors.New(artifacts.ReasonOf(err))}
	}
	return c, err
}

// nextDeleteCommand is the command line that confirms a plan.
// A plan that deletes a number the layout hands out again (its warning
// says so) is confirmed with --allow-number-reuse: the line runs as
// printed.
func nextDeleteCommand(cfg *cmdutil.Config, u cmdutil.StoreURI, opts *DeleteOptions, scope artifacts.Scope, plan *sweep.SessionPlan) string {
	planID := plan.PlanID
	s := "agentstore ws delete --scratch " + shell.Quote(cfg.Scratch) + " --store " + shell.Quote(u.String()) +
		" --app " + shell.Quote(scope.App) + " --user " + shell.Quote(scope.User) + " --session " + shell.Quote(scope.Session)
	if opts.WithArtifacts {
		s += " --with-artifacts"
		if opts.AllowNumberReuse || slices.ContainsFunc(plan.Artifacts, func(a sweep.SessionArtifact) bool { return a.ReusedNumber != nil }) {
			s += " --allow-number-reuse"
		}
	} else {
		s += " --discard"
	}
	return s + " --confirm " + planID
}

func deleteOutput(rep *sweep.SessionReport) DeleteOutput {
	sc := rep.Scope
	out := DeleteOutput{Scratch: rep.Scratch, Scope: &sc, Dir: rep.Dir, Recovered: []SweepItem{}, Deleted: []DeletedArtifact{}}
	items := sweepOutput(&sweep.Report{Items: rep.Recovered}).Items
	out.Recovered = append(out.Recovered, items...)
	if rep.Workspace != nil {
		it := sweepOutput(&sweep.Report{Items: []sweep.Item{*rep.Workspace}}).Items[0]
		out.Workspace = &it
	}
	if rep.Plan != nil {
		out.PlanID = rep.Plan.PlanID
	}
	for _, r := range rep.Deleted {
		out.Deleted = append(out.Deleted, DeletedArtifact{Name: r.Name, Version: r.Version, Size: r.Size, Digest: r.Digest})
	}
	return out
}

func printSessionPlan(opts *DeleteOptions, cfg *cmdutil.Config, name cmdutil.StoreName, p *sweep.SessionPlan) error {
	if cfg.JSON() {
		return output.JSON(opts.IO.Out, p)
	}
	st := output.NewStyles(opts.IO)
	w := opts.IO.Out
	n, bytes := p.Versions()
	ws := "no workspace"
	if p.Workspace != nil {
		ws = fmt.Sprintf("the workspace %s (%s, %s) WITHOUT a snapshot", p.Workspace.Dir, output.Size(p.Workspace.Bytes), plural(p.Workspace.Files, "file", "files"))
	}
	fmt.Fprintln(w, name.Line(st))
	fmt.Fprintf(w, "%s %s", st.Bold("Plan: delete"), ws)
	if len(p.Artifacts) > 0 || n > 0 {
		fmt.Fprintf(w, ", and %s of %s (%s)", plural(n, "artifact version", "artifact versions"), plural(len(p.Artifacts), "name", "names"), output.Size(bytes))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  scope:    %s\n", p.Scope)
	fmt.Fprintf(w, "  scratch:  %s\n", p.Scratch)
	fmt.Fprintf(w, "  store:    %s\n", p.Store)
	fmt.Fprintf(w, "  plan_id:  %s\n", p.PlanID)
	if len(p.Artifacts) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := output.NewTable(opts.IO, "NAME", "VERSION", "SIZE", "DIGEST")
	t.NoTruncate(1, 2)
	for _, a := range p.Artifacts {
		for _, v := range a.Versions {
			t.Row(safe(a.Name), strconv.FormatInt(v.Version, 10), output.Size(v.Size), v.Digest)
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, a := range p.Artifacts {
		if a.ReusedNumber != nil {
			fmt.Fprintf(w, "%s %s: %s; confirming needs --allow-number-reuse\n", st.Warn("warning:"), safe(a.Name), a.Note)
		}
	}
	return nil
}

func printDelete(opts *DeleteOptions, name cmdutil.StoreName, rep *sweep.SessionReport) {
	st := output.NewStyles(opts.IO)
	w := opts.IO.Out
	fmt.Fprintln(w, name.Line(st))
	fmt.Fprintln(w, cmdutil.ScratchLine(st, rep.Scratch))
	for _, it := range rep.Recovered {
		fmt.Fprintf(w, "%s %s: %s\n", st.Bold("Interrupted delete"), safe(it.Dir), it.Reason)
	}
	if it := rep.Workspace; it != nil {
		dec := string(it.Decision)
		switch it.Decision {
		case sweep.Removed:
			dec = st.OK(dec)
		case sweep.Skipped, sweep.Kept:
			dec = st.Bad(dec)
		}
		fmt.Fprintf(w, "%s %s %s: %s\n", st.Bold("Workspace"), rep.Dir, dec, it.Reason)
	}
	if len(rep.Deleted) > 0 {
		fmt.Fprintf(w, "%s %s of %s\n", st.OK("Deleted"), plural(len(rep.Deleted), "artifact version", "artifact versions"), rep.Scope)
	}
}
