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
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// ListOptions holds the flag values and dependencies of "artifacts list".
type ListOptions struct {
	deps
	// StoreURI returns the parsed --store, named in the output.
	StoreURI func() (cmdutil.StoreURI, error)

	// ScopeFlags are --app, --user and --session as given.
	ScopeFlags cmdutil.ScopeFlags
	// Scope is the scope they select; Kind "" means every scope.
	Scope artifacts.Scope
	// Limit is the page size (--limit).
	Limit int
	// LimitSet is true when --limit was given. With --all and no --limit
	// the pages are the largest the store serves: the output is the same,
	// in fewer round trips.
	LimitSet bool
	// Cursor is the last name of the previous page (--cursor).
	Cursor string
	// All follows every page (--all).
	All bool
}

// NameItem is one row of a scope's listing: a name and its latest version.
type NameItem struct {
	Name          string `json:"name"`
	LatestVersion int64  `json:"latest_version"`
	Versions      int    `json:"versions"`
	Size          int64  `json:"size"`
	MIMEType      string `json:"mime_type"`
	CreatedAt     string `json:"created_at"`
	CreatedAtMS   int64  `json:"created_at_ms"`
}

// ListResult is the JSON output of "artifacts list" with a scope.
type ListResult struct {
	// StoreJSON names the store and its layout.
	cmdutil.StoreJSON
	Scope Scope      `json:"scope"`
	Items []NameItem `json:"items"`
	// NextCursor is the --cursor of the next page; null after the last.
	NextCursor *string `json:"next_cursor"`

	foreign int
}

// ScopeItem is one row of the store-wide listing: a scope and what it
// holds.
type ScopeItem struct {
	Scope    Scope `json:"scope"`
	Names    int   `json:"names"`
	Versions int   `json:"versions"`
	Bytes    int64 `json:"bytes"`
	// Problems counts published versions found broken while reading the
	// scope (records that do not decode, missing payloads, non-regular
	// layout files, impossible sizes); see "agentstore fs verify".
	Problems int `json:"problems"`
	// Unreadable counts versions that could not be read (permission or
	// I/O errors); they are not problems, and not in the other counts.
	Unreadable int `json:"unreadable"`
}

// ScopeListResult is the JSON output of "artifacts list" without a scope.
type ScopeListResult struct {
	// StoreJSON names the store and its layout.
	cmdutil.StoreJSON
	Items []ScopeItem `json:"items"`
	// Problems counts the published versions found broken, in listed
	// scopes and in scopes left out (UnlistedScopes).
	Problems int `json:"problems"`
	// UnlistedScopes counts scopes left out of Items because no record of
	// theirs could be read: only broken or unreadable versions (a FIFO in
	// place of a record, say). fs verify names them.
	UnlistedScopes int `json:"unlisted_scopes"`
	// Foreign counts the objects or files of the store that are not part
	// of its layout and were skipped (an old-layout tree, say); ForeignItems
	// names the first few, with why and, where there is one, what to run.
	Foreign      int                 `json:"foreign"`
	ForeignItems []artifacts.Problem `json:"foreign_items"`

	total artifacts.Tally
}

// foreignShown bounds ScopeListResult.ForeignItems: fs verify lists all.
const foreignShown = 10

