package cmdutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// FlagError is the error for a command-line mistake cobra's flag parsing
// found in cmd: a usage error (exit status 2) that, for an unknown long
// flag, names the flag of cmd the user probably meant ("unknown flag:
// --stor (did you mean --store?)").
func FlagError(cmd *cobra.Command, err error) error {
	if s := suggestFlag(cmd, err.Error()); s != "" {
		err = fmt.Errorf("%w (did you mean --%s?)", err, s)
	}
	return &UsageError{Err: err, CommandPath: cmd.CommandPath()}
}

// suggestFlag returns the visible flag of cmd closest to the unknown long
// flag msg names: the only flag it is a prefix of, or else the nearest
// within two edits; "" when none is close.
func suggestFlag(cmd *cobra.Command, msg string) string {
	given, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok || given == "" {
		return ""
	}
	given, _, _ = strings.Cut(given, "=")
	var prefixed []string
	best, bestDist := "", 3
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if f.Hidden || seen[f.Name] {
			return
		}
		seen[f.Name] = true
		if strings.HasPrefix(f.Name, given) {
			prefixed = append(prefixed, f.Name)
		}
		if d := editDistance(given, f.Name); d < bestDist || d == bestDist && f.Name < best {
			best, bestDist = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
