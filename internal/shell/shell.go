// Package shell quotes arguments for the command lines the CLI prints as
// next steps ("next: agentstore artifacts delete ..."), so that they can be
// copied into a shell and run as printed, and so that printing them cannot
// drive the terminal.
package shell

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Quote quotes s for a shell:
//   - unchanged when it holds only characters no shell treats specially;
//   - in single quotes (POSIX) when it holds other printable characters;
//   - in ANSI-C quotes ($'...', understood by bash, zsh, ksh and busybox
//     sh) when it holds anything a terminal would act on or hide: control
//     characters (ESC, BEL, newline, C0 and C1), bidirectional overrides
//     and isolates (U+202A..U+202E, U+2066..U+2069), line and paragraph
//     separators, other invisible format characters, or bytes that are not
//     valid UTF-8. Those are written as \xHH escapes of their UTF-8 bytes
//     (which every shell with $'...' reads the same in any locale), so the
//     printed text is plain ASCII where it matters.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if isSafe(s) {
		return s
	}
	if !NeedsEscape(s) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case Hidden(r):
			// Byte escapes, not \u: bash turns \u into a character only
			// in a UTF-8 locale.
			for j := range n {
				fmt.Fprintf(&b, `\x%02x`, s[i+j])
			}
		default:
			b.WriteRune(r)
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}

// Join quotes every argument (see Quote) and joins them with spaces.
func Join(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

// NeedsEscape reports whether s holds a character a terminal would act on
// or that would hide or reorder text (see Hidden), or invalid UTF-8.
func NeedsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || Hidden(r) {
			return true
		}
		i += n
	}
	return false
}

// Hidden reports whether r must not reach a terminal as itself: C0 and C1
// control characters and DEL, the line and paragraph separators, and
// format characters (category Cf: bidirectional embeddings, overrides,
// isolates and marks, zero-width characters).
func Hidden(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

func isSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("@%+=:,./_-", c) >= 0) {
			return false
		}
	}
	return true
}
