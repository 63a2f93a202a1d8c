package cmdutil

import (
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// NoStore is what a table says in place of the store line when a command
// ran without an artifact store (ws list without --store).
const NoStore = "no artifact store"

// StoreName is how every command's output names the store it used: its
// URI, in the canonical form that can be given back to --store, and its
// layout. A store URI never holds credentials: ParseStoreURI refuses user
// information, and Cloud Storage credentials come from the environment,
// never from the URI. The zero StoreName is "no store".
type StoreName struct {
	// URI is the store's canonical URI (StoreURI.String), "" for none.
	URI string
	// Layout is the name of the store's layout ("erlang-fs", ...).
	Layout string
}

// NameStore returns the name of st, opened at u. A nil st gives the zero
// StoreName: no store.
func NameStore(u StoreURI, st *artifacts.Store) StoreName {
	if st == nil {
		return StoreName{}
	}
	return StoreName{URI: u.String(), Layout: st.Capabilities().Layout}
}

// None reports whether the command ran without a store.
func (n StoreName) None() bool { return n.URI == "" }

// Line is the line that opens every table output: "Store URI (LAYOUT)",
// the word Store in bold, the URI escaped for a terminal; "No artifact
// store" for none. It has no trailing newline, so a command can add to it
// (", scope ...").
func (n StoreName) Line(sty output.Styles) string {
	if n.None() {
		return sty.Bold("No artifact store")
	}
	return sty.Bold("Store") + " " + output.Escape(n.URI) + " (" + output.Escape(n.Layout) + ")"
}

// ScratchLine is the line that follows Line in the tables of the ws
// commands, which also name the scratch root: "Scratch DIR", the word
// Scratch in bold, DIR escaped for a terminal; no trailing newline.
func ScratchLine(sty output.Styles, scratch string) string {
	return sty.Bold("Scratch") + " " + output.Escape(scratch)
}

// JSON returns the "store" and "layout" fields of the JSON output; both
// are null for no store.
func (n StoreName) JSON() StoreJSON {
	if n.None() {
		return StoreJSON{}
	}
	uri, layout := n.URI, n.Layout
	return StoreJSON{Store: &uri, Layout: &layout}
}

// StoreJSON holds the top-level "store" (the URI) and "layout" fields of
// every JSON object a command prints. Output structs embed it first, so
// that the fields lead the object; StoreName.JSON fills it. Both are null
// when the command ran without a store.
type StoreJSON struct {
	// Store is the store's URI, as --store takes it.
	Store *string `json:"store"`
	// Layout is the store's layout.
	Layout *string `json:"layout"`
}
