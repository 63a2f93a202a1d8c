package artifactscmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/promfile"
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/retention"
)

// policyFlags are the flags of "artifacts prune" that are config keys too
// (policy.NAME in the config file's "policy:" section,
// AGENTSTORE_POLICY_NAME in the environment).
var policyFlags = []string{"keep-last", "keep-within", "keep-latest", "no-keep-latest", "older-than", "mime", "name"}

func init() {
	keys := make([]string, len(policyFlags))
	for i, f := range policyFlags {
		keys[i] = "policy." + f
	}
	cmdutil.RegisterConfigKeys(keys...)
}

// PruneStallAfter is how long a prune may go without deleting a name
// before it stops renewing its lock's heartbeat (see fs repair).
const PruneStallAfter = 30 * time.Minute

// PruneOptions holds the flag values and dependencies of "artifacts
// prune".
type PruneOptions struct {
	deps
	// StoreURI returns the parsed --store.
	StoreURI func() (cmdutil.StoreURI, error)

	// ScopeFlags are --app, --user and --session: the scope filter.
	ScopeFlags cmdutil.ScopeFlags
	// Filter is the scope they select; the zero Scope for the whole store.
	Filter artifacts.Scope
	// Policy is the retention policy the flags (and the policy: block of
	// the config file) make.
	Policy retention.Policy
	// KeepWithin and OlderThan are the duration flags as given.
	KeepWithin, OlderThan durationFlag
	// KeepLatest and NoKeepLatest are --keep-latest and --no-keep-latest.
	KeepLatest, NoKeepLatest bool
	// Confirm is --confirm (a plan's JSON or its plan_id); ConfirmSet is
	// true when it was given.
	Confirm    string
	ConfirmSet bool
	// ConfirmFile is --confirm-file (- for standard input).
	ConfirmFile string
	// ConfirmPolicy is --confirm-policy: a policy_id.
	ConfirmPolicy string
	// MaxDelete and MaxDeleteBytes are the bounds (0: none; both required
	// with ConfirmPolicy).
	MaxDelete      int64
	MaxDeleteBytes int64
	maxBytesFlag   string
	// MetricsFile is --metrics-file.
	MetricsFile string
}

// durationFlag is a retention duration flag ("30d", "2w", "12h").
type durationFlag struct{ d time.Duration }

func (f *durationFlag) String() string { return retention.FormatDuration(f.d) }
func (f *durationFlag) Type() string   { return "duration" }
func (f *durationFlag) Set(s string) error {
	d, err := retention.ParseDuration(s)
	if err != nil {
		return errors.New(artifacts.ReasonOf(err))
	}
	f.d = d
	return nil
}

// PruneResult is the JSON output of a prune that ran: what it deleted,
// what failed, and what the plan kept.
type PruneResult struct {
	// StoreJSON names the store and its layout.
	cmdutil.StoreJSON
	PolicyID string `json:"policy_id"`
	PlanID   string `json:"plan_id"`
	AsOf     string `json:"as_of"`
	// Deleted lists the versions deleted.
	Deleted         []retention.Deleted `json:"deleted"`
	DeletedVersions int64               `json:"deleted_versions"`
	DeletedBytes    int64               `json:"deleted_bytes"`
	// Failed lists the names whose planned versions were not all deleted.
	Failed       []retention.Failure `json:"failed"`
	KeptVersions int64               `json:"kept_versions"`
	KeptBytes    int64               `json:"kept_bytes"`
	// Problems are versions that could not be read or do not decode:
	// never pruned.
	Problems []retention.Problem `json:"problems"`
	Notes    []string            `json:"notes"`
}

