package cmdutil

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentstore/agentstore/internal/lock"
)

var safeArg = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// UnlockCommand returns "agentstore unlock ARGS..." with each argument
// quoted for a POSIX shell where needed.
func UnlockCommand(args ...string) string {
	q := []string{"agentstore", "unlock"}
	for _, a := range args {
		if !safeArg.MatchString(a) {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q = append(q, a)
	}
	return strings.Join(q, " ")
}

// LockHeld turns a *lock.HeldError into a *LockedError (exit status 5)
// whose message ends with the unlock command that shows the lock and
// removes it once stale; other errors are returned unchanged.
func LockHeld(err error, unlockArgs ...string) error {
	var held *lock.HeldError
	if !errors.As(err, &held) {
		return err
	}
	return &LockedError{Msg: fmt.Sprintf("%v; nothing was changed. Try again later; to see the lock and remove it if it is stale, run: %s", held, UnlockCommand(unlockArgs...))}
}

// TakeoverMessage describes a stale lock that was taken over, for the
// info-level log line every takeover leaves.
func TakeoverMessage(prev lock.State) string {
	holder := "an unknown holder (the lock file did not parse)"
	if h := prev.Holder; prev.Parsed {
		holder = fmt.Sprintf("%s, pid %d on %s, since %s", h.Purpose, h.PID, h.Host, h.Started.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return fmt.Sprintf("took over the stale lock %s of %s: %s", prev.Path, holder, prev.Why)
}
