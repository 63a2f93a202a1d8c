package cmd

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// registerValueCompletions completes the values of --app, --user,
// --session and --name, on every command below root that has them, from
// the store: apps, the users of the --app given, the sessions of the
// --app and --user given, and the names of the scope given. A store that
// cannot be read completes nothing.
func registerValueCompletions(f *cmdutil.Factory, root *cobra.Command) {
	for _, c := range root.Commands() {
		registerValueCompletions(f, c)
	}
	fl := root.Flags()
	for _, name := range []string{"app", "user", "session"} {
		if fl.Lookup(name) != nil {
			_ = root.RegisterFlagCompletionFunc(name, completeScopePart(f, name))
		}
	}
	if fl.Lookup("name") != nil && fl.Lookup("app") != nil {
		_ = root.RegisterFlagCompletionFunc("name", completeName(f))
	}
}

// completionStore opens the store named by the command line being
// completed: the settings are resolved again from cmd's flags, since the
// completion request itself was set up without them.
func completionStore(ctx context.Context, f *cmdutil.Factory, cmd *cobra.Command) (*artifacts.Store, error) {
	if err := f.Setup(cmd, true); err != nil {
		return nil, err
	}
	return f.OpenStore(ctx)
}

// flagString returns a string flag's value, "" when it has none.
func flagString(cmd *cobra.Command, name string) string {
	v, _ := cmd.Flags().GetString(name)
	return v
}

func completeScopePart(f *cmdutil.Factory, part string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		st, err := completionStore(ctx, f, cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		scopes, err := st.ListScopes(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		app, user := flagString(cmd, "app"), flagString(cmd, "user")
		var out []string
		for _, s := range scopes {
			var v string
			switch part {
			case "app":
				v = s.App
			case "user":
				if s.Kind == artifacts.KindApp || s.App != app {
					continue
				}
				v = s.User
			case "session":
				if s.Kind != artifacts.KindSession || s.App != app || s.User != user {
					continue
				}
				v = s.Session
			}
			if strings.HasPrefix(v, toComplete) && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		slices.Sort(out)
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func completeName(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		sf := cmdutil.ScopeFlags{App: flagString(cmd, "app"), User: flagString(cmd, "user"), Session: flagString(cmd, "session")}
		scope, err := sf.Scope(true)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		st, err := completionStore(ctx, f, cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		cursor := ""
		for range 10 { // at most 10 pages: completion must stay quick
			page, err := st.ListNames(ctx, scope, artifacts.ListOptions{Limit: artifacts.DefaultMaxPageLimit, Cursor: cursor})
			if err != nil {
				break
			}
			for _, e := range page.Items {
				if strings.HasPrefix(e.Name, toComplete) {
					out = append(out, e.Name)
				}
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