// NewCmdPrune returns "artifacts prune". runF, when not nil, replaces the
// run function.
func NewCmdPrune(f *cmdutil.Factory, runF func(context.Context, *PruneOptions) error) *cobra.Command {
	opts := &PruneOptions{deps: depsOf(f), StoreURI: f.StoreURI, KeepLatest: true}
	cmd := &cobra.Command{
		Use:   "prune [--app A [--user U [--session S]]] POLICY [--confirm PLAN | --confirm-file FILE|- | --confirm-policy ID --max-delete N --max-delete-bytes SIZE] [--metrics-file FILE]",
		Short: "Delete the versions a retention policy does not keep, after confirming a plan",
		Long: `Apply a retention policy to every name in the store, or in the scopes under
--app (every scope of the app: its app scope, its users' and their
sessions'), --app --user (the user scope and its sessions') or --app --user
--session (that session), and delete the versions it does not keep.

The policy, like restic's forget, combines:
  --older-than D     prune only versions created more than D ago
  --mime GLOB        prune only versions whose MIME type matches (image/*)
  --name GLOB        consider only names matching (logs/*; * does not cross /)
  --keep-last N      keep the N highest versions of every name
  --keep-within D    keep the versions created at most D ago
  --keep-latest      keep every name's latest version (on by default;
                     --no-keep-latest lets it go)
A version is pruned when the policy selects it (--older-than, --mime) and
no keep rule protects it. At least one of --keep-last, --keep-within and
--older-than is required. Durations take w, d, h, m and s: 30d, 2w, 1d12h.
Every policy flag is also a key of the config file's policy: section
(keep-last: 3, older-than: 30d, ...) and an environment variable
(AGENTSTORE_POLICY_KEEP_LAST); flags win.

Layout facts are obeyed whatever the flags: where the layout reuses version
numbers (Google ADK's layouts), the highest version of every name is kept,
since deleting it would make the writer hand its number out again. In the
Erlang layouts a pruned version's number stays reserved: it is never
reused and the name's version capacity is not returned (only the bytes
are); the plan says which applies.

Deleting takes a plan first. Without a confirmation the command computes
the plan, prints it (per scope and name, the kept and pruned versions with
size, age and reason, and the totals; with -o json the plan with plan_id
at the top level), changes nothing and exits with status 4. Run it again
with the plan: --confirm takes the plan's JSON or its plan_id,
--confirm-file FILE the plan's JSON ("-": standard input). The plan is then
computed again, as of the plan's as_of time when the whole plan is given
(as of now for a plan_id alone), and executed only if it deletes exactly
the same versions, each bound to its size, digest and the store's token
for its bytes; otherwise the confirmation is stale (exit 4) and nothing is
deleted.

For cron, --confirm-policy POLICY_ID confirms the policy instead of one
plan: the policy_id, printed with every plan, is the SHA-256 of the
normalised policy, the scope filter and the store. It must come with
--max-delete N and --max-delete-bytes SIZE: a run whose plan would delete
more versions or bytes deletes nothing and exits with status 3, printing
the plan. Changing any policy flag (or the config file's policy: section)
changes the policy_id, so a cron line never runs a policy nobody read.

Every run that deletes takes the store's lock (the one fs repair takes: a
second prune or repair exits with status 5). Versions whose records do not
decode or cannot be read are never pruned and are listed as problems
(exit status 3 after the rest is done). With --metrics-file FILE the run
writes Prometheus textfile metrics (versions and bytes pruned and kept,
errors, problems, duration, exit code), atomically.

With -o json, a run that deleted prints {"store", "layout", "policy_id",
"plan_id", "as_of", "deleted": [{"scope", "name", "version", "size",
"digest"}], "deleted_versions", "deleted_bytes", "failed", "kept_versions",
"kept_bytes", "problems", "notes"}.`,
		Example: `  # 1. see what a policy would delete (exits 4, changes nothing)
  agentstore artifacts prune --store /var/lib/agents/store --keep-last 3 --older-than 30d -o json > plan.json

  # 2. delete exactly that, if nothing changed in between
  agentstore artifacts prune --store /var/lib/agents/store --keep-last 3 --older-than 30d --confirm-file plan.json

  # cron: run the policy read in step 1, at most 10000 versions or 50 GiB a night
  agentstore artifacts prune --store /var/lib/agents/store --keep-last 3 --older-than 30d \
      --confirm-policy "$(jq -r .policy_id plan.json)" --max-delete 10000 --max-delete-bytes 50GiB \
      --metrics-file /var/lib/node_exporter/agentstore_prune.prom`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := opts.Config()
			if err != nil {
				return err
			}
			if err := cmdutil.ApplyConfigKeys(cmd, cfg, "policy"); err != nil {
				return err
			}
			if err := opts.check(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPrune(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.ScopeFlags)
	fl := cmd.Flags()
	fl.IntVar(&opts.Policy.KeepLast, "keep-last", 0, "keep the `N` highest versions of every name")
	fl.Var(&opts.KeepWithin, "keep-within", "keep the versions created at most `D` ago (30d, 2w, 12h)")
	fl.BoolVar(&opts.KeepLatest, "keep-latest", true, "keep every name's latest version (the default)")
	fl.BoolVar(&opts.NoKeepLatest, "no-keep-latest", false, "let the policy prune a name's latest version too")
	fl.Var(&opts.OlderThan, "older-than", "prune only versions created more than `D` ago (30d, 2w, 12h)")
	fl.StringVar(&opts.Policy.MIME, "mime", "", "prune only versions whose MIME type matches `GLOB` (image/*)")
	fl.StringVar(&opts.Policy.Name, "name", "", "consider only names matching `GLOB` (logs/*; * does not cross /)")
	fl.StringVar(&opts.Confirm, "confirm", "", "the plan to execute: its JSON or its plan_id")
	fl.StringVar(&opts.ConfirmFile, "confirm-file", "", "read the plan's JSON from `FILE` (- for standard input)")
	fl.StringVar(&opts.ConfirmPolicy, "confirm-policy", "", "run the policy whose policy_id is `ID` unattended (needs --max-delete and --max-delete-bytes)")
	fl.Int64Var(&opts.MaxDelete, "max-delete", 0, "delete nothing when the plan prunes more than `N` versions")
	fl.StringVar(&opts.maxBytesFlag, "max-delete-bytes", "", "delete nothing when the plan prunes more than `SIZE` bytes (e.g. 50GiB)")
	fl.StringVar(&opts.MetricsFile, "metrics-file", "", "write Prometheus textfile metrics to `FILE` (atomically)")
	cmdutil.NoteSizes(cmd)
	cmdutil.SetExitStatusNote(cmd, `3  a bound (--max-delete, --max-delete-bytes) would be exceeded: nothing
   was deleted, the plan is printed; or some versions could not be read
   or do not decode (listed as problems, never pruned)
4  no confirmation (the plan is printed), a plan that no longer matches
   the store (stale_confirmation), a plan modified or made for another
   policy, or a --confirm-policy that is not this policy's; nothing was
   deleted
5  another prune or repair holds the store's lock; nothing was changed`)
	return cmd
}

// check validates the flags before any I/O.
func (o *PruneOptions) check(cmd *cobra.Command) error {
	fl := cmd.Flags()
	s, err := o.ScopeFlags.Scope(false)
	if err != nil {
		return err
	}
	o.Filter = s
	if fl.Changed("keep-latest") && fl.Changed("no-keep-latest") && o.KeepLatest == o.NoKeepLatest {
		return cmdutil.Usagef("--keep-latest=%v and --no-keep-latest=%v contradict each other", o.KeepLatest, o.NoKeepLatest)
	}
	o.Policy.NoKeepLatest = o.NoKeepLatest || !o.KeepLatest
	o.Policy.KeepWithin, o.Policy.OlderThan = o.KeepWithin.d, o.OlderThan.d
	if fl.Changed("keep-last") && o.Policy.KeepLast < 1 {
		return cmdutil.Usagef("--keep-last %d: keep at least 1 (or leave the flag out)", o.Policy.KeepLast)
	}
	if err := o.Policy.Validate(); err != nil {
		return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: errors.New(policyMessage(err))}
	}
	o.ConfirmSet = fl.Changed("confirm")
	n := 0
	for _, name := range []string{"confirm", "confirm-file", "confirm-policy"} {
		if fl.Changed(name) {
			n++
		}
	}
	if n > 1 {
		return cmdutil.Usagef("give one of --confirm, --confirm-file and --confirm-policy")
	}
	if fl.Changed("confirm-file") && o.ConfirmFile == "" {
		return cmdutil.Usagef("--confirm-file needs a file name, or - for standard input")
	}
	if o.MaxDelete < 0 {
		return cmdutil.Usagef("--max-delete %d is negative", o.MaxDelete)
	}
	if fl.Changed("max-delete-bytes") {
		b, err := cmdutil.ParseSize(o.maxBytesFlag)
		if err != nil {
			return cmdutil.Usagef("--max-delete-bytes: %v", err)
		}
		o.MaxDeleteBytes = b
	}
	if fl.Changed("confirm-policy") {
		if !isHexID(o.ConfirmPolicy) {
			return cmdutil.Usagef("--confirm-policy %q is not a policy_id (64 lowercase hex characters, printed with every plan)", o.ConfirmPolicy)
		}
		if !fl.Changed("max-delete") || !fl.Changed("max-delete-bytes") || o.MaxDelete < 1 || o.MaxDeleteBytes < 1 {
			return cmdutil.Usagef("--confirm-policy runs unattended, so it must be bounded: give --max-delete N and --max-delete-bytes SIZE, both at least 1")
		}
	}
	return cmdutil.CheckMetricsPath(o.MetricsFile)
}

// policyMessage turns a policy error into the flags' words.
func policyMessage(err error) string {
	msg := artifacts.ReasonOf(err)
	for _, w := range []string{"keep-last", "keep-within", "older-than"} {
		msg = strings.ReplaceAll(msg, " "+w, " --"+w)
	}
	return "invalid policy: " + msg
}

func isHexID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func runPrune(ctx context.Context, opts *PruneOptions) (err error) {
	m := cmdutil.RunMetrics{Prefix: "agentstore_artifacts_prune", Start: opts.now()}
	defer func() {
		m.End = opts.now()
		err = cmdutil.FinishMetrics(opts.IO, opts.MetricsFile, m, err)
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
		return cmdutil.Usagef("artifacts prune needs the store named: use --store URI or set %s (it never prunes the default store unasked)", cmdutil.EnvVar(cmdutil.KeyStore))
	}
	var conf *retention.Confirmation
	switch {
	case opts.ConfirmSet:
		c, err := retention.ParseConfirmation(opts.Confirm)
		if err != nil {
			return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: errors.New(artifacts.ReasonOf(err))}
		}
		conf = &c
	case opts.ConfirmFile != "":
		c, err := readPruneConfirmation(opts)
		if err != nil {
			return err
		}
		conf = &c
	}
	st, err := opts.OpenStore(ctx)
	if err != nil {
		return err
	}
	popts := retention.Options{Store: u.String(), Policy: opts.Policy, Filter: opts.Filter, Now: opts.now()}
	if conf != nil {
		asOf, err := conf.AsOf()
		if err != nil {
			return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: errors.New(artifacts.ReasonOf(err))}
		}
		if !asOf.IsZero() {
			popts.Now = asOf
		}
	}
	if conf == nil && opts.ConfirmPolicy == "" {
		plan, err := retention.ComputePlan(ctx, st, popts)
		if err != nil {
			return err
		}
		m.Values = planMetrics(plan)
		if err := printPrunePlan(opts, plan, cfg.JSON()); err != nil {
			return err
		}
		return &cmdutil.ConfirmationError{Msg: fmt.Sprintf(
			"confirmation required: nothing was deleted; to delete the %s planned (%s), run: %s; to run this policy from cron, give --confirm-policy %s with --max-delete and --max-delete-bytes",
			countVersions(int(plan.Totals.PrunedVersions)), output.Size(plan.Totals.PrunedBytes), pruneCommand(opts, u, "--confirm", plan.PlanID), plan.PolicyID)}
	}

	lctx, lk, err := cmdutil.LockStore(ctx, st, u, "artifacts prune", PruneStallAfter, opts.Logger())
	if err != nil {
		return err
	}
	defer func() {
		if rerr := lk.Release(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	ctx = lctx
	plan, err := retention.ComputePlan(ctx, st, popts)
	if err != nil {
		return err
	}
	m.Values = planMetrics(plan)
	refuse := func(e error) error {
		if perr := printPrunePlan(opts, plan, cfg.JSON()); perr != nil {
			return perr
		}
		return e
	}
	if opts.ConfirmPolicy != "" {
		if plan.PolicyID != opts.ConfirmPolicy {
			return refuse(&cmdutil.ConfirmationError{Msg: fmt.Sprintf(
				"refused: --confirm-policy %s is not the policy_id of this policy, scope filter and store (%s: %s); read the plan, then confirm its policy_id; nothing was deleted",
				opts.ConfirmPolicy, plan.PolicyID, opts.Policy)})
		}
	} else if err := conf.Match(plan); err != nil {
		return refuse(err)
	}
	if err := plan.CheckBounds(opts.MaxDelete, opts.MaxDeleteBytes); err != nil {
		return refuse(&cmdutil.ProblemsFound{Msg: err.Error() + "; raise the bound or prune a smaller scope"})
	}
	if err := lk.Refresh(); err != nil {
		return err
	}
	prog := output.NewProgress(opts.IO)
	prog.Start("prune: names")
	res, err := retention.Execute(ctx, st, plan, retention.ExecOptions{Progress: func(done, total int) {
		lk.Progress()
		prog.Update(int64(done), 0)
	}})
	prog.Done()
	if res != nil {
		m.Values = resultMetrics(plan, res)
	}
	if err != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			return fmt.Errorf("%w (%v)", err, c)
		}
		return err
	}
	name := cmdutil.StoreName{URI: plan.Store, Layout: plan.Layout}
	out := PruneResult{
		StoreJSON: name.JSON(), PolicyID: plan.PolicyID, PlanID: plan.PlanID, AsOf: plan.AsOf,
		Deleted: res.Deleted, DeletedVersions: res.DeletedVersions, DeletedBytes: res.DeletedBytes, Failed: res.Failed,
		KeptVersions: plan.Totals.KeptVersions, KeptBytes: plan.Totals.KeptBytes, Problems: plan.Problems, Notes: plan.Notes,
	}
	if cfg.JSON() {
		if err := output.JSON(opts.IO.Out, out); err != nil {
			return err
		}
	} else {
		printPruned(opts, name, out)
	}
	if len(res.Failed) > 0 {
		f := res.Failed[0]
		return artifacts.Errorf(f.Code, "prune", nil, "%d of the planned names were not pruned (first: %q in %s: %s); run the prune again to plan what is left",
			len(res.Failed), f.Name, f.Scope, f.Reason)
	}
	return problemsError(plan)
}

