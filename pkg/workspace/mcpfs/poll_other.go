//go:build !unix

package mcpfs

import "io"

// pollable returns r: outside Unix, stdin is read as it is.
func pollable(r io.Reader) (io.Reader, func()) { return r, func() {} }
