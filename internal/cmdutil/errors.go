package cmdutil

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Exit statuses of the agentstore command (cli.md, "Exit codes").
const (
	ExitOK           = 0 // done; nothing to report
	ExitFailure      = 1 // failed: I/O, network, permission, corrupt record
	ExitUsage        = 2 // bad flag, invalid scope, name or value
	ExitProblems     = 3 // the command worked and found problems
	ExitConfirmation = 4 // confirmation required or stale; nothing changed
	ExitLocked       = 5 // another process holds the lock; nothing changed
	ExitConflict     = 6 // another writer got there first; the local tree is kept
)

// Error codes of the command line's own errors, next to those of package
// artifacts. Their text never changes.
const (
	CodeUsage                = "usage_error"
	CodeProblemsFound        = "problems_found"
	CodeConfirmationRequired = plan.CodeConfirmationRequired
	CodeStaleConfirmation    = plan.CodeStaleConfirmation
	CodeLocked               = "locked"
	CodeUnsupportedStore     = "unsupported_store"
	CodeConfigError          = "config_error"
	// CodeWouldOverwrite: a restore would overwrite work no snapshot holds
	// (package workspace's OverwriteError); exit status 4.
	CodeWouldOverwrite = "would_overwrite"
)

// UsageError is a command-line mistake: a bad flag, argument or value.
// It exits with status 2, and in text mode is followed by a hint to run
// the command's --help.
type UsageError struct {
	// Code is the error code to report; empty means "usage_error".
	Code string
	// Err is the description of the mistake.
	Err error
	// CommandPath is the command the hint points at ("agentstore ws list");
	// Main fills it in when empty.
	CommandPath string
}

// Error returns the description of the mistake.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the description.
func (e *UsageError) Unwrap() error { return e.Err }

// ErrorCode returns the error code: Code, or "usage_error".
func (e *UsageError) ErrorCode() string {
	if e.Code != "" {
		return e.Code
	}
	return CodeUsage
}

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ProblemsFound says the command did its work and found problems (corrupt
// artifacts, a quota over the limit, a workspace it could not sweep). The
// command prints its report first, then returns this error: exit status 3.
type ProblemsFound struct {
	// Msg summarises the findings ("2 corrupt artifacts").
	Msg string
}

// Error returns Msg.
func (e *ProblemsFound) Error() string { return e.Msg }

// ErrorCode returns "problems_found".
func (e *ProblemsFound) ErrorCode() string { return CodeProblemsFound }

// ConfirmationError says a destructive command needs a confirmation, or
// the confirmation given no longer matches the plan; nothing was changed.
// Exit status 4. It is the one confirmation error of every
// plan-then-confirm command (package internal/plan).
type ConfirmationError = plan.ConfirmationError

// LockedError says another process holds the lock on a store or scratch
// root; nothing was changed. Exit status 5. Lock packages may return any
// error whose ErrorCode method says "locked" instead.
type LockedError struct {
	// Msg says which lock and, when known, who holds it.
	Msg string
	// Err is the underlying cause, may be nil.
	Err error
}

// Error returns Msg and the cause.
func (e *LockedError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *LockedError) Unwrap() error { return e.Err }

// ErrorCode returns "locked".
func (e *LockedError) ErrorCode() string { return CodeLocked }

// codedError is an error with a fixed code and exit status 1.
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string     { return e.err.Error() }
func (e *codedError) Unwrap() error     { return e.err }
func (e *codedError) ErrorCode() string { return e.code }

// CodedError returns an error carrying the given code around err; its
// exit status is decided by ExitCode (1 for codes it does not know).
func CodedError(code string, err error) error { return &codedError{code: code, err: err} }

// ErrorCode returns the stable code of err: the code of the command line's
// own error types first (UsageError, ProblemsFound, ConfirmationError,
// LockedError), then artifacts.CodeOf. A nil error has the empty code.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var u *UsageError
	if errors.As(err, &u) {
		return u.ErrorCode()
	}
	return string(artifacts.CodeOf(err))
}