// problemsError is the error of a run whose plan met versions it could
// not read (exit status 1, permission_denied or io_error: not known to be
// broken) or that are broken (exit status 3); nil when there were none.
// Neither kind is ever pruned, and a keep rule never counts them, so they
// only ever make a plan keep more.
func problemsError(plan *retention.Plan) error {
	var unreadable, broken int
	code := artifacts.CodeIO
	for _, p := range plan.Problems {
		if p.Unreadable() {
			unreadable++
			if p.Code == artifacts.CodePermission {
				code = artifacts.CodePermission
			}
			continue
		}
		broken++
	}
	verify := "agentstore fs verify --store " + shell.Quote(plan.Store)
	if unreadable > 0 {
		return artifacts.Errorf(code, "prune", nil, "could not read %s (they are not known to be corrupt, and were left alone with every version of their names the policy would have kept); run as a user who can read the whole store, or see: %s",
			countVersions(unreadable), verify)
	}
	if broken > 0 {
		what := "do not decode or miss their payloads and were"
		if broken == 1 {
			what = "does not decode or misses its payload and was"
		}
		return &cmdutil.ProblemsFound{Msg: fmt.Sprintf("%s %s left alone; run: %s", countVersions(broken), what, verify)}
	}
	return nil
}

func readPruneConfirmation(opts *PruneOptions) (retention.Confirmation, error) {
	c, err := cmdutil.ReadConfirmFile(opts.IO.In, opts.ConfirmFile, retention.ReadConfirmation)
	if artifacts.CodeOf(err) == artifacts.CodeInvalidArgument {
		return c, &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: errors.New(artifacts.ReasonOf(err))}
	}
	return c, err
}

