package fscmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
)

// MigrateOptions are the flags and dependencies of "fs migrate".
type MigrateOptions struct {
	IO        *iostreams.IOStreams
	Config    func() (*cmdutil.Config, error)
	StoreURI  func() (cmdutil.StoreURI, error)
	OpenStore func(context.Context) (*artifacts.Store, error)
	Logger    func() *slog.Logger

	// From is --from: the tree to migrate (adkfile.FromLegacy).
	From string
	// App is --app: the app the tree moves under ("": the store app).
	App string
	// Confirm is --confirm (ConfirmSet: given, even empty); ConfirmFile
	// is --confirm-file.
	Confirm     string
	ConfirmSet  bool
	ConfirmFile string
}

// MigrateResult is the JSON output of a confirmed "fs migrate".
type MigrateResult struct {
	cmdutil.StoreJSON
	From   string `json:"from"`
	App    string `json:"app"`
	PlanID string `json:"plan_id"`
	adkfile.MigrationResult
	// Left are the names the plan left in users/ (conflict, held).
	Left []adkfile.MigrationName `json:"left"`
}

// NewCmdMigrate returns "fs migrate". runF, when not nil, replaces the run
// function (tests of flag parsing).
func NewCmdMigrate(f *cmdutil.Factory, runF func(context.Context, *MigrateOptions) error) *cobra.Command {
	opts := &MigrateOptions{IO: f.IO, Config: f.Config, StoreURI: f.StoreURI, OpenStore: f.OpenStore, Logger: f.Logger}
	cmd := &cobra.Command{
		Use:   "migrate --from legacy [--app APP] [--confirm PLAN | --confirm-file FILE|-]",
		Short: "Move a google-adk-file store's old users/ tree under apps/APP/",
		Long: `Move the old-layout tree of a google-adk-file store (ROOT/users/…, written
by ADK Python before it added apps/{app}/, or by ADK JS) to where ADK Python
reads it now, ROOT/apps/APP/users/…, for a store that holds both trees.
APP is --app, by default the store app (--store-app, store_app: "default");
give the app that wrote the old tree. metadata.json files move unchanged,
as ADK Python's own migration note prescribes.

Only such a store is migrated. Another layout is unsupported_store; so is a
store that holds only users/ (ADK JS reads that tree, and moving it would
hide it from ADK JS). A store with no old tree (any more) has nothing to
do: the command says so and exits 0, so a rerun from cron is harmless.

Migrating takes two runs, as "artifacts delete" does. Without a
confirmation the command prints the plan and changes nothing (exit 4):
for each name of the old tree, its step:

  move-name       the same name has no versions/ under apps/APP: its
                  versions/ directory is renamed there in one step
  move-versions   the name exists under apps/APP with none of these
                  numbers: each version directory is renamed there
  conflict        apps/APP already has (or reserves) a number the old tree
                  has too: nothing of the name moves (never overwritten,
                  never renumbered); the plan says what to do
  held            its versions/ holds a pending save or delete, a symbolic
                  link or a foreign entry: nothing of the name moves

Each planned version is bound to its files (sizes and modification times of
payload and metadata.json, as delete plans). Confirm with --confirm (the
plan_id or the plan's JSON) or --confirm-file FILE ("-": standard input):
the plan is computed again under the store's lock and executed only if
identical; a tree changed since is stale_confirmation (exit 4) and nothing
moves. Every move is a rename that never replaces anything
(RENAME_NOREPLACE), so a migration killed midway leaves every version in
exactly one tree, readable, and a new plan covers the rest. Versions ADK
JS's killed saves left (no metadata.json) move with their name; fs repair
removes them from apps/ past its grace period. The old tree's directories
left empty are removed, and users/ with them when it is empty, after which
fs verify no longer reports it. Run it with no ADK writer running.

While it moves it holds the store's lock, ` + LockFile + `, as fs
repair does; a lock held by another run is exit 5.`,
		Example: `  # 1. see the plan (exits 4, changes nothing)
  agentstore fs migrate --store .adk/artifacts --from legacy --app my_agent -o json > plan.json

  # 2. move exactly that, if nothing changed in between
  agentstore fs migrate --store .adk/artifacts --from legacy --app my_agent --confirm-file plan.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			if !fl.Changed("from") {
				return cmdutil.Usagef("say which tree to migrate: --from %s (the old-layout users/ tree of an apps/ store)", adkfile.FromLegacy)
			}
			if opts.From != adkfile.FromLegacy {
				return cmdutil.Usagef("--from %q: the only tree fs migrate moves is %q (the old-layout users/ tree of an apps/ store)", opts.From, adkfile.FromLegacy)
			}
			if fl.Changed("app") {
				if err := adkfile.CheckApp(opts.App); err != nil {
					return cmdutil.Usagef("--app: %v", err)
				}
			}
			opts.ConfirmSet = fl.Changed("confirm")
			if opts.ConfirmSet && fl.Changed("confirm-file") {
				return cmdutil.Usagef("give --confirm or --confirm-file, not both")
			}
			if fl.Changed("confirm-file") && opts.ConfirmFile == "" {
				return cmdutil.Usagef("--confirm-file needs a file name, or - for standard input")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runMigrate(cmd.Context(), opts)
		},
	}
	cmdutil.SetExitStatusNote(cmd, `3  names were left in the old tree (conflict, held) or entries of it are no
   name's; the rest was migrated (or there was nothing else to move)
4  no confirmation (the plan is printed), a plan that no longer matches
   the store (stale_confirmation), or a plan modified or made for another
   store or app; nothing was moved
5  another maintenance run holds the store's lock; nothing was changed
1  also for a store that is not a google-adk-file store with both trees
   (unsupported_store) and for a tree that cannot be read (permission_denied)`)
	fl := cmd.Flags()
	fl.StringVar(&opts.From, "from", "", "the tree to migrate: legacy (required)")
	fl.StringVar(&opts.App, "app", "", "the app the old tree moves under, the app that wrote it (default: the store app)")
	fl.StringVar(&opts.Confirm, "confirm", "", "the plan to execute: its JSON or its plan_id")
	fl.StringVar(&opts.ConfirmFile, "confirm-file", "", "read the plan's JSON from `FILE` (- for standard input)")
	return cmd
}

func runMigrate(ctx context.Context, opts *MigrateOptions) (err error) {
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	u, err := opts.StoreURI()
	if err != nil {
		return err
	}
	if cfg.StoreDefault {
		return cmdutil.Usagef("fs migrate needs the store named: use --store URI or set %s (it never migrates the default store unasked)", cmdutil.EnvVar(cmdutil.KeyStore))
	}
	conf, err := cmdutil.ReadConfirmation(opts.ConfirmSet, opts.Confirm, opts.ConfirmFile, opts.IO.In, adkfile.ParseMigrationConfirmation, adkfile.ReadMigrationConfirmation)
	if err != nil {
		return err
	}
	st, err := opts.OpenStore(ctx)
	if err != nil {
		return err
	}
	var adk *adkfile.Store
	if !st.As(&adk) {
		return cmdutil.CodedError(cmdutil.CodeUnsupportedStore, fmt.Errorf(
			"fs migrate --from legacy moves the old-layout users/ tree of a google-adk-file store; %s is a %s store, which has none", u.String(), st.Capabilities().Layout))
	}
	app := opts.App
	if app == "" {
		app = cfg.StoreApp
	}
	mopts := adkfile.MigrateOptions{Store: u.String(), From: opts.From, App: app}
	planned := func(ctx context.Context) (*adkfile.Migration, error) {
		m, err := adk.PlanMigration(ctx, mopts)
		if artifacts.CodeOf(err) == artifacts.CodeUnsupported {
			return nil, cmdutil.CodedError(cmdutil.CodeUnsupportedStore, errors.New(artifacts.ReasonOf(err)))
		}
		return m, plainError(err)
	}
	if conf == nil {
		m, err := planned(ctx)
		if err != nil {
			return err
		}
		if err := printMigration(opts, cfg.JSON(), m); err != nil {
			return err
		}
		switch {
		case m.NothingToDo:
			return nil
		case !m.NeedsConfirmation():
			return leftError(m)
		}
		what := fmt.Sprintf("%s (%s)", count(m.MoveNames, "name"), count(m.MoveVersions, "version"))
		if m.EmptyOnly {
			what = "removal of the empty old tree"
		}
		return &cmdutil.ConfirmationError{Msg: fmt.Sprintf(
			"confirmation required: nothing was moved; to migrate the %s planned, run: %s", what, migrateCommand(u, app, m.PlanID))}
	}
	lctx, lk, err := cmdutil.LockStore(ctx, st, u, "fs migrate", 0, opts.Logger())
	if err != nil {
		return err
	}
	defer func() {
		if rerr := lk.Release(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	ctx = lctx
	m, err := planned(ctx)
	if err != nil {
		return err
	}
	if err := conf.Match(m); err != nil {
		if perr := printMigration(opts, cfg.JSON(), m); perr != nil {
			return perr
		}
		return err
	}
	if err := lk.Refresh(); err != nil {
		return err
	}
	res, execErr := adk.ExecuteMigration(ctx, m)
	out := MigrateResult{StoreJSON: cmdutil.NameStore(u, st).JSON(), From: m.From, App: m.App, PlanID: m.PlanID, MigrationResult: res, Left: []adkfile.MigrationName{}}
	for _, n := range m.Names {
		if !n.Moves() {
			out.Left = append(out.Left, n)
		}
	}
	if cfg.JSON() {
		err = output.JSON(opts.IO.Out, out)
	} else {
		printMigrated(opts, out, m)
	}
	if execErr != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			return fmt.Errorf("%w (%v)", plainError(execErr), c)
		}
		return plainError(execErr)
	}
	if err != nil {
		return err
	}
	return leftError(m)
}

// plainError gives a driver's error its code and its message without the
// library's operation prefix ("artifacts: plan migrate: "): the message
// names the path and what to do.
func plainError(err error) error {
	var e *artifacts.Error
	if !errors.As(err, &e) {
		return err
	}
	return cmdutil.CodedError(string(e.Code), errors.New(artifacts.ReasonOf(err)))
}

// leftError is the problems_found error (exit 3) of a plan that leaves
// names or entries in the old tree; nil when it leaves nothing.
func leftError(m *adkfile.Migration) error {
	if m.LeftNames == 0 && len(m.Left) == 0 {
		return nil
	}
	var parts []string
	if m.LeftNames > 0 {
		parts = append(parts, count(m.LeftNames, "name")+" (conflict or held)")
	}
	if len(m.Left) > 0 {
		parts = append(parts, count(len(m.Left), "entry that is no name's", "entries that are no name's"))
	}
	return &cmdutil.ProblemsFound{Msg: strings.Join(parts, " and ") + " left in the old users/ tree; see the plan for what to do about each"}
}

func count(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return strconv.Itoa(n) + " " + many[0]
	}
	return strconv.Itoa(n) + " " + one + "s"
}

// migrateCommand is the command line that confirms the plan planID.
func migrateCommand(u cmdutil.StoreURI, app, planID string) string {
	store := u.String()
	if u.Scheme == cmdutil.SchemeFile {
		store = u.Root
	}
	return shell.Join("agentstore", "fs", "migrate", "--store", store, "--from", adkfile.FromLegacy, "--app", app, "--confirm", planID)
}

func printMigration(opts *MigrateOptions, jsonOut bool, m *adkfile.Migration) error {
	if jsonOut {
		return output.JSON(opts.IO.Out, m)
	}
	w := opts.IO.Out
	st := output.NewStyles(opts.IO)
	fmt.Fprintln(w, cmdutil.StoreName{URI: m.Store, Layout: m.Layout}.Line(st))
	if m.NothingToDo {
		fmt.Fprintf(w, "%s: the store has no old-layout users/ tree\n", st.OK("Nothing to migrate"))
		return nil
	}
	fmt.Fprintf(w, "%s the old-layout users/ tree to apps/%s/users/: move %s (%s), leave %s\n", st.Bold("Plan: migrate"),
		m.App, count(m.MoveNames, "name"), count(m.MoveVersions, "version"), count(m.LeftNames, "name"))
	fmt.Fprintf(w, "  plan_id: %s\n", m.PlanID)
	for _, n := range m.Notes {
		fmt.Fprintf(w, "  note:    %s\n", n)
	}
	if m.EmptyOnly {
		fmt.Fprintln(w, "  the old tree holds nothing but empty directories: the plan removes them")
	}
	if len(m.Names) > 0 {
		fmt.Fprintln(w)
		t := output.NewTable(opts.IO, "SCOPE", "NAME", "STEP", "EFFECT")
		t.NoTruncate(2, 3)
		for _, n := range m.Names {
			step := n.Step
			if !n.Moves() {
				step = st.Warn(step)
			}
			t.Row(n.Scope.String(), n.Name, step, n.Effect)
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	for _, n := range m.Names {
		if n.NextCommand != "" {
			fmt.Fprintf(w, "  %s %q: next: %s\n", n.Scope, n.Name, n.NextCommand)
		}
	}
	if len(m.Left) > 0 {
		fmt.Fprintf(w, "\n%s\n", st.Warn(fmt.Sprintf("left in users/ (%s, never moved):", count(len(m.Left), "entry that is no name's", "entries that are no name's"))))
		for _, p := range m.Left {
			fmt.Fprintf(w, "  %s: %s\n", output.Escape(p.Path), output.Escape(p.Reason))
		}
	}
	return nil
}

func printMigrated(opts *MigrateOptions, out MigrateResult, m *adkfile.Migration) {
	w := opts.IO.Out
	st := output.NewStyles(opts.IO)
	fmt.Fprintln(w, cmdutil.StoreName{URI: m.Store, Layout: m.Layout}.Line(st))
	fmt.Fprintf(w, "%s %s (%s) to apps/%s/users/ (plan %s); removed %s\n", st.OK("Migrated"),
		count(len(out.Moved), "name"), count(out.MovedVersions, "version"), out.App, out.PlanID, count(out.RemovedDirs, "empty directory", "empty directories"))
	if out.TreeRemoved {
		fmt.Fprintln(w, "the old users/ tree is gone")
	}
	if len(out.Moved) > 0 {
		t := output.NewTable(opts.IO, "SCOPE", "NAME", "STEP", "VERSIONS")
		t.NoTruncate(2)
		for _, n := range out.Moved {
			vs := make([]string, len(n.Versions))
			for i, v := range n.Versions {
				vs[i] = strconv.FormatInt(v, 10)
			}
			t.Row(n.Scope.String(), n.Name, n.Step, strings.Join(vs, " "))
		}
		_ = t.Render()
	}
	for _, n := range out.Left {
		fmt.Fprintf(w, "left: %s %q (%s): %s\n", n.Scope, n.Name, n.Step, n.Effect)
	}
	if len(m.Left) > 0 {
		fmt.Fprintf(w, "left: %s in users/\n", count(len(m.Left), "entry that is no name's", "entries that are no name's"))
	}
}
