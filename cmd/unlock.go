package cmd

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	fscmd "github.com/agentstore/agentstore/cmd/fs"
	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/sweep"
)

// UnlockPlan is the plan of a forced unlock: the lock file and exactly the
// lock it held when the plan was made. Its plan_id confirms it.
type UnlockPlan struct {
	Action string    `json:"action"`
	Lock   string    `json:"lock"`
	Holder lock.Info `json:"holder"`
	Digest string    `json:"digest"`
	PlanID string    `json:"plan_id,omitempty"`
}

// UnlockResult is the JSON output of "agentstore unlock".
type UnlockResult struct {
	// Lock is the lock as found.
	Lock lock.State `json:"lock"`
	// Removed is true when the lock file was removed.
	Removed bool `json:"removed"`
	// Plan is the plan of a forced unlock still to be confirmed, and
	// PlanID its plan_id, for --confirm.
	Plan   *UnlockPlan `json:"plan,omitempty"`
	PlanID string      `json:"plan_id,omitempty"`
}

type unlockOptions struct {
	sweep   bool
	force   bool
	confirm string
}

func newUnlockCmd(f *cmdutil.Factory) *cobra.Command {
	opts := &unlockOptions{}
	cmd := &cobra.Command{
		Use:   "unlock [--sweep] [--force [--confirm PLAN_ID]]",
		Short: "Show a maintenance lock and remove it when stale",
		Long: `Show the lock that keeps two repairs or prunes off one store (` + fscmd.LockFile + `
in the --store directory; for a gs:// store, the object ` + fscmd.LockFile + `
below the store's prefix) or, with --sweep, two sweeps off one scratch root
(` + sweep.LockFile + ` in the --scratch directory): who holds it, since when,
its last heartbeat, and whether it is stale.

A stale lock (its heartbeat is older than 6 hours, its process is gone from
this host, or it is damaged and over a minute old) is removed; the next
repair or sweep would take it over anyway. A lock that is not stale is left
alone, exit status 5. --force removes it after a plan is confirmed: without
--confirm it prints the plan and exits 4; run it again with --confirm
PLAN_ID to remove exactly that lock (a lock refreshed or replaced since
makes the confirmation stale: exit 4, nothing removed). Use --force only
when you know its holder is not running (say, a repair on another host
that crashed).

A gs:// store's lock object is handled the same way: it is removed only if
it is still the very object generation shown (or planned), so a lock
refreshed or taken over meanwhile is never removed. Give --layout when the
store needs it to open.

JSON: {"lock": {"path", "exists", "holder", "parsed", "refreshed", "stale",
"why", "digest"}, "removed", "plan": {"action", "lock", "holder",
"digest", "plan_id"}, "plan_id"}`,
		Example: `  agentstore unlock --store /var/lib/agentstore
  agentstore unlock --sweep --scratch /var/lib/agentstore/scratch
  agentstore unlock --store gs://my-bucket

  # a lock left by a crashed repair on another host
  agentstore unlock --store /var/lib/agentstore --force
  agentstore unlock --store /var/lib/agentstore --force --confirm PLAN_ID`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.force = opts.force || cmd.Flags().Changed("confirm")
			if cmd.Flags().Changed("confirm") && !plan.IsID(opts.confirm) {
				return cmdutil.Usagef("--confirm %q is not a plan_id (64 lowercase hex characters)", opts.confirm)
			}
			return runUnlock(cmd.Context(), f, opts)
		},
	}
	cmdutil.SetExitStatusNote(cmd, `0  no lock, or a stale lock was removed
4  --force without a matching --confirm: the plan is printed; nothing removed
5  the lock is held and not stale; nothing removed`)
	fl := cmd.Flags()
	fl.BoolVar(&opts.sweep, "sweep", false, "the sweep lock of the --scratch root instead of the repair lock of the --store")
	fl.BoolVar(&opts.force, "force", false, "remove a lock that is not stale, after confirming a plan")
	fl.StringVar(&opts.confirm, "confirm", "", "the plan_id printed by --force")
	return cmd
}

