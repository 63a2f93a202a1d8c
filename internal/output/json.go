// Package output holds the helpers every command uses to print results:
// JSON, tables, sizes, times, truncation, colour styles and progress.
// They take their decisions (terminal, colour, width) from an
// *iostreams.IOStreams, never from os.Stdout.
package output

import (
	"encoding/json"
	"io"
)

// JSON writes v to w as JSON indented by two spaces, with HTML escaping
// off and a trailing newline.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// JSONLine writes v to w as one line of compact JSON with HTML escaping off
// and a trailing newline (used for error objects and JSON log lines).
func JSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
