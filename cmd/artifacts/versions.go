package artifactscmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// VersionsOptions holds the flag values and dependencies of
// "artifacts versions".
type VersionsOptions struct {
	deps

	// ScopeFlags are --app, --user and --session as given.
	ScopeFlags cmdutil.ScopeFlags
	// Scope is the scope they select.
	Scope artifacts.Scope
	// Name is the artifact name (--name).
	Name string
	// Limit is the page size (--limit).
	Limit int
	// LimitSet is true when --limit was given. With --all and no --limit
	// the pages are the largest the store serves: the output is the same,
	// in fewer round trips.
	LimitSet bool
	// Cursor is the last version of the previous page (--cursor), 0 for
	// the first page.
	Cursor int64
	// All follows every page (--all).
	All bool
}

// VersionItem is one row of "artifacts versions": a published version.
// It carries the keys of the custom metadata, never its values.
type VersionItem struct {
	Version      int64    `json:"version"`
	Size         int64    `json:"size"`
	Digest       string   `json:"digest"`
	MIMEType     string   `json:"mime_type"`
	CreatedAt    string   `json:"created_at"`
	CreatedAtMS  int64    `json:"created_at_ms"`
	MetadataKeys []string `json:"metadata_keys"`
}

// VersionsResult is the JSON output of "artifacts versions".
type VersionsResult struct {
	Scope Scope         `json:"scope"`
	Name  string        `json:"name"`
	Items []VersionItem `json:"items"`
	// NextCursor is the --cursor of the next page; null after the last.
	NextCursor *int64 `json:"next_cursor"`
}

// NewCmdVersions returns "artifacts versions". runF, when not nil,
// replaces the run function.
func NewCmdVersions(f *cmdutil.Factory, runF func(context.Context, *VersionsOptions) error) *cobra.Command {
	opts := &VersionsOptions{deps: depsOf(f)}
	cmd := &cobra.Command{
		Use:   "versions --app A [--user U [--session S]] --name NAME [--limit N] [--cursor V] [--all]",
		Short: "List the published versions of one artifact",
		Long: `List the published versions of the artifact NAME in a scope, oldest first,
one row per version: version, size, SHA-256 digest, MIME type, creation
time and the keys of its custom metadata (never their values, never the
payload). A page holds --limit versions (default 100); the next page starts
after --cursor V, the last version of the previous page. --all follows
every page.

JSON:
  {"scope": S, "name", "items": [{"version", "size", "digest", "mime_type",
   "created_at", "created_at_ms", "metadata_keys"}], "next_cursor": V|null}`,
		Example: `  agentstore artifacts versions --store /var/lib/agents --app demo-a \
      --user user-42 --session session-7 --name reports/summary.txt

  # ids with spaces, slashes or any UTF-8 are given as they are
  agentstore artifacts versions --store /var/lib/agents --app demo-a \
      --user '用户-a' --session 'sessão/ü 1' --name 'données/résumé.md' -o json

  # 7 at a time, from after version 14
  agentstore artifacts versions --store /var/lib/agents --app demo-a --user bulk \
      --session s-a --name log.txt --limit 7 --cursor 14`,
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
			if err := validateLimit(opts.Limit); err != nil {
				return err
			}
			opts.LimitSet = cmd.Flags().Changed("limit")
			if opts.Cursor < 0 {
				return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: fmt.Errorf("invalid --cursor %d: want a version number", opts.Cursor)}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runVersions(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.ScopeFlags)
	fl := cmd.Flags()
	fl.StringVar(&opts.Name, "name", "", "artifact name (required)")
	fl.IntVar(&opts.Limit, "limit", artifacts.DefaultPageLimit, fmt.Sprintf(limitHelp, "versions"))
	fl.Int64Var(&opts.Cursor, "cursor", 0, "start after this version (the previous page's next_cursor)")
	fl.BoolVar(&opts.All, "all", false, "follow every page")
	cmdutil.SetExitStatusNote(cmd, readExitNote)
	return cmd
}

func runVersions(ctx context.Context, opts *VersionsOptions) error {
	jsonOut, err := opts.jsonOutput()
	if err != nil {
		return err
	}
	st, err := opts.OpenStore(ctx)
	if err != nil {
		return err
	}
	res, err := ListVersions(ctx, st, opts.Scope, opts.Name, pageLimit(st, opts.Limit, opts.LimitSet, opts.All), opts.Cursor, opts.All)
	if err != nil {
		return err
	}
	if jsonOut {
		return output.JSON(opts.IO.Out, res)
	}
	t := output.NewTable(opts.IO, "VERSION", "SIZE", "DIGEST", "MIME TYPE", "CREATED", "METADATA KEYS")
	t.NoTruncate(0, 1, 4)
	for _, it := range res.Items {
		t.Row(strconv.FormatInt(it.Version, 10), output.Size(it.Size), it.Digest, it.MIMEType,
			createdCell(opts.deps, it.CreatedAtMS), strings.Join(it.MetadataKeys, ","))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if res.NextCursor != nil {
		fmt.Fprintf(opts.IO.ErrOut, "More versions: add --cursor %d for the next page, or --all.\n", *res.NextCursor)
	}
	return nil
}

// ListVersions lists a name's published versions: one page of limit
// versions after cursor, or every page from cursor on when all is true.
func ListVersions(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, name string, limit int, cursor int64, all bool) (VersionsResult, error) {
	res := VersionsResult{Scope: ScopeJSON(scope), Name: name, Items: []VersionItem{}}
	for {
		c := ""
		if cursor > 0 {
			c = strconv.FormatInt(cursor, 10)
		}
		page, err := st.ListVersions(ctx, scope, name, artifacts.ListOptions{Limit: limit, Cursor: c})
		if err != nil {
			return VersionsResult{}, err
		}
		for _, r := range page.Items {
			res.Items = append(res.Items, versionItem(r))
		}
		if page.NextCursor == "" {
			return res, nil
		}
		next, err := strconv.ParseInt(page.NextCursor, 10, 64)
		if err != nil || next <= cursor {
			return VersionsResult{}, fmt.Errorf("store returned version cursor %q after %d: not advancing", page.NextCursor, cursor)
		}
		if !all {
			res.NextCursor = &next
			return res, nil
		}
		cursor = next
	}
}

func versionItem(r artifacts.Record) VersionItem {
	return VersionItem{
		Version:      r.Version,
		Size:         r.Size,
		Digest:       r.Digest,
		MIMEType:     r.MIMEType,
		CreatedAt:    output.TimeMS(r.CreatedAt),
		CreatedAtMS:  r.CreatedAt,
		MetadataKeys: r.MetadataKeys(),
	}
}