func runUnlock(ctx context.Context, f *cmdutil.Factory, opts *unlockOptions) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	b, again, err := lockTarget(ctx, f, opts.sweep)
	if err != nil {
		return err
	}
	path := b.Where()
	st, err := lock.InspectBackend(ctx, b, lock.Options{Now: f.Now})
	if err != nil {
		return lockIOError(err, "cannot read the lock %s", path)
	}
	res := UnlockResult{Lock: st}
	w := f.IO.Out
	show := func() {
		if cfg.JSON() {
			_ = output.JSON(w, res)
			return
		}
		if !st.Exists {
			fmt.Fprintf(w, "No lock at %s; nothing to do.\n", path)
			return
		}
		fmt.Fprintf(w, "Lock %s\n", path)
		if h := st.Holder; st.Parsed {
			fmt.Fprintf(w, "  held by:   %s, pid %d on %s", h.Purpose, h.PID, h.Host)
			if h.User != "" {
				fmt.Fprintf(w, ", user %s", h.User)
			}
			fmt.Fprintf(w, "\n  since:     %s\n", output.Time(h.Started))
		} else {
			fmt.Fprintf(w, "  held by:   unknown (the lock file does not parse)\n")
		}
		fmt.Fprintf(w, "  heartbeat: %s\n", output.Time(st.Refreshed))
		state := "not stale"
		if st.Stale {
			state = "stale"
		}
		fmt.Fprintf(w, "  state:     %s: %s\n", state, st.Why)
		switch {
		case res.Removed:
			fmt.Fprintf(w, "Removed it.\n")
		case res.Plan != nil:
			fmt.Fprintf(w, "Plan %s: remove this lock.\n", res.Plan.PlanID)
		}
	}
	if !st.Exists {
		show()
		return nil
	}
	p := UnlockPlan{Action: "unlock", Lock: path, Holder: st.Holder, Digest: st.Digest}
	if p.PlanID, err = plan.ID(p); err != nil {
		return err
	}
	switch {
	case st.Stale:
	case !opts.force:
		show()
		return &cmdutil.LockedError{Msg: fmt.Sprintf("%s is held and not stale (%s); nothing was removed. If you are sure its holder is not running, run: %s --force", path, st.Why, again)}
	case opts.confirm == "":
		res.Plan, res.PlanID = &p, p.PlanID
		show()
		return &cmdutil.ConfirmationError{Msg: fmt.Sprintf("confirmation required: nothing was removed; to remove this lock, run: %s --force --confirm %s", again, p.PlanID)}
	case opts.confirm != p.PlanID:
		show()
		return &cmdutil.ConfirmationError{Stale: true, Msg: fmt.Sprintf("the lock changed since plan %s was made (refreshed, released or taken again); nothing was removed; run %s --force to see it again", opts.confirm, again)}
	}
	if err := lock.RemoveContext(ctx, st); err != nil {
		if errors.Is(err, lock.ErrChanged) {
			return &cmdutil.ConfirmationError{Stale: true, Msg: fmt.Sprintf("%s changed while unlock ran; nothing was removed; run %s again", path, again)}
		}
		return lockIOError(err, "cannot remove the lock %s", path)
	}
	res.Removed = true
	f.Logger().Info(fmt.Sprintf("removed the lock %s held by %s pid %d on %s since %s", path, st.Holder.Purpose, st.Holder.PID, st.Holder.Host, st.Holder.Started.UTC().Format(time.RFC3339)))
	show()
	return nil
}

// lockIOError reports an error reading or removing a lock: a Cloud
// Storage error keeps the code it was classified with, a file error is
// io_error.
func lockIOError(err error, format string, args ...any) error {
	var ae *artifacts.Error
	if errors.As(err, &ae) {
		return artifacts.Errorf(ae.Code, "unlock", err, format, args...)
	}
	return cmdutil.CodedError("io_error", fmt.Errorf(format+": %v", append(args, err)...))
}

// lockTarget returns the lock unlock looks at and the command that runs
// unlock on it again: the sweep lock file of the scratch root, the lock
// file in a filesystem store's root (whatever its layout, so that a store
// that does not open can still be unlocked), or the lock the driver of a
// gs:// store keeps (artifacts.Locker).
func lockTarget(ctx context.Context, f *cmdutil.Factory, sweepLock bool) (b lock.Backend, again string, err error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, "", err
	}
	if sweepLock {
		return lock.File(filepath.Join(cfg.Scratch, sweep.LockFile)), cmdutil.UnlockCommand("--sweep", "--scratch", cfg.Scratch), nil
	}
	u, err := f.StoreURI()
	if err != nil {
		return nil, "", err
	}
	if u.Scheme == cmdutil.SchemeFile {
		return lock.File(filepath.Join(u.Root, fscmd.LockFile)), cmdutil.UnlockCommand(cmdutil.StoreUnlockArgs(u, "")...), nil
	}
	st, err := f.OpenStore(ctx)
	if err != nil {
		return nil, "", err
	}
	layout := st.Capabilities().Layout
	if b, err = st.StoreLock(); err != nil {
		return nil, "", cmdutil.CodedError(cmdutil.CodeUnsupportedStore, fmt.Errorf("the %s store %s has no maintenance lock", layout, u.String()))
	}
	return b, cmdutil.UnlockCommand(cmdutil.StoreUnlockArgs(u, layout)...), nil
}
