// Package wscmd holds the leaf commands of "agentstore ws": list,
// snapshot and hydrate the per-session scratch workspaces under the
// --scratch root (a global flag and config key). The work is done by
// package workspace; these commands parse flags, call it and print.
package wscmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// progressFiles and progressBytes are the sizes from which a tree counts
// as large enough for a progress line (on a terminal only).
const (
	progressFiles = 500
	progressBytes = 32 << 20
)

// deps are the dependencies every ws command takes from the Factory.
type deps struct {
	IO     *iostreams.IOStreams
	Config func() (*cmdutil.Config, error)
	// OpenStore opens --store for reading; CreateStore for writing,
	// making a new store when there is none.
	OpenStore   func(ctx context.Context) (*artifacts.Store, error)
	CreateStore func(ctx context.Context) (*artifacts.Store, error)
	// StoreURI returns the parsed --store, named in the output.
	StoreURI func() (cmdutil.StoreURI, error)
	Now      func() time.Time
	Logger   func() *slog.Logger
}

func depsOf(f *cmdutil.Factory) deps {
	return deps{
		IO:          f.IO,
		Config:      f.Config,
		OpenStore:   f.OpenStore,
		CreateStore: f.CreateStore,
		StoreURI:    f.StoreURI,
		Now:         f.Now,
		Logger:      f.Logger,
	}
}

// scratch returns the --scratch root, or a usage error when none is set.
func (d deps) scratch() (*cmdutil.Config, error) {
	cfg, err := d.Config()
	if err != nil {
		return nil, err
	}
	if cfg.Scratch == "" {
		return nil, cmdutil.Usagef("no scratch root given: use --scratch DIR or set %s", cmdutil.EnvVar(cmdutil.KeyScratch))
	}
	return cfg, nil
}

// newManager opens the workspace manager over the configured scratch
// root. The default root (no --scratch given) is created on first use, as
// the default store is; a root that was given must exist.
func (d deps) newManager(cfg *cmdutil.Config, st *artifacts.Store) (*workspace.Manager, error) {
	if cfg.ScratchDefault {
		if err := os.MkdirAll(cfg.Scratch, 0o700); err != nil {
			return nil, artifacts.Errorf(artifacts.CodeIO, "ws", err, "cannot create the default scratch root %s: give --scratch DIR or set %s", cfg.Scratch, cmdutil.EnvVar(cmdutil.KeyScratch))
		}
	}
	return workspace.New(workspace.Options{Scratch: cfg.Scratch, Store: st, Now: d.Now})
}

// progress returns a callback for zipsafe's Progress that starts a
// progress line on a terminal's stderr once the tree is large, and a
// function that ends it.
func progress(ios *iostreams.IOStreams, label string) (func(files int, bytes int64), func()) {
	p := output.NewProgress(ios)
	started := false
	update := func(files int, bytes int64) {
		if !started && (files >= progressFiles || bytes >= progressBytes) {
			started = true
			p.Start(label)
		}
		if started {
			p.Update(int64(files), bytes)
		}
	}
	return update, func() {
		if started {
			p.Done()
		}
	}
}

// scopeJSON is how a scope is printed.
func scopeJSON(s artifacts.Scope) *artifacts.Scope { return &s }

// sessionManager resolves the session scope of flags, then opens the store
// (for writing: making it when missing) and a manager over the scratch
// root: what snapshot and hydrate share. It also returns the store's name
// for the output.
func (d deps) sessionManager(ctx context.Context, flags cmdutil.ScopeFlags, write bool) (artifacts.Scope, *cmdutil.Config, *workspace.Manager, cmdutil.StoreName, error) {
	var none cmdutil.StoreName
	scope, err := flags.Scope(true, artifacts.KindSession)
	if err != nil {
		return artifacts.Scope{}, nil, nil, none, err
	}
	cfg, err := d.scratch()
	if err != nil {
		return artifacts.Scope{}, nil, nil, none, err
	}
	open := d.OpenStore
	if write {
		open = d.CreateStore
		// A writer makes the store only when it has something to write:
		// no store is created for a session without a workspace.
		// A legacy directory of the session (from before app-bound names)
		// is the manager's to judge, against a store that must exist.
		dir := filepath.Join(cfg.Scratch, workspace.DirName(scope.App, scope.User, scope.Session))
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			legacy := filepath.Join(cfg.Scratch, workspace.LegacyDirName(scope.User, scope.Session))
			if _, err := os.Lstat(legacy); err != nil {
				return artifacts.Scope{}, nil, nil, none, artifacts.Errorf(artifacts.CodeNotFound, "ws", nil,
					"%s has no workspace under the scratch root %s (looked for %s)", scope, cfg.Scratch, dir)
			}
			open = d.OpenStore
		}
	}
	st, err := open(ctx)
	if err != nil {
		return artifacts.Scope{}, nil, nil, none, err
	}
	name, err := d.storeName(st)
	if err != nil {
		return artifacts.Scope{}, nil, nil, none, err
	}
	m, err := d.newManager(cfg, st)
	return scope, cfg, m, name, err
}

