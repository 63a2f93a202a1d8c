//go:build !linux

package workspace

import (
	"os"

	"github.com/agentstore/agentstore/internal/osutil"
)

// readEntries lists the open directory d with the entry types it reports.
// A directory opened through an os.Root would Lstat every entry; a
// duplicate of its descriptor does not.
func readEntries(d *os.File) ([]typedEntry, error) {
	dup, err := osutil.DupFile(d)
	if err != nil {
		dup = d
	} else {
		defer dup.Close()
	}
	ents, err := dup.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	out := make([]typedEntry, len(ents))
	for i, e := range ents {
		out[i] = typedEntry{name: e.Name(), typ: e.Type()}
	}
	return out, nil
}
