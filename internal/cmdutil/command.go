package cmdutil

import (
	"errors"
	"fmt"
	"strings"

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
				return &UsageError{Err: err, CommandPath: cmd.CommandPath()}
			}
			return nil
		}
	}
	for _, c := range root.Commands() {
		WrapArgsErrors(c)
	}
}
