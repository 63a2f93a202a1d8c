package artifactscmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/deletion"
)

// DeleteOptions holds the flag values and dependencies of
// "artifacts delete".
type DeleteOptions struct {
	deps
	// StoreURI returns the parsed --store, whose canonical form goes into
	// the plan.
	StoreURI func() (cmdutil.StoreURI, error)

	// ScopeFlags are --app, --user and --session as given.
	ScopeFlags cmdutil.ScopeFlags
	// Scope is the scope they select.
	Scope artifacts.Scope
	// Name is the artifact name (--name).
	Name string
	// Version is --version; Latest is --latest; AllVersions is
	// --all-versions. Exactly one is given.
	Version     int64
	Latest      bool
	AllVersions bool
	// Selector is what the three flags select.
	Selector artifacts.Selector
	// Confirm is --confirm: a plan's JSON or its plan_id.
	Confirm string
	// ConfirmSet is true when --confirm was given (even empty).
	ConfirmSet bool
	// ConfirmFile is --confirm-file: a file holding the plan's JSON, or
	// "-" for standard input.
	ConfirmFile string
	// AllowNumberReuse is --allow-number-reuse: execute a plan that
	// deletes a name's highest version in a layout that reuses numbers.
	AllowNumberReuse bool
}

// DeletedVersion is one version a delete removed.
type DeletedVersion struct {
	Version int64  `json:"version"`
	Digest  string `json:"digest"`
}

// DeleteResult is the JSON output of a confirmed "artifacts delete".
type DeleteResult struct {
	// StoreJSON names the store and its layout.
	cmdutil.StoreJSON
	Deleted []DeletedVersion `json:"deleted"`
	PlanID  string           `json:"plan_id"`
}

