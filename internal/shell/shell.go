// Package shell quotes arguments for the commands the tool prints in hints
// and next: lines, so that an operator can paste them into a POSIX shell.
// It is the one quoting helper of the module.
package shell

import "strings"

// Quote quotes s for a POSIX shell: unchanged when it is not empty and
// holds only characters no shell treats specially (letters, digits and
// @%+=:,./_-), else in single quotes, each ' written as '\”.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("@%+=:,./_-", c) >= 0) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// Join quotes every argument and joins them with spaces.
func Join(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