// ExitCode maps err to the exit status of cli.md: 0 for nil, 2 for usage
// errors (and the invalid_* and unknown_layout codes of package
// artifacts), 3 for problems_found, 4 for confirmation_required,
// stale_confirmation and would_overwrite, 5 for
// locked, 6 for conflict (another writer or process got there first: a
// snapshot on a parent that is no longer the latest, a directory in use
// or already there), 1 for anything else.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var u *UsageError
	if errors.As(err, &u) {
		return ExitUsage
	}
	switch ErrorCode(err) {
	case CodeUsage,
		string(artifacts.CodeInvalidScope),
		string(artifacts.CodeInvalidName),
		string(artifacts.CodeInvalidMIMEType),
		string(artifacts.CodeInvalidMetadata),
		string(artifacts.CodeInvalidArgument),
		string(artifacts.CodeUnknownLayout):
		return ExitUsage
	case CodeProblemsFound:
		return ExitProblems
	case CodeConfirmationRequired, CodeStaleConfirmation, CodeWouldOverwrite:
		return ExitConfirmation
	case CodeLocked:
		return ExitLocked
	case string(artifacts.CodeConflict):
		return ExitConflict
	}
	return ExitFailure
}

// IsUsage reports whether err exits with status 2.
func IsUsage(err error) bool { return ExitCode(err) == ExitUsage }

// cobraUsagePrefixes are the beginnings of the plain errors cobra returns
// for command-line mistakes it finds itself.
var cobraUsagePrefixes = []string{
	"unknown command ",
	"unknown flag: ",
	"unknown shorthand flag: ",
	"required flag(s) ",
	"if any flags in the group ",
	"at least one of the flags in the group ",
	"exactly one of the flags in the group ",
	"flag needs an argument: ",
	"invalid argument ",
	"accepts ",
	"requires at least ",
	"requires at most ",
	"bad flag syntax: ",
}

// IsCobraUsageError reports whether err is one of the plain errors cobra
// returns for a command-line mistake (unknown command, missing required
// flag, wrong number of arguments).
func IsCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range cobraUsagePrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// AsUsageError returns err as a *UsageError when it is a usage mistake
// (already a *UsageError, or a plain cobra error), recording cmd's path for
// the hint; other errors are returned unchanged.
func AsUsageError(err error, cmd *cobra.Command) error {
	if err == nil {
		return nil
	}
	var u *UsageError
	if errors.As(err, &u) {
		if u.CommandPath == "" && cmd != nil {
			u.CommandPath = cmd.CommandPath()
		}
		return err
	}
	if IsCobraUsageError(err) {
		u := &UsageError{Err: err}
		if cmd != nil {
			u.CommandPath = cmd.CommandPath()
		}
		return u
	}
	return err
}

// errorObject is the JSON shape of an error on stderr.
type errorObject struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// PrintError reports err on standard error, once. In JSON mode it writes
// exactly one line {"error":{"code":"...","message":"..."}}. Otherwise it
// writes "agentstore: MESSAGE", and for usage errors a second line
// "Run 'CMD --help' for usage.".
func PrintError(ios *iostreams.IOStreams, err error, jsonMode bool) {
	if err == nil {
		return
	}
	code := ErrorCode(err)
	if code == "" {
		code = string(artifacts.CodeUnknown)
	}
	if jsonMode {
		var o errorObject
		o.Error.Code = code
		o.Error.Message = err.Error()
		_ = output.JSONLine(ios.ErrOut, o)
		return
	}
	printText(ios.ErrOut, err)
}

func printText(w io.Writer, err error) {
	// Messages carry ids and names: nothing in them may drive the terminal.
	msg := output.EscapeLines(strings.TrimRight(err.Error(), "\n"))
	fmt.Fprintf(w, "agentstore: %s\n", msg)
	if ExitCode(err) != ExitUsage || ErrorCode(err) == string(artifacts.CodeUnknownLayout) {
		return
	}
	path := "agentstore"
	var u *UsageError
	if errors.As(err, &u) && u.CommandPath != "" {
		path = u.CommandPath
	}
	fmt.Fprintf(w, "Run '%s --help' for usage.\n", path)
}