// pruneCommand is the command line that runs this prune again with flag
// and value added.
func pruneCommand(opts *PruneOptions, u cmdutil.StoreURI, flag, value string) string {
	args := []string{"agentstore", "artifacts", "prune", "--store", shell.Quote(u.String())}
	if opts.Filter.Kind != "" {
		args = append(args, scopeArgs(opts.Filter)...)
	}
	p := opts.Policy
	if p.KeepLast > 0 {
		args = append(args, "--keep-last", strconv.Itoa(p.KeepLast))
	}
	if p.KeepWithin > 0 {
		args = append(args, "--keep-within", retention.FormatDuration(p.KeepWithin))
	}
	if p.NoKeepLatest {
		args = append(args, "--no-keep-latest")
	}
	if p.OlderThan > 0 {
		args = append(args, "--older-than", retention.FormatDuration(p.OlderThan))
	}
	if p.MIME != "" {
		args = append(args, "--mime", shell.Quote(p.MIME))
	}
	if p.Name != "" {
		args = append(args, "--name", shell.Quote(p.Name))
	}
	return strings.Join(append(args, flag, value), " ")
}

func printPrunePlan(opts *PruneOptions, plan *retention.Plan, jsonOut bool) error {
	if jsonOut {
		return output.JSON(opts.IO.Out, plan)
	}
	st := output.NewStyles(opts.IO)
	w := opts.IO.Out
	t := plan.Totals
	fmt.Fprintln(w, cmdutil.StoreName{URI: plan.Store, Layout: plan.Layout}.Line(st))
	fmt.Fprintf(w, "%s %s (%s) of %d names in %d scopes; keep %s (%s)\n", st.Bold("Plan: prune"),
		countVersions(int(t.PrunedVersions)), output.Size(t.PrunedBytes), t.Names, t.Scopes,
		countVersions(int(t.KeptVersions)), output.Size(t.KeptBytes))
	fmt.Fprintf(w, "  store:     %s (%s)\n", plan.Store, plan.Layout)
	filter := "the whole store"
	if plan.Filter != nil {
		filter = "under " + plan.Filter.String()
	}
	fmt.Fprintf(w, "  scopes:    %s\n", filter)
	fmt.Fprintf(w, "  policy:    %s\n", opts.Policy)
	fmt.Fprintf(w, "  as of:     %s\n", plan.AsOf)
	fmt.Fprintf(w, "  policy_id: %s\n", plan.PolicyID)
	fmt.Fprintf(w, "  plan_id:   %s\n", plan.PlanID)
	for _, n := range plan.Notes {
		fmt.Fprintf(w, "  note:      %s\n", n)
	}
	if len(plan.Problems) > 0 {
		fmt.Fprintf(w, "  %s %s left alone (not readable or not decodable; see fs verify)\n", st.Warn("problems:"), countVersions(len(plan.Problems)))
	}
	fmt.Fprintln(w)
	tb := output.NewTable(opts.IO, "SCOPE", "NAME", "VERSION", "SIZE", "AGE", "DECISION", "REASON")
	tb.NoTruncate(2, 3, 4, 5)
	for _, n := range plan.Names {
		row := func(v retention.Version, decision string) {
			tb.Row(n.Scope.String(), n.Name, strconv.FormatInt(v.Version, 10), output.Size(v.Size),
				age(v.AgeSeconds), decision, v.Reason)
		}
		for _, v := range n.Pruned {
			row(v, st.Bad("prune"))
		}
		for _, v := range n.Kept {
			row(v, "keep")
		}
	}
	return tb.Render()
}

