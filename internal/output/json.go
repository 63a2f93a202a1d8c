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
	if err := enc.Encode(v); err != nil {
		return err
	}
	// The encoder's own indentation (SetIndent) runs its general scanner
	// over the output and grows two more buffers: for 1,000 listed names
	// about 6 ms and 1.4 MB of fresh memory in a new process, against
	// about 2 ms here (docs/performance.md).
	_, err := w.Write(escapeHidden(indent(make([]byte, 0, 2*buf.Len()), buf.Bytes())))
	return err
}

// indent appends to dst src, the compact JSON of one value as an Encoder
// writes it (no space outside strings but the newline that ends it),
// indented by two spaces: byte for byte what json.Indent(dst, src, "",
// "  ") writes, in one pass without its general scanner.
func indent(dst, src []byte) []byte {
	depth, inString, escaped, open := 0, false, false, false
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, ' ', ' ')
		}
	}
	for _, c := range src {
		if inString {
			dst = append(dst, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			if depth == 0 && !open {
				dst = append(dst, c) // after the value: kept, as json.Indent does
			}
			continue
		}
		if open && c != '}' && c != ']' {
			open = false
			depth++
			newline()
		}
		switch c {
		case '"':
			inString = true
			dst = append(dst, c)
		case '{', '[':
			// The newline waits for the next byte: {} and [] stay as they are.
			open = true
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if open {
				open = false
			} else {
				depth--
				newline()
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
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
