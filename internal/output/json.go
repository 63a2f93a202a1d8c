// Package output holds the helpers every command uses to print results:
// JSON, tables, sizes, times, truncation, colour styles and progress.
// They take their decisions (terminal, colour, width) from an
// *iostreams.IOStreams, never from os.Stdout.
package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/agentstore/agentstore/internal/shell"
)

// JSON writes v to w as JSON indented by two spaces, with HTML escaping
// off and a trailing newline. Characters a terminal would act on or that
// hide or reorder text (DEL, C1 controls, U+202E and the other
// bidirectional controls; see shell.Hidden) are written as \u escapes:
// the same JSON value, safe to show.
func JSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeHidden(buf.Bytes()))
	return err
}

// JSONLine writes v to w as one line of compact JSON with HTML escaping off
// and a trailing newline (used for error objects and JSON log lines).
func JSONLine(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(escapeHidden(buf.Bytes()))
	return err
}

// escapeHidden rewrites, in encoded JSON, every character shell.Hidden
// reports as a \u escape (encoding/json escapes C0 controls already, but
// writes DEL, C1 controls and bidirectional controls raw). Such characters
// only occur inside strings, where the escape means the same.
func escapeHidden(b []byte) []byte {
	// Every character shell.Hidden reports that JSON does not escape
	// already is DEL or above: ASCII below DEL needs nothing.
	ascii := !slices.ContainsFunc(b, func(c byte) bool { return c >= 0x7f })
	if ascii || !shell.NeedsEscape(string(b)) {
		return b
	}
	var out bytes.Buffer
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError && r >= 0x7f && shell.Hidden(r) {
			if r > 0xffff {
				r1, r2 := utf16Pair(r)
				fmt.Fprintf(&out, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&out, `\u%04x`, r)
			}
		} else {
			out.Write(b[i : i+n])
		}
		i += n
	}
	return out.Bytes()
}

// utf16Pair splits a rune above U+FFFF into its UTF-16 surrogates.
func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
