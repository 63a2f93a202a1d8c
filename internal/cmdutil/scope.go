package cmdutil

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// ScopeFlags holds the values of --app, --user and --session.
type ScopeFlags struct {
	App     string
	User    string
	Session string

	cmd *cobra.Command
}

// AddScopeFlags registers --app, --user and --session on cmd, storing
// their values in opts.
func AddScopeFlags(cmd *cobra.Command, opts *ScopeFlags) {
	opts.cmd = cmd
	fl := cmd.Flags()
	fl.StringVar(&opts.App, "app", "", "app id of the scope")
	fl.StringVar(&opts.User, "user", "", "user id of the scope (needs --app)")
	fl.StringVar(&opts.Session, "session", "", "session id of the scope (needs --app and --user)")
}

// set reports whether the named scope flag was given (on the command line,
// even as an empty string) or, for values filled in without a command,
// whether it is non-empty.
func (o *ScopeFlags) set(name, value string) bool {
	if o.cmd != nil {
		if f := o.cmd.Flags().Lookup(name); f != nil && f.Changed {
			return true
		}
	}
	return value != ""
}

// Scope returns the scope the flags select; see ScopeFromFlags.
func (o *ScopeFlags) Scope(required bool, kinds ...artifacts.Kind) (artifacts.Scope, error) {
	return ScopeFromFlags(o, required, kinds...)
}

// ScopeFromFlags turns --app/--user/--session into a scope: --app alone
// is the app scope, --app --user the user scope, all three the session
// scope. --user without --app and --session without --user are usage
// errors, and the scope must pass Scope.Validate. With no flag given it
// returns the zero Scope (Kind "") when required is false, and a usage
// error when it is true. kinds, when given, lists the scope kinds the
// command accepts. Every error exits with status 2.
func ScopeFromFlags(o *ScopeFlags, required bool, kinds ...artifacts.Kind) (artifacts.Scope, error) {
	app, user, session := o.set("app", o.App), o.set("user", o.User), o.set("session", o.Session)
	usage := func(format string, args ...any) (artifacts.Scope, error) {
		return artifacts.Scope{}, &UsageError{
			Code: string(artifacts.CodeInvalidScope),
			Err:  fmt.Errorf(format, args...),
		}
	}
	var s artifacts.Scope
	switch {
	case !app && !user && !session:
		if required {
			return usage("a scope is required: %s", kindsHint(kinds))
		}
		return artifacts.Scope{}, nil
	case session && !user:
		return usage("--session needs --user (and --app)")
	case user && !app:
		return usage("--user needs --app")
	case session:
		s = artifacts.SessionScope(o.App, o.User, o.Session)
	case user:
		s = artifacts.UserScope(o.App, o.User)
	default:
		s = artifacts.AppScope(o.App)
	}
	if len(kinds) > 0 && !slices.Contains(kinds, s.Kind) {
		return usage("this command takes %s, not %s scope", kindsHint(kinds), article(s.Kind))
	}
	if err := s.Validate(); err != nil {
		return artifacts.Scope{}, &UsageError{Code: string(artifacts.CodeInvalidScope), Err: err}
	}
	return s, nil
}

func article(k artifacts.Kind) string {
	if k == artifacts.KindApp {
		return "an app"
	}
	return "a " + string(k)
}

func kindsHint(kinds []artifacts.Kind) string {
	if len(kinds) == 0 {
		kinds = []artifacts.Kind{artifacts.KindApp, artifacts.KindUser, artifacts.KindSession}
	}
	var parts []string
	for _, k := range kinds {
		switch k {
		case artifacts.KindApp:
			parts = append(parts, "an app scope (--app)")
		case artifacts.KindUser:
			parts = append(parts, "a user scope (--app --user)")
		case artifacts.KindSession:
			parts = append(parts, "a session scope (--app --user --session)")
		}
	}
	return strings.Join(parts, " or ")
}