// storeName names st, opened from --store, for the output; a nil st (no
// store) gives the zero StoreName.
func (d deps) storeName(st *artifacts.Store) (cmdutil.StoreName, error) {
	if st == nil {
		return cmdutil.StoreName{}, nil
	}
	u, err := d.StoreURI()
	if err != nil {
		return cmdutil.StoreName{}, err
	}
	return cmdutil.NameStore(u, st), nil
}

// header prints the lines that open the table output of every ws command:
// the store (or that there is none) and the scratch root.
func header(ios *iostreams.IOStreams, name cmdutil.StoreName, scratch string) {
	sty := output.NewStyles(ios)
	fmt.Fprintln(ios.Out, name.Line(sty))
	fmt.Fprintln(ios.Out, cmdutil.ScratchLine(sty, scratch))
}

// safe returns a path for a terminal: as it is when every character is
// printable, else quoted with Go escapes, so that a name planted in a
// workspace cannot move the cursor or forge lines.
func safe(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) || r == utf8.RuneError {
			return strconv.Quote(s)
		}
	}
	return s
}

// configKeys are the flags of the ws commands that are also config keys
// ("ws.NAME" in the config file's "ws:" section, AGENTSTORE_WS_NAME).
var configKeys = []string{"snapshot-format"}

func init() {
	keys := make([]string, len(configKeys))
	for i, k := range configKeys {
		keys[i] = "ws." + k
	}
	cmdutil.RegisterConfigKeys(keys...)
}

// addFormatFlag adds --snapshot-format, stored in p, to cmd.
func addFormatFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "snapshot-format", string(workspace.FormatAuto),
		"snapshot format: incremental (what changed), zip (a whole workspace.zip) or auto (zip below 8 MiB)")
	_ = cmd.RegisterFlagCompletionFunc("snapshot-format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{string(workspace.FormatIncremental), string(workspace.FormatZip), string(workspace.FormatAuto)}, cobra.ShellCompDirectiveNoFileComp
	})
}

// parseFormat checks a --snapshot-format value: a usage error (exit 2)
// unless it names a format. The empty value is refused too: the library
// reads it as zip, a user who wrote nothing meant no format at all.
func parseFormat(s string) (workspace.SnapshotFormat, error) {
	f, err := workspace.ParseSnapshotFormat(s)
	if err != nil || s == "" {
		return "", cmdutil.Usagef("--snapshot-format %q: want incremental, zip or auto", s)
	}
	return f, nil
}

// formatFlag applies the ws.* config keys to the flags of cmd not given
// on the command line, then checks --snapshot-format (in p): a bad value
// from the config file or environment is a usage error naming its key.
func formatFlag(cmd *cobra.Command, d deps, p *string) error {
	given := cmd.Flags().Changed("snapshot-format")
	cfg, err := d.Config()
	if err != nil {
		return err
	}
	if err := cmdutil.ApplyConfigKeys(cmd, cfg, "ws"); err != nil {
		return err
	}
	_, err = parseFormat(*p)
	if err != nil && !given && cmd.Flags().Changed("snapshot-format") {
		return cmdutil.Usagef("config key ws.snapshot-format (or $%s): %q: want incremental, zip or auto", cmdutil.EnvVar("ws-snapshot-format"), *p)
	}
	return err
}