// age formats an age in seconds compactly: 45s, 12m, 5h3m, 3d4h.
func age(sec int64) string {
	d := time.Duration(sec) * time.Second
	switch {
	case d < 0:
		return "future"
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, d%time.Hour/time.Minute)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", sec)
}

func printPruned(opts *PruneOptions, name cmdutil.StoreName, out PruneResult) {
	st := output.NewStyles(opts.IO)
	w := opts.IO.Out
	fmt.Fprintln(w, name.Line(st))
	fmt.Fprintf(w, "%s %s (%s) from %s (plan %s, policy %s); kept %s (%s)\n", st.OK("Pruned"),
		countVersions(int(out.DeletedVersions)), output.Size(out.DeletedBytes), name.URI, out.PlanID, out.PolicyID,
		countVersions(int(out.KeptVersions)), output.Size(out.KeptBytes))
	for _, n := range out.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if len(out.Deleted) > 0 {
		fmt.Fprintln(w)
		t := output.NewTable(opts.IO, "SCOPE", "NAME", "VERSION", "SIZE", "DIGEST")
		t.NoTruncate(2, 3)
		for _, d := range out.Deleted {
			t.Row(d.Scope.String(), d.Name, strconv.FormatInt(d.Version, 10), output.Size(d.Size), d.Digest)
		}
		_ = t.Render()
	}
	for _, f := range out.Failed {
		fmt.Fprintf(opts.IO.ErrOut, "agentstore: not pruned: %q in %s (%s): %s\n", f.Name, f.Scope, f.Code, f.Reason)
	}
}

