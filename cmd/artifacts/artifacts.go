// Package artifactscmd holds the leaf commands of "agentstore artifacts":
// list, versions and delete. Each command is an Options struct holding its
// flag values and lazy dependencies, a NewCmdX constructor whose RunE only
// validates flags, and a runX function doing the work, so that flag parsing
// is testable without I/O. The delete plan (its computation, plan_id and
// confirmation matching) lives in plan.go and has no presentation in it.
//
// None of these commands ever prints payload bytes or custom metadata
// values, in any output mode; versions prints metadata keys only.
package artifactscmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/deletion"
)

// Scope is the JSON form of a scope: {"kind","app","user","session"} with
// only the parts its kind has; the same form plans use.
type Scope = deletion.Scope

// ScopeJSON converts s into its JSON form, keeping only the parts its kind
// has.
func ScopeJSON(s artifacts.Scope) Scope { return deletion.ScopeOf(s) }

// deps are the dependencies every command of the group takes from the
// Factory, as lazy functions so tests can replace each.
type deps struct {
	// IO is the standard streams.
	IO *iostreams.IOStreams
	// Config returns the resolved global settings.
	Config func() (*cmdutil.Config, error)
	// OpenStore opens the store named by --store.
	OpenStore func(ctx context.Context) (*artifacts.Store, error)
	// Logger returns the diagnostics logger (stderr).
	Logger func() *slog.Logger
	// Now is the clock, for relative times on a terminal.
	Now func() time.Time
}

func depsOf(f *cmdutil.Factory) deps {
	return deps{IO: f.IO, Config: f.Config, OpenStore: f.OpenStore, Logger: f.Logger, Now: f.Now}
}

// jsonOutput reports whether the resolved output format is JSON; a missing
// configuration is an error.
func (d deps) jsonOutput() (bool, error) {
	cfg, err := d.Config()
	if err != nil {
		return false, err
	}
	return cfg.JSON(), nil
}

func (d deps) now() time.Time {
	if d.Now == nil {
		return time.Now()
	}
	return d.Now()
}

// validateName checks --name before any I/O: an invalid name is a usage
// error (exit status 2) with code invalid_name.
func validateName(cmd *cobra.Command, name string) error {
	if !cmd.Flags().Changed("name") {
		return cmdutil.Usagef("--name is required")
	}
	if err := artifacts.ValidateName(name); err != nil {
		var e *artifacts.Error
		msg := err.Error()
		if errors.As(err, &e) {
			msg = "invalid --name: " + e.Msg
		}
		return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidName), Err: errors.New(msg)}
	}
	return nil
}

// validateLimit checks --limit before any I/O: a page holds 1 to
// artifacts.DefaultMaxPageLimit entries.
func validateLimit(limit int) error {
	if limit < 1 {
		return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: fmt.Errorf("invalid --limit %d: want a page size of at least 1", limit)}
	}
	if limit > artifacts.DefaultMaxPageLimit {
		return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: fmt.Errorf("invalid --limit %d: a page holds at most %d; use --all to follow every page", limit, artifacts.DefaultMaxPageLimit)}
	}
	return nil
}

// pageLimit is the page size of a listing: limit, or with --all and no
// --limit the largest page st serves (every page is read anyway; a store
// that lists a whole scope per page, as the Cloud Storage layouts do, is
// then read once instead of once a default page).
func pageLimit(st *artifacts.Store, limit int, set, all bool) int {
	if all && !set {
		return st.Capabilities().MaxPageLimit
	}
	return limit
}

// limitHelp is the help text of --limit.
var limitHelp = fmt.Sprintf("%%s per page, at most %d (--all follows every page)", artifacts.DefaultMaxPageLimit)

// scopeArgs returns the scope flags selecting s, shell-quoted.
func scopeArgs(s artifacts.Scope) []string {
	args := []string{"--app", shell.Quote(s.App)}
	if s.Kind == artifacts.KindUser || s.Kind == artifacts.KindSession {
		args = append(args, "--user", shell.Quote(s.User))
	}
	if s.Kind == artifacts.KindSession {
		args = append(args, "--session", shell.Quote(s.Session))
	}
	return args
}

// createdCell formats a created_at for a table cell: relative on a
// terminal, RFC 3339 with milliseconds otherwise.
func createdCell(d deps, ms int64) string {
	return output.HumanTime(d.IO, d.now(), time.UnixMilli(ms))
}

// exitNote is the command-specific part of EXIT STATUS shared by the
// read-only commands.
const readExitNote = `1 also when the scope or name does not exist (code not_found), the store
  directory is missing, its root is a symbolic link (unsafe_store), or a
  record on the way does not decode (corrupt_artifact)`