// NewCmdList returns "artifacts list". runF, when not nil, replaces the
// run function (tests use it to check flag parsing without I/O).
func NewCmdList(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{deps: depsOf(f), StoreURI: f.StoreURI}
	cmd := &cobra.Command{
		Use:   "list [--app A [--user U [--session S]]] [--limit N] [--cursor NAME] [--all]",
		Short: "List the artifacts of a scope, or every scope of the store",
		Long: `With a scope, list its artifact names, one row per name describing its latest
version: name, latest version, number of published versions, size, MIME
type and creation time. Names come in bytewise order, a page at a time
(--limit, default 100); the next page starts after --cursor NAME, the last
name of the previous one. --all follows every page.

Without a scope, list every scope of the store, one row per scope with its
numbers of names, versions and bytes, found by reading every record (never
a payload). Versions found broken on the way are counted under PROBLEMS and
left to "agentstore fs verify". Versions that cannot be read (permission
denied, I/O errors) are not problems: they are left out of the counts, and
the listing then exits with status 1 (code permission_denied or io_error).
Totals saturate instead of overflowing; a record stating a size above 8 PiB
is counted as a problem, not as bytes.

Sizes are human-readable in tables and exact bytes in JSON. Payload bytes
and custom metadata are never printed.

JSON with a scope:
  {"store", "layout", "scope": S, "items": [{"name", "latest_version",
   "versions", "size", "mime_type", "created_at", "created_at_ms"}],
   "next_cursor": NAME|null}
JSON without a scope:
  {"store", "layout", "items": [{"scope": S, "names", "versions", "bytes",
   "problems", "unreadable"}]}
where store is the store's URI (as --store takes it) and layout its
layout, S is {"kind", "app", "user", "session"} with the parts its kind has,
created_at is RFC 3339 UTC with milliseconds, and created_at_ms the stored
integer.`,
		Example: `  # every scope of the store
  agentstore artifacts list --store /var/lib/agents

  # the names of a session, 50 at a time, as JSON
  agentstore artifacts list --store /var/lib/agents --app demo-a --user user-42 \
      --session session-7 --limit 50 -o json

  # the next page, and then everything
  agentstore artifacts list --store /var/lib/agents --app demo-a --cursor 'n/0050'
  agentstore artifacts list --store /var/lib/agents --app demo-a --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := opts.ScopeFlags.Scope(false)
			if err != nil {
				return err
			}
			opts.Scope = s
			if err := validateLimit(opts.Limit); err != nil {
				return err
			}
			opts.LimitSet = cmd.Flags().Changed("limit")
			if s.Kind == "" {
				for _, fl := range []string{"limit", "cursor"} {
					if cmd.Flags().Changed(fl) {
						return cmdutil.Usagef("--%s needs a scope: the list of every scope is not paged", fl)
					}
				}
			}
			if opts.Cursor != "" {
				if err := artifacts.ValidateName(opts.Cursor); err != nil {
					return &cmdutil.UsageError{Code: string(artifacts.CodeInvalidArgument), Err: fmt.Errorf("invalid --cursor %q: it must be a name", opts.Cursor)}
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runList(cmd.Context(), opts)
		},
	}
	cmdutil.AddScopeFlags(cmd, &opts.ScopeFlags)
	fl := cmd.Flags()
	fl.IntVar(&opts.Limit, "limit", artifacts.DefaultPageLimit, fmt.Sprintf(limitHelp, "names"))
	fl.StringVar(&opts.Cursor, "cursor", "", "start after this name (the previous page's next_cursor)")
	fl.BoolVar(&opts.All, "all", false, "follow every page")
	cmdutil.SetExitStatusNote(cmd, readExitNote)
	return cmd
}

func runList(ctx context.Context, opts *ListOptions) error {
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
	name := cmdutil.NameStore(u, st)
	if opts.Scope.Kind == "" {
		res, err := listScopes(ctx, opts.deps, st)
		if err != nil {
			return err
		}
		res.StoreJSON = name.JSON()
		if jsonOut {
			err = output.JSON(opts.IO.Out, res)
		} else {
			err = printScopes(opts.deps, name, res)
		}
		if err == nil && res.total.Unreadable > 0 {
			err = unreadableErr(res.total)
		}
		return err
	}
	res, err := ListNames(ctx, st, opts.Scope, pageLimit(st, opts.Limit, opts.LimitSet, opts.All), opts.Cursor, opts.All)
	if artifacts.IsNotFound(err) && opts.Cursor == "" {
		return cmdutil.ScopeNotFound(ctx, st, opts.Scope)
	}
	if err != nil {
		return err
	}
	warnForeign(opts.deps, res.foreign)
	res.StoreJSON = name.JSON()
	if jsonOut {
		return output.JSON(opts.IO.Out, res)
	}
	return printNames(opts, name, res)
}

// warnForeign warns once that a listing skipped objects or files that are
// not part of the store's layout.
func warnForeign(d deps, n int) {
	if n > 0 {
		d.Logger().Warn(fmt.Sprintf("%d %s not part of the layout %s skipped; run 'agentstore fs verify' for their names",
			n, plural(n, "object", "objects"), plural(n, "was", "were")))
	}
}

// ListNames lists a scope's names: one page of limit names after cursor,
// or every page from cursor on when all is true.
func ListNames(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, limit int, cursor string, all bool) (ListResult, error) {
	res := ListResult{Scope: ScopeJSON(scope), Items: []NameItem{}}
	for {
		page, err := st.ListNames(ctx, scope, artifacts.ListOptions{Limit: limit, Cursor: cursor})
		if err != nil {
			return ListResult{}, err
		}
		res.foreign = max(res.foreign, page.Foreign)
		res.Items = slices.Grow(res.Items, len(page.Items))
		for _, e := range page.Items {
			r := e.Latest
			res.Items = append(res.Items, NameItem{
				Name:          e.Name,
				LatestVersion: r.Version,
				Versions:      e.Versions,
				Size:          r.Size,
				MIMEType:      r.MIMEType,
				CreatedAt:     output.TimeMS(r.CreatedAt),
				CreatedAtMS:   r.CreatedAt,
			})
		}
		if page.NextCursor == "" {
			return res, nil
		}
		if !all {
			next := page.NextCursor
			res.NextCursor = &next
			return res, nil
		}
		if page.NextCursor <= cursor {
			return ListResult{}, fmt.Errorf("store returned cursor %q after %q: not advancing", page.NextCursor, cursor)
		}
		cursor = page.NextCursor
	}
}

func printNames(opts *ListOptions, name cmdutil.StoreName, res ListResult) error {
	fmt.Fprintln(opts.IO.Out, name.Line(output.NewStyles(opts.IO)))
	t := output.NewTable(opts.IO, "NAME", "LATEST", "VERSIONS", "SIZE", "MIME TYPE", "CREATED")
	t.NoTruncate(1, 2, 3, 5)
	for _, it := range res.Items {
		t.Row(it.Name, strconv.FormatInt(it.LatestVersion, 10), strconv.Itoa(it.Versions),
			output.Size(it.Size), it.MIMEType, createdCell(opts.deps, it.CreatedAtMS))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if res.NextCursor != nil {
		fmt.Fprintf(opts.IO.ErrOut, "More names: add --cursor %s for the next page, or --all.\n", shell.Quote(*res.NextCursor))
	}
	return nil
}

// listScopes walks the store and sums every scope's published versions.
func listScopes(ctx context.Context, d deps, st *artifacts.Store) (ScopeListResult, error) {
	if !st.CanWalk() {
		return ScopeListResult{}, artifacts.Errorf(artifacts.CodeUnsupported, "list scopes", nil,
			"the %s store cannot enumerate its scopes; give a scope with --app", st.Capabilities().Name)
	}
	res := ScopeListResult{Items: []ScopeItem{}, ForeignItems: []artifacts.Problem{}}
	unknown := 0
	err := st.Walk(ctx, func(u artifacts.ScopeUsage) error {
		var t artifacts.Tally
		names := 0
		for _, nu := range u.Names {
			for _, p := range nu.Problems {
				if p.Code == artifacts.CodeForeign && len(res.ForeignItems) < foreignShown {
					res.ForeignItems = append(res.ForeignItems, p)
				}
			}
			t.AddName(nu)
			if len(nu.Records) > 0 {
				names++
			}
		}
		res.total.Add(t)
		if !u.Known {
			if t.Problems+t.Unreadable == 0 {
				return nil // emptied by deletes: only reservations are left
			}
			unknown++
			d.Logger().Warn(fmt.Sprintf("a scope directory holds %d broken and %d unreadable %s and no readable record, so it is not listed; run 'agentstore fs verify' for details",
				t.Problems, t.Unreadable, plural(t.Problems+t.Unreadable, "version", "versions")), "hash", u.Hash)
			return nil
		}
		res.Items = append(res.Items, ScopeItem{Scope: ScopeJSON(u.Scope), Names: names, Versions: int(t.Versions),
			Bytes: t.Bytes, Problems: t.Problems, Unreadable: t.Unreadable})
		return nil
	})
	if err != nil {
		return ScopeListResult{}, err
	}
	slices.SortFunc(res.Items, func(a, b ScopeItem) int {
		return cmp.Or(
			strings.Compare(a.Scope.App, b.Scope.App),
			strings.Compare(a.Scope.User, b.Scope.User),
			strings.Compare(a.Scope.Session, b.Scope.Session),
			strings.Compare(a.Scope.Kind, b.Scope.Kind),
		)
	})
	res.Problems, res.UnlistedScopes, res.Foreign = res.total.Problems, unknown, res.total.Foreign
	warnForeign(d, res.total.Foreign)
	for _, p := range res.ForeignItems {
		if p.NextCommand != "" {
			d.Logger().Warn(fmt.Sprintf("%s is not listed: %s", p.Path, p.Reason), "next", p.NextCommand)
		}
	}
	if res.total.Problems > 0 {
		d.Logger().Warn(fmt.Sprintf("%d published %s broken; run 'agentstore fs verify' for details",
			res.total.Problems, plural(res.total.Problems, "version is", "versions are")), "unlisted_scopes", unknown)
	}
	return res, nil
}

func printScopes(d deps, name cmdutil.StoreName, res ScopeListResult) error {
	fmt.Fprintln(d.IO.Out, name.Line(output.NewStyles(d.IO)))
	t := output.NewTable(d.IO, "KIND", "APP", "USER", "SESSION", "NAMES", "VERSIONS", "SIZE", "PROBLEMS")
	t.NoTruncate(0, 4, 5, 6, 7)
	for _, it := range res.Items {
		t.Row(it.Scope.Kind, it.Scope.App, it.Scope.User, it.Scope.Session,
			strconv.Itoa(it.Names), strconv.Itoa(it.Versions), output.Size(it.Bytes), strconv.Itoa(it.Problems))
	}
	return t.Render()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// unreadableErr is the error of a listing that could not read some
// versions: permission_denied or io_error (exit 1), after the output.
func unreadableErr(t artifacts.Tally) error {
	why := "input/output errors"
	if t.UnreadableCode == artifacts.CodePermission {
		why = "permission denied"
	}
	word := "versions"
	if t.Unreadable == 1 {
		word = "version"
	}
	return cmdutil.CodedError(string(t.UnreadableCode), fmt.Errorf("could not read %d %s (%s), left out of the counts above and not known to be corrupt: run as a user who can read the whole store, or see agentstore fs verify",
		t.Unreadable, word, why))
}
