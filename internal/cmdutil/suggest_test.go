package cmdutil

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
)

func TestFlagErrorSuggests(t *testing.T) {
	root := &cobra.Command{Use: "agentstore"}
	root.PersistentFlags().String("store", "", "")
	root.PersistentFlags().String("layout", "", "")
	sub := &cobra.Command{Use: "list", Run: func(*cobra.Command, []string) {}}
	sub.Flags().String("session", "", "")
	sub.Flags().String("secret", "", "")
	sub.Flags().Bool("hidden-one", false, "")
	_ = sub.Flags().MarkHidden("hidden-one")
	root.AddCommand(sub)
	for _, tc := range []struct{ msg, want string }{
		{"unknown flag: --stor", "unknown flag: --stor (did you mean --store?)"},
		{"unknown flag: --stroe", "unknown flag: --stroe (did you mean --store?)"},
		{"unknown flag: --sess=x", "unknown flag: --sess=x (did you mean --session?)"},
		{"unknown flag: --layot", "unknown flag: --layot (did you mean --layout?)"},
		{"unknown flag: --se", "unknown flag: --se"},               // a prefix of two flags, far from both
		{"unknown flag: --hidden-on", "unknown flag: --hidden-on"}, // hidden flags are not suggested
		{"unknown flag: --bogus", "unknown flag: --bogus"},
		{"unknown shorthand flag: 'x' in -x", "unknown shorthand flag: 'x' in -x"},
	} {
		err := FlagError(sub, errors.New(tc.msg))
		if got := err.Error(); got != tc.want {
			t.Errorf("FlagError(%q) = %q; want %q", tc.msg, got, tc.want)
		}
		if ExitCode(err) != ExitUsage {
			t.Errorf("FlagError(%q) exits %d; want %d", tc.msg, ExitCode(err), ExitUsage)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"store", "store", 0}, {"stor", "store", 1}, {"stroe", "store", 2}, {"", "abc", 3}, {"kitten", "sitting", 3}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
