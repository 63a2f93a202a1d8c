//go:build !linux

package workspace

import (
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/agentstore/agentstore/internal/osutil"
)

// readEntries lists the open directory d with the entry types it reports,
// sorted by name. A directory opened through an os.Root would Lstat every
// entry; a duplicate of its descriptor does not.
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
	slices.SortFunc(out, func(a, b typedEntry) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// eachEntry calls fn for each entry of the open directory d as
// readEntries lists them, in name order.
func eachEntry(d *os.File, fn func(name []byte, typ fs.FileMode)) error {
	ents, err := readEntries(d)
	if err != nil {
		return err
	}
	for _, e := range ents {
		fn([]byte(e.name), e.typ)
	}
	return nil
}

// readEntriesAt is not available here: ok is false, and the caller opens
// the directory through the root.
func readEntriesAt(*os.File, string) ([]typedEntry, bool, error) { return nil, false, nil }

// eachEntryAt is not available here: ok is false.
func eachEntryAt(*os.File, string, func([]byte, fs.FileMode)) (bool, error) { return false, nil }
