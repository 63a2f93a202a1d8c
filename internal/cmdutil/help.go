package cmdutil

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// ExitStatusHelp is the EXIT STATUS section every command's help ends with
// (cli.md, "Exit codes").
const ExitStatusHelp = `EXIT STATUS
  0  done; nothing to report
  1  failed (I/O, network, permission, a corrupt record in the way)
  2  usage: bad flag, invalid scope, name or value
  3  the command worked and found problems (corrupt artifacts, a quota over
     --fail-over, a workspace that could not be swept safely)
  4  confirmation required, or the confirmation no longer matches; nothing
     changed
  5  another sweep or repair holds the lock on this store or scratch root;
     nothing changed (try again later)
  6  conflict: another writer or process got there first (a snapshot whose
     parent is no longer the latest, a directory in use or already there);
     nothing was published and the local tree is kept
  An unknown exit status means failure. With -o json an error is also one
  JSON object {"error":{"code","message"}} on stderr.
`

// AnnotationExitStatus is the cobra annotation key whose value, when set on
// a command, is printed under EXIT STATUS before the standard table (for
// notes specific to that command, e.g. "3 when a corrupt artifact is
// found").
const AnnotationExitStatus = "agentstore/exit-status"

// AnnotationPrometheus is the cobra annotation key that, set to "true" on a
// command, lets it take -o prometheus.
const AnnotationPrometheus = "agentstore/prometheus"

// AllowPrometheus lets cmd accept -o prometheus.
func AllowPrometheus(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[AnnotationPrometheus] = "true"
}

// AnnotationWide is the cobra annotation key that, set to "true" on a
// command, lets it take -o wide (a table with every column).
const AnnotationWide = "agentstore/wide"

// AllowWide lets cmd accept -o wide.
func AllowWide(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[AnnotationWide] = "true"
}

// OutputFormats returns the -o values cmd accepts: table and json, then
// wide and prometheus for the commands that allow them.
func OutputFormats(cmd *cobra.Command) []string {
	out := []string{OutputTable, OutputJSON}
	if cmd.Annotations[AnnotationWide] == "true" {
		out = append(out, OutputWide)
	}
	if cmd.Annotations[AnnotationPrometheus] == "true" {
		out = append(out, OutputPrometheus)
	}
	return out
}

// CheckOutputFormat refuses an -o value that cmd does not take (a usage
// error naming the ones it does).
func CheckOutputFormat(cmd *cobra.Command, format string) error {
	formats := OutputFormats(cmd)
	if slices.Contains(formats, format) {
		return nil
	}
	return Usagef("%s does not support -o %s (want %s)", cmd.CommandPath(), format, strings.Join(formats, ", "))
}

// SetExitStatusNote records command-specific notes printed under EXIT
// STATUS in cmd's help.
func SetExitStatusNote(cmd *cobra.Command, note string) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[AnnotationExitStatus] = note
}

// exitStatusSection renders the EXIT STATUS section for cmd.
func exitStatusSection(cmd *cobra.Command) string {
	note := strings.TrimSpace(cmd.Annotations[AnnotationExitStatus])
	if note == "" {
		return ExitStatusHelp
	}
	var b strings.Builder
	b.WriteString("EXIT STATUS\n")
	for line := range strings.Lines(note) {
		b.WriteString("  " + strings.TrimRight(line, "\n") + "\n")
	}
	b.WriteString("\n")
	b.WriteString(strings.TrimPrefix(ExitStatusHelp, "EXIT STATUS\n"))
	return b.String()
}

func init() {
	cobra.AddTemplateFunc("agentstoreExitStatus", exitStatusSection)
}

// helpTemplate is cobra's default help template with the EXIT STATUS
// section after the usage.
const helpTemplate = `{{with (or .Long .Short)}}{{. | trimTrailingWhitespaces}}

{{end}}{{if or .Runnable .HasSubCommands}}{{.UsageString}}{{end}}
{{agentstoreExitStatus .}}`

// SetHelp gives cmd, and every command below it that does not set its own,
// a help text ending with the EXIT STATUS section.
func SetHelp(cmd *cobra.Command) {
	cmd.SetHelpTemplate(helpTemplate)
}