// planMetrics are the metrics of a run that planned but deleted nothing.
func planMetrics(p *retention.Plan) []promfile.Metric {
	return pruneMetrics(p, 0, 0, 0)
}

func resultMetrics(p *retention.Plan, r *retention.Result) []promfile.Metric {
	failed := 0
	for _, f := range r.Failed {
		failed += len(f.Versions)
	}
	return pruneMetrics(p, r.DeletedVersions, r.DeletedBytes, failed)
}

func pruneMetrics(p *retention.Plan, deleted, deletedBytes int64, errs int) []promfile.Metric {
	t := p.Totals
	return []promfile.Metric{
		promfile.Gauge("planned_versions", "Versions the last run's plan prunes.", float64(t.PrunedVersions)),
		promfile.Gauge("planned_bytes", "Bytes of the versions the last run's plan prunes.", float64(t.PrunedBytes)),
		promfile.Gauge("pruned_versions", "Versions the last run deleted.", float64(deleted)),
		promfile.Gauge("pruned_bytes", "Bytes the last run deleted.", float64(deletedBytes)),
		promfile.Gauge("kept_versions", "Versions the last run's policy keeps.", float64(t.KeptVersions)),
		promfile.Gauge("kept_bytes", "Bytes of the versions the last run's policy keeps.", float64(t.KeptBytes)),
		promfile.Gauge("errors", "Planned versions the last run could not delete.", float64(errs)),
		promfile.Gauge("problems", "Versions the last run found unreadable or undecodable (never pruned).", float64(t.Problems)),
	}
}
