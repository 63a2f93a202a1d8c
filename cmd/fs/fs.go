// Package fscmd holds the leaf commands of "agentstore fs": repair, which
// cleans up what interrupted writers left in a filesystem store, and
// verify, which reads every published version and checks it.
package fscmd

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/repair"
)

// LockFile is the name of the repair lock in a store's root. It lies beside
// v1/, not in it, so repair never scans it.
const LockFile = cmdutil.StoreLockFile

// runMetrics is what a run reports in its --metrics-file.
type runMetrics = cmdutil.RunMetrics

// finish writes the metrics file, when asked for, after a run that ended
// with err.
func finish(ios *iostreams.IOStreams, path string, m runMetrics, err error) error {
	return cmdutil.FinishMetrics(ios, path, m, err)
}

// checkMetricsPath refuses a --metrics-file whose directory does not exist.
func checkMetricsPath(path string) error { return cmdutil.CheckMetricsPath(path) }

// rate formats n per second over d.
func rate(n float64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	r := n / d.Seconds()
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.0fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// corruptSection prints the corrupt items and the command that deals with
// each.
func corruptSection(ios *iostreams.IOStreams, st output.Styles, items []repair.CorruptItem) {
	w := ios.Out
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", st.Bad(fmt.Sprintf("%d corrupt %s:", len(items), plural(len(items), "version", "versions"))))
	for _, c := range items {
		itemLines(w, c)
		switch {
		case c.NextCommand != "":
			fmt.Fprintf(w, "    next: %s\n", c.NextCommand)
		case c.Code == artifacts.CodeUnsafeStore && c.Path == "":
			fmt.Fprintf(w, "    next: inspect the file named above by hand and move it out of the store; the layout holds only regular files\n")
		case c.Code == artifacts.CodeUnsafeStore:
			fmt.Fprintf(w, "    next: inspect %s by hand and move it out of the store; the layout holds only regular files\n", output.Escape(c.Path))
		case c.Scope != nil && c.Name != "" && c.Code == artifacts.CodeCorrupt:
			fmt.Fprintf(w, "    next: inspect %s by hand: the record does not decode, so artifacts delete cannot plan it; restore it from a backup or move the version's files out of the store\n", output.Escape(c.Path))
		default:
			fmt.Fprintf(w, "    next: inspect %s by hand; its record does not name the artifact\n", output.Escape(c.Path))
		}
	}
}

// unreadableSection prints the versions that could not be checked.
func unreadableSection(ios *iostreams.IOStreams, st output.Styles, items []repair.CorruptItem) {
	w := ios.Out
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", st.Warn(fmt.Sprintf("could not check %d %s (not known to be corrupt):", len(items), plural(len(items), "version", "versions"))))
	for _, c := range items {
		itemLines(w, c)
	}
}

// itemLines prints what an item concerns and why, every part escaped.
func itemLines(w io.Writer, c repair.CorruptItem) {
	who := output.Escape(c.Path)
	if c.Scope != nil && c.Name != "" {
		who = fmt.Sprintf("%s %q v%d", c.Scope, c.Name, c.Version)
	}
	fmt.Fprintf(w, "  %s: %s\n", who, output.Escape(c.Reason))
	if c.Path != "" && c.Scope != nil && c.Name != "" {
		fmt.Fprintf(w, "    file: %s\n", output.Escape(c.Path))
	}
}

// unreadable is the error of a run that could not read some versions:
// permission_denied or io_error (exit 1), never problems_found.
func unreadable(items []repair.CorruptItem) error {
	code := artifacts.CodeIO
	for _, it := range items {
		if it.Code == artifacts.CodePermission {
			code = artifacts.CodePermission
			break
		}
	}
	why := "input/output errors"
	if code == artifacts.CodePermission {
		why = "permission denied"
	}
	return cmdutil.CodedError(string(code), fmt.Errorf("could not check %d %s (%s); they are not known to be corrupt: run as a user who can read the whole store",
		len(items), plural(len(items), "version", "versions"), why))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// foreignSection prints the objects or files that are not part of the
// store's layout, by name.
func foreignSection(ios *iostreams.IOStreams, st output.Styles, items []repair.CorruptItem) {
	w := ios.Out
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", st.Warn(fmt.Sprintf("%d %s not part of the layout (foreign, never read):", len(items), plural(len(items), "object", "objects"))))
	generic := false
	for _, c := range items {
		fmt.Fprintf(w, "  %s: %s\n", output.Escape(c.Path), output.Escape(c.Reason))
		if c.NextCommand != "" {
			fmt.Fprintf(w, "    next: %s\n", c.NextCommand)
		} else {
			generic = true
		}
	}
	if generic {
		fmt.Fprintf(w, "    next: these are not versions any ADK library reads; move or delete them by hand if they are not yours\n")
	}
}

// found is the problems_found error (exit 3) of a run that found corrupt
// versions or foreign objects.
func found(corrupt, foreign int64) error { return foundBroken(corrupt, 0, foreign) }

// foundBroken is found with broken checkpoints too.
func foundBroken(corrupt, checkpoints, foreign int64) error {
	var parts []string
	if corrupt > 0 {
		parts = append(parts, fmt.Sprintf("%d corrupt %s", corrupt, plural(int(corrupt), "version", "versions")))
	}
	if checkpoints > 0 {
		parts = append(parts, fmt.Sprintf("%d broken %s", checkpoints, plural(int(checkpoints), "checkpoint", "checkpoints")))
	}
	if foreign > 0 {
		parts = append(parts, fmt.Sprintf("%d %s not part of the layout", foreign, plural(int(foreign), "object", "objects")))
	}
	return &cmdutil.ProblemsFound{Msg: strings.Join(parts, " and ") + " found"}
}