// NewCmdDelete returns "artifacts delete". runF, when not nil, replaces
// the run function.
func NewCmdDelete(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{deps: depsOf(f), StoreURI: f.StoreURI}
	cmd := &cobra.Command{
		Use:   "delete --app A [--user U [--session S]] --name NAME (--version V | --latest | --all-versions) [--confirm PLAN | --confirm-file FILE|-]",
		Short: "Delete versions of an artifact after confirming a plan",
		Long: `Delete published versions of the artifact NAME in a scope: one version
(--version V), the latest (--latest) or every published version
(--all-versions). In the Erlang layouts their reservations stay, so
version numbers are never reused. In layouts that hand a number out again
(the Google ADK layouts), a plan that deletes a name's highest version
says so ("reused_number") and is executed only with --allow-number-reuse.

Deleting takes two runs. Without a confirmation the command computes the
plan, prints it (a readable summary on a terminal, the JSON plan with
-o json), changes nothing and exits with status 4 (confirmation_required).
Run it again with the plan: --confirm takes the plan's JSON or its plan_id,
--confirm-file FILE the plan's JSON from a file ("-": standard input). The
plan is then computed again and the versions it lists are deleted only if
the two are identical. When versions were added or removed since, the
confirmation is stale (exit 4, stale_confirmation) and nothing is deleted;
a plan edited after it was made, or made for another command, is refused
(exit 4) too.

Computing a plan reads the record of every version it targets and, oldest
first, the payloads of up to 100 of them and 64 MiB, so that STATE says
which are healthy (ok), damaged (corrupt, with why) or not read (unread:
past that budget, or unreadable); "agentstore fs verify" reads them all.
A version whose payload is damaged or missing is planned and deleted like
any other, which is how such a version is removed. In
layouts that list broken versions (see "artifacts versions") a record
that does not decode or belongs to another name is planned as a corrupt
version bound to its files: size and SHA-256 of the record file, and a
token of the files' sizes and times (generations on Cloud Storage), so a
file changed or restored since makes the confirmation stale. This holds
for every selector: --all-versions plans the broken versions beside the
healthy ones, and --latest is the highest version number, broken or not.
The plan names each broken version it targets, with why ("broken").
Elsewhere a record that does not decode stops the plan (exit 1,
corrupt_artifact).

The plan:
  {"action": "delete", "store": URI, "scope": S, "name": NAME,
   "selector": "version=V" | "latest" | "all-versions",
   "versions": [{"version", "size", "digest", "token", "state"}],
   "reused_number": N, "note": TEXT, "plan_id": ID, "layout": LAYOUT,
   "broken": [{"version", "reason"}]}
token, state, reused_number and note appear only when set: token binds a
version whose bytes the layout could change under the same number (a GCS
object generation, a file's size and time); state is "corrupt" for a record
that does not decode. broken appears only when set and is not part of
what plan_id hashes.
plan_id is the lowercase hex SHA-256 of the plan's canonical JSON: the plan
without plan_id, layout and broken, marshalled by Go's encoding/json with
the fields in exactly the order above (scope: kind, app, user, session,
leaving out the parts its kind does not have; versions: version, size,
digest), no indentation, no
whitespace, no trailing newline, and HTML escaping off ("<", ">" and "&"
are not escaped). store is the canonical store URI (file:///ABS/PATH or
gs://BUCKET/PREFIX); layout names the store's layout (a plan without it,
made by an earlier version, still confirms).

On success: {"store": URI, "layout": LAYOUT, "deleted": [{"version",
"digest"}], "plan_id": ID}.`,
		Example: `  # 1. see what would be deleted (exits 4, changes nothing)
  agentstore artifacts delete --store /var/lib/agents --app demo-a --user user-42 \
      --session session-7 --name reports/summary.txt --all-versions -o json > plan.json

  # 2. delete exactly that, if nothing changed in between
  agentstore artifacts delete --store /var/lib/agents --app demo-a --user user-42 \
      --session session-7 --name reports/summary.txt --all-versions --confirm-file plan.json

  # or confirm by plan_id
  agentstore artifacts delete --store /var/lib/agents --app demo-a --name config/settings.json \
      --version 1 --confirm "$(jq -r .plan_id plan.json)"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := opts.ScopeFlags.Scope(true)
			if err != nil {
				return err
			}
			opts.Scope = s
			if err := validateName(cmd, opts.Name); err != nil {
				return err
			}
			fl := cmd.Flags()
			var given []string
			for _, n := range []string{"version", "latest", "all-versions"} {
				if fl.Changed(n) {
					given = append(given, "--"+n)
				}
			}
			switch {
			case len(given) == 0:
				return cmdutil.Usagef("say what to delete: --version V, --latest or --all-versions")
			case len(given) > 1:
				return cmdutil.Usagef("%s cannot be combined: give one of --version V, --latest or --all-versions", strings.Join(given, " and "))
			case fl.Changed("version"):
				if opts.Version < 0 {
					return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: fmt.Errorf("invalid --version %d: want a version number", opts.Version)}
				}
				opts.Selector = artifacts.Selector{Kind: artifacts.SelectVersion, Version: opts.Version}
			case fl.Changed("latest"):
				if !opts.Latest {
					return cmdutil.Usagef("--latest=false selects nothing")
				}
				opts.Selector = artifacts.Selector{Kind: artifacts.SelectLatest}
			default:
				if !opts.AllVersions {
					return cmdutil.Usagef("--all-versions=false selects nothing")
				}
				opts.Selector = artifacts.Selector{Kind: artifacts.SelectAll}
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
			return runDelete(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.ScopeFlags)
	fl := cmd.Flags()
	fl.StringVar(&opts.Name, "name", "", "artifact name (required)")
	fl.Int64Var(&opts.Version, "version", 0, "delete this version")
	fl.BoolVar(&opts.Latest, "latest", false, "delete the latest version")
	fl.BoolVar(&opts.AllVersions, "all-versions", false, "delete every published version")
	fl.StringVar(&opts.Confirm, "confirm", "", "the plan to execute: its JSON or its plan_id")
	fl.StringVar(&opts.ConfirmFile, "confirm-file", "", "read the plan's JSON from `FILE` (- for standard input)")
	fl.BoolVar(&opts.AllowNumberReuse, "allow-number-reuse", false, "execute a plan that deletes a name's highest version in a layout that hands numbers out again")
	cmdutil.SetExitStatusNote(cmd, `4 when no confirmation was given (confirmation_required: the plan is
  printed), when the plan no longer matches the store (stale_confirmation),
  or when the plan given was modified or is for another command; nothing
  was deleted
1 also when the scope, name or version does not exist (not_found) or a
  targeted record does not decode (corrupt_artifact)`)
	return cmd
}

func runDelete(ctx context.Context, opts *DeleteOptions) error {
	jsonOut, err := opts.jsonOutput()
	if err != nil {
		return err
	}
	conf, err := cmdutil.ReadConfirmation(opts.ConfirmSet, opts.Confirm, opts.ConfirmFile, opts.IO.In, deletion.ParseConfirmation, deletion.ReadConfirmation)
	if err != nil {
		return err
	}
	u, err := opts.StoreURI()
	if err != nil {
		return err
	}
	st, err := opts.OpenStore(ctx)
	if err != nil {
		return err
	}
	plan, err := deletion.ComputePlan(ctx, st, u.String(), opts.Scope, opts.Name, opts.Selector)
	if err != nil {
		if conf != nil && artifacts.IsNotFound(err) {
			return &cmdutil.ConfirmationError{Stale: true, Msg: fmt.Sprintf(
				"stale confirmation: nothing matches the plan any more (%v); nothing was deleted", err)}
		}
		return err
	}
	if conf == nil {
		if err := printPlan(opts, plan, jsonOut); err != nil {
			return err
		}
		return &cmdutil.ConfirmationError{Msg: fmt.Sprintf(
			"confirmation required: nothing was deleted; to delete the %s planned, run: %s",
			countVersions(len(plan.Versions)), nextCommand(opts, plan))}
	}
	if err := conf.Match(plan); err != nil {
		if perr := printPlan(opts, plan, jsonOut); perr != nil {
			return perr
		}
		return err
	}
	res := DeleteResult{StoreJSON: cmdutil.NameStore(u, st).JSON(), Deleted: []DeletedVersion{}, PlanID: plan.PlanID}
	recs, delErr := deletion.Execute(ctx, st, plan, deletion.ExecOptions{AllowNumberReuse: opts.AllowNumberReuse})
	for _, r := range recs {
		res.Deleted = append(res.Deleted, DeletedVersion{Version: r.Version, Digest: r.Digest})
	}
	var cerr *cmdutil.ConfirmationError
	if errors.As(delErr, &cerr) && len(recs) == 0 {
		return delErr
	}
	if jsonOut {
		err = output.JSON(opts.IO.Out, res)
	} else {
		err = printDeleted(opts, plan, res)
	}
	if delErr != nil {
		return delErr
	}
	return err
}

func countVersions(n int) string {
	if n == 1 {
		return "1 version"
	}
	return strconv.Itoa(n) + " versions"
}

// nextCommand is the command line that confirms plan.
func nextCommand(opts *DeleteOptions, plan deletion.Plan) string {
	args := []string{"agentstore", "artifacts", "delete", "--store", shell.Quote(plan.Store)}
	args = append(args, scopeArgs(opts.Scope)...)
	args = append(args, "--name", shell.Quote(opts.Name))
	switch opts.Selector.Kind {
	case artifacts.SelectVersion:
		args = append(args, "--version", strconv.FormatInt(opts.Selector.Version, 10))
	case artifacts.SelectLatest:
		args = append(args, "--latest")
	default:
		args = append(args, "--all-versions")
	}
	if plan.ReusedNumber != nil {
		// The plan's warning says the layout hands the number out again;
		// the confirmation carries the flag, so that the command works
		// as printed.
		args = append(args, "--allow-number-reuse")
	}
	args = append(args, "--confirm", plan.PlanID)
	return strings.Join(args, " ")
}

func printPlan(opts *DeleteOptions, plan deletion.Plan, jsonOut bool) error {
	if jsonOut {
		return output.JSON(opts.IO.Out, plan)
	}
	st := output.NewStyles(opts.IO)
	var total int64
	for _, v := range plan.Versions {
		if v.State != deletion.StateCorrupt {
			total += v.Size // a corrupt version's Size is its record file's
		}
	}
	w := opts.IO.Out
	fmt.Fprintln(w, cmdutil.StoreName{URI: plan.Store, Layout: plan.Layout}.Line(st))
	fmt.Fprintf(w, "%s %s (%s) of %q\n", st.Bold("Plan: delete"), countVersions(len(plan.Versions)), output.Size(total), plan.Name)
	fmt.Fprintf(w, "  scope:    %s\n", opts.Scope)
	fmt.Fprintf(w, "  store:    %s\n", plan.Store)
	fmt.Fprintf(w, "  selector: %s\n", plan.Selector)
	fmt.Fprintf(w, "  plan_id:  %s\n", plan.PlanID)
	if plan.ReusedNumber != nil {
		fmt.Fprintf(w, "  %s %s; confirming needs --allow-number-reuse\n", st.Warn("warning:"), plan.Note)
	}
	for _, b := range plan.Broken {
		fmt.Fprintf(w, "  %s v%d is broken: %s\n", st.Warn("broken:"), b.Version, b.Reason)
	}
	if n := len(plan.Unread); n > 0 {
		fmt.Fprintf(w, "  %s %s not read (past the plan's read budget of %d versions and %s, or unreadable): their STATE is unread; agentstore fs verify reads every payload\n",
			st.Warn("note:"), countVersions(n), deletion.PlanReadVersions, output.Size(deletion.PlanReadBytes))
	}
	fmt.Fprintln(w)
	state := map[int64]string{}
	for _, v := range plan.Unread {
		state[v] = "unread"
	}
	for _, b := range plan.Broken {
		state[b.Version] = deletion.StateCorrupt
	}
	t := output.NewTable(opts.IO, "VERSION", "STATE", "SIZE", "DIGEST")
	t.NoTruncate(0, 1, 2)
	for _, v := range plan.Versions {
		state := cmp.Or(state[v.Version], "ok")
		if v.State == deletion.StateCorrupt {
			// Bound to its files (see the JSON plan): no payload size or
			// digest is known.
			t.Row(strconv.FormatInt(v.Version, 10), state, "-", "-")
			continue
		}
		t.Row(strconv.FormatInt(v.Version, 10), state, output.Size(v.Size), v.Digest)
	}
	return t.Render()
}

func printDeleted(opts *DeleteOptions, plan deletion.Plan, res DeleteResult) error {
	st := output.NewStyles(opts.IO)
	fmt.Fprintln(opts.IO.Out, cmdutil.StoreName{URI: plan.Store, Layout: plan.Layout}.Line(st))
	fmt.Fprintf(opts.IO.Out, "%s %s of %q in %s (plan %s)\n", st.OK("Deleted"),
		countVersions(len(res.Deleted)), plan.Name, opts.Scope, res.PlanID)
	t := output.NewTable(opts.IO, "VERSION", "DIGEST")
	t.NoTruncate(0)
	for _, d := range res.Deleted {
		t.Row(strconv.FormatInt(d.Version, 10), d.Digest)
	}
	return t.Render()
}
