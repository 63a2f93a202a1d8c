package output

import (
	"github.com/charmbracelet/lipgloss"

	"github.com/agentstore/agentstore/internal/iostreams"
)

// Styles are the text styles commands use, already bound to the colour
// decision of an IOStreams: when colour is off every method returns its
// argument unchanged.
type Styles struct {
	on bool
	r  *lipgloss.Renderer
}

// NewStyles returns the Styles for ios's standard output.
func NewStyles(ios *iostreams.IOStreams) Styles {
	return Styles{on: ios.ColorEnabled(), r: ios.Renderer()}
}

func (s Styles) render(st func(lipgloss.Style) lipgloss.Style, text string) string {
	if !s.on {
		return text
	}
	return st(s.r.NewStyle()).Render(text)
}

// Bold renders text in bold.
func (s Styles) Bold(text string) string {
	return s.render(func(st lipgloss.Style) lipgloss.Style { return st.Bold(true) }, text)
}

// Faint renders text dimmed.
func (s Styles) Faint(text string) string {
	return s.render(func(st lipgloss.Style) lipgloss.Style { return st.Faint(true) }, text)
}

// OK renders text in green, for good news.
func (s Styles) OK(text string) string {
	return s.render(func(st lipgloss.Style) lipgloss.Style { return st.Foreground(lipgloss.Color("2")) }, text)
}

// Warn renders text in yellow, for findings that need attention.
func (s Styles) Warn(text string) string {
	return s.render(func(st lipgloss.Style) lipgloss.Style { return st.Foreground(lipgloss.Color("3")) }, text)
}

// Bad renders text in red, for failures and corrupt items.
func (s Styles) Bad(text string) string {
	return s.render(func(st lipgloss.Style) lipgloss.Style { return st.Foreground(lipgloss.Color("1")) }, text)
}
