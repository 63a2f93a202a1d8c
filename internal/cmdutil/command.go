package cmdutil

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
)

// NewGroupCmd returns a parent command that only groups its subcommands
// ("artifacts", "ws", ...). Run without a subcommand it prints its help;
// run with an unknown one it fails with a usage error (exit status 2),
// where cobra alone would print the help and exit 0.
func NewGroupCmd(name, short, long string) *cobra.Command {
	return &cobra.Command{
		Use:   name,
		Short: short,
		Long:  long,

		SuggestionsMinimumDistance: 2,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
			}
			return &UsageError{Err: fmt.Errorf("%s", msg), CommandPath: cmd.CommandPath()}
		},
	}
}

// WrapArgsErrors walks the command tree below root and makes the errors of
// every positional-argument validator (cobra.ExactArgs, NoArgs, ...) usage
// errors, so that they exit with status 2. NewRootCmd calls it after adding
// every subcommand.
func WrapArgsErrors(root *cobra.Command) {
	if orig := root.Args; orig != nil {
		root.Args = func(cmd *cobra.Command, args []string) error {
			if err := orig(cmd, args); err != nil {
				var u *UsageError
				if errors.As(err, &u) {
					return err
				}
				if !cmd.HasSubCommands() && len(args) > 0 && strings.HasPrefix(err.Error(), "unknown command ") {
					err = unexpectedArg(cmd, args[0])
				}
				return &UsageError{Err: err, CommandPath: cmd.CommandPath()}
			}
			return nil
		}
	}
	for _, c := range root.Commands() {
		WrapArgsErrors(c)
	}
}

// unexpectedArg describes a positional argument given to a command that
// takes none, with the flag it was probably meant for.
func unexpectedArg(cmd *cobra.Command, arg string) error {
	shown := arg
	if strings.ContainsFunc(arg, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) || arg == "" {
		shown = strconv.Quote(arg)
	}
	var hint string
	switch fl := cmd.Flags(); {
	case fl.Lookup("name") != nil:
		hint = " (did you mean --name?)"
	case fl.Lookup("app") != nil:
		hint = " (select a scope with --app, --user and --session)"
	default:
		hint = fmt.Sprintf(" (%s takes no arguments)", cmd.CommandPath())
	}
	return fmt.Errorf("unexpected argument %s%s", shown, hint)
}

// NewHelpCmd returns the "help [command]" command of root: the help of the
// named command, or a usage error (exit status 2) when there is no such
// command, where cobra's own help command prints the root's help and exits
// 0.
func NewHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long: `Help provides help for any command in the application.
Simply type ` + root.Name() + ` help [path to command] for full details.`,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := root.Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, sub.Name()+"\t"+sub.Short)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 || cmd == nil {
				topic := strings.Join(args, " ")
				msg := fmt.Sprintf("unknown help topic %q", topic)
				if cmd != nil {
					if s := cmd.SuggestionsFor(args[len(args)-1]); len(s) > 0 {
						msg += fmt.Sprintf(" (did you mean %q?)", s[0])
					}
				}
				return &UsageError{Err: errors.New(msg), CommandPath: root.CommandPath()}
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}
