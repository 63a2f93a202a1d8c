package cmd

import (
	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// The command line opens stores through these adapters.
func init() {
	cmdutil.OpenFS = func(root string) (artifacts.Store, error) {
		return fsstore.Open(root, fsstore.Options{})
	}
}
