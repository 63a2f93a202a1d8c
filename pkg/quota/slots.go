package quota

import (
	"context"

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
// It is fsstore.Store.ScopeSlots on a store opened at root.
func FSScopeSlots(root string) (int, error) {
	st, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		if artifacts.IsNotFound(err) {
			return 0, nil
		}
		return 0, err
	}
	return st.ScopeSlots(context.Background())
}
