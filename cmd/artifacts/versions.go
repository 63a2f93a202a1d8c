package artifactscmd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
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
	// StoreURI returns the parsed --store, named in the delete commands
	// printed for broken versions.
	StoreURI func() (cmdutil.StoreURI, error)

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
	// State is StateOK or StateCorrupt: the record does not decode (the
	// other fields are then empty) or the payload is missing or of the
	// wrong size (checked by size, not read). Reason says what is wrong.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// The states of a VersionItem.
const (
	StateOK      = "ok"
	StateCorrupt = "corrupt"
)

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
	opts := &VersionsOptions{deps: depsOf(f), StoreURI: f.StoreURI}
	cmd := &cobra.Command{
		Use:   "versions --app A [--user U [--session S]] --name NAME [--limit N] [--cursor V] [--all]",
		Short: "List the published versions of one artifact",
		Long: `List the published versions of the artifact NAME in a scope, oldest first,
one row per version: version, state, size, SHA-256 digest, MIME type,
creation time and the keys of its custom metadata (never their values,
never the payload). A broken version is listed beside the healthy ones as
corrupt, with why: a record that does not decode or belongs to another
name, or a payload that is missing or of the wrong size (found by its
size; "agentstore fs verify" reads the payloads). In google-adk-file a
version directory ADK counts but cannot load is broken: no metadata.json,
one that does not parse or names another version, or no payload. In
google-adk-gcs a version is one object, which no listing can find broken
without reading it: "agentstore fs verify" checks each object's CRC32C.
A broken version can be deleted with "agentstore artifacts delete ...
--version V" like any other version. A page holds --limit versions
(default 100); the next page starts after --cursor V, the last version of
the previous page. --all follows every page.

JSON:
  {"scope": S, "name", "items": [{"version", "size", "digest", "mime_type",
   "created_at", "created_at_ms", "metadata_keys", "state", "reason"}],
   "next_cursor": V|null}`,
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
	u, err := opts.StoreURI()
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
	var broken []string
	for _, it := range res.Items {
		if it.State == StateCorrupt {
			broken = append(broken, fmt.Sprintf("v%d (%s), to delete it run: %s", it.Version, it.Reason, artifacts.DeleteCommand(u.String(), opts.Scope, opts.Name, it.Version)))
		}
	}
	if len(broken) > 0 {
		opts.Logger().Warn(fmt.Sprintf("%d %s broken: %s",
			len(broken), plural(len(broken), "version is", "versions are"), strings.Join(broken, "; ")))
	}
	if jsonOut {
		return output.JSON(opts.IO.Out, res)
	}
	t := output.NewTable(opts.IO, "VERSION", "STATE", "SIZE", "DIGEST", "MIME TYPE", "CREATED", "METADATA KEYS")
	t.NoTruncate(0, 1, 2, 5)
	for _, it := range res.Items {
		if it.State == StateCorrupt && it.MIMEType == "" {
			t.Row(strconv.FormatInt(it.Version, 10), it.State, "-", "-", "-", "-", it.Reason)
		} else {
			t.Row(strconv.FormatInt(it.Version, 10), it.State, output.Size(it.Size), it.Digest, it.MIMEType,
				createdCell(opts.deps, it.CreatedAtMS), strings.Join(it.MetadataKeys, ","))
		}
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
		page, err := st.ListVersions(ctx, scope, name, artifacts.ListOptions{Limit: limit, Cursor: c, IncludeBroken: st.CanListBroken()})
		if err != nil {
			return VersionsResult{}, err
		}
		res.Items = append(res.Items, pageItems(page)...)
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

// pageItems returns the rows of a page: its records and its broken
// versions, by version.
func pageItems(page artifacts.VersionPage) []VersionItem {
	bad := map[int64]artifacts.BrokenVersion{}
	for _, b := range page.Broken {
		bad[b.Problem.Version] = b
	}
	items := make([]VersionItem, 0, len(page.Items)+len(page.Broken))
	for _, r := range page.Items {
		it := versionItem(r)
		if b, ok := bad[r.Version]; ok {
			it.State, it.Reason = StateCorrupt, b.Problem.Reason
			delete(bad, r.Version)
		}
		items = append(items, it)
	}
	for v, b := range bad {
		items = append(items, VersionItem{Version: v, State: StateCorrupt, Reason: b.Problem.Reason, MetadataKeys: []string{}})
	}
	slices.SortFunc(items, func(a, b VersionItem) int { return cmp.Compare(a.Version, b.Version) })
	return items
}

func versionItem(r artifacts.Record) VersionItem {
	return VersionItem{
		State:        StateOK,
		Version:      r.Version,
		Size:         r.Size,
		Digest:       r.Digest,
		MIMEType:     r.MIMEType,
		CreatedAt:    output.TimeMS(r.CreatedAt),
		CreatedAtMS:  r.CreatedAt,
		MetadataKeys: r.MetadataKeys(),
	}
}
