package artifactscmd

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// LocateOptions holds the flag values and dependencies of
// "artifacts locate".
type LocateOptions struct {
	deps
	// StoreURI returns the parsed --store, named in the output.
	StoreURI func() (cmdutil.StoreURI, error)

	// ScopeFlags are --app, --user and --session as given.
	ScopeFlags cmdutil.ScopeFlags
	// Scope is the scope they select.
	Scope artifacts.Scope
	// Name is the artifact name (--name).
	Name string
	// Version is --version; artifacts.Latest when it was not given.
	Version int64
}

// LocatedFile is one file or object that holds part of a version.
type LocatedFile = artifacts.LocatedFile

// LocateResult is the JSON output of "artifacts locate".
type LocateResult struct {
	// StoreJSON is the canonical store URI and its layout.
	cmdutil.StoreJSON
	Scope   Scope         `json:"scope"`
	Name    string        `json:"name"`
	Version int64         `json:"version"`
	Files   []LocatedFile `json:"files"`
}

// NewCmdLocate returns "artifacts locate". runF, when not nil, replaces
// the run function.
func NewCmdLocate(f *cmdutil.Factory, runF func(context.Context, *LocateOptions) error) *cobra.Command {
	opts := &LocateOptions{deps: depsOf(f), StoreURI: f.StoreURI}
	cmd := &cobra.Command{
		Use:   "locate --app A [--user U [--session S]] --name NAME [--version V]",
		Short: "Show the files or objects that hold one version, for restores from backup",
		Long: `Show where one version of NAME (the latest unless --version) lives: its
record, its payload and its reservation, as absolute paths in a filesystem
store or gs://BUCKET/OBJECT names in a Cloud Storage store, with whether
each exists and its size. Use it to restore a missing or damaged file from
a backup; "agentstore fs verify" then checks it again.

With --version the files are shown even when the record is damaged or
gone; without it the latest version is read from its record.

The table is preceded by a line naming the store and its layout.

JSON: {"store": URI, "layout", "scope": S, "name", "version", "files":
[{"role", "location", "exists", "size"}]}`,
		Example: `  agentstore artifacts locate --store /var/lib/agents --app demo-a \
      --user user-42 --session session-damaged --name lost-data.bin --version 1`,
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
			if opts.Version < 0 {
				return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: fmt.Errorf("invalid --version %d: want a version number", opts.Version)}
			}
			if !cmd.Flags().Changed("version") {
				opts.Version = artifacts.Latest
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runLocate(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.ScopeFlags)
	fl := cmd.Flags()
	fl.StringVar(&opts.Name, "name", "", "artifact name (required)")
	fl.Int64Var(&opts.Version, "version", 0, "version to locate (default: the latest, read from its record)")
	cmdutil.SetExitStatusNote(cmd, `1 also when no file of the version exists (code not_found)`)
	return cmd
}

func runLocate(ctx context.Context, opts *LocateOptions) error {
	jsonOut, err := opts.jsonOutput()
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
	v := opts.Version
	if v == artifacts.Latest {
		rec, err := st.Stat(ctx, opts.Scope, opts.Name, artifacts.Latest)
		if artifacts.IsNotFound(err) {
			if cerr := cmdutil.CheckScope(ctx, st, opts.Scope); cerr != nil {
				return cerr
			}
		}
		if err != nil {
			return err
		}
		v = rec.Version
	}
	name := cmdutil.NameStore(u, st)
	res := LocateResult{StoreJSON: name.JSON(), Scope: ScopeJSON(opts.Scope), Name: opts.Name, Version: v}
	files, err := st.Locate(ctx, opts.Scope, opts.Name, v)
	if artifacts.CodeOf(err) == artifacts.CodeUnsupported {
		return cmdutil.CodedError(cmdutil.CodeUnsupportedStore, fmt.Errorf("the %s store has no files to locate", st.Capabilities().Name))
	}
	if err != nil {
		return err
	}
	res.Files = files
	found := false
	for _, lf := range res.Files {
		found = found || lf.Exists
	}
	if !found {
		return cmdutil.CodedError(string(artifacts.CodeNotFound), fmt.Errorf("no file of %q v%d exists in %s", opts.Name, v, opts.Scope))
	}
	if jsonOut {
		return output.JSON(opts.IO.Out, res)
	}
	fmt.Fprintln(opts.IO.Out, name.Line(output.NewStyles(opts.IO)))
	t := output.NewTable(opts.IO, "ROLE", "EXISTS", "SIZE", "LOCATION")
	t.NoTruncate(0, 1, 2)
	for _, lf := range res.Files {
		size := "-"
		if lf.Exists {
			size = strconv.FormatInt(lf.Size, 10)
		}
		t.Row(lf.Role, strconv.FormatBool(lf.Exists), size, lf.Location)
	}
	return t.Render()
}
