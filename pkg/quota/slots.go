package quota

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// FSScopeSlots counts the scope slot files (.adk-scope-slot-K.reserve) of
// the filesystem store rooted at root (the directory holding v1/). A store
// with no v1/scopes yet has none. Together with the scope directories,
// which Walk reports, they decide how much of the store's scope capacity
// is used: a put refuses a new scope once either reaches
// MaxScanEntries/2, and neither ever goes down.
//
// It reads the layout directly, as fsstore does; it lives here rather
// than as a method of fsstore.Store so that package stays unchanged.
func FSScopeSlots(root string) (int, error) {
	const op = "quota count scope slots"
	dir := filepath.Join(root, fsstore.LayoutDir, fsstore.ScopesDir)
	d, err := osutil.OpenDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, artifacts.Errorf(artifacts.CodeIO, op, err, "")
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(4096)
		for _, name := range names {
			if _, ok := fsstore.ParseSlot(name, fsstore.ScopeSlotPrefix); ok {
				n++
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
			break
		}
		if err != nil {
			return 0, artifacts.Errorf(artifacts.CodeIO, op, err, "")
		}
	}
	return n, nil
}
