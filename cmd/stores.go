package cmd

import (
	"context"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// The command line opens stores through these adapters.
func init() {
	cmdutil.OpenFS = func(root string) (artifacts.Driver, error) {
		return fsstore.Open(root, fsstore.Options{})
	}
	cmdutil.OpenGCS = func(ctx context.Context, bucket, prefix string) (artifacts.Driver, error) {
		return gcsstore.OpenURI(ctx, bucket, prefix, gcsstore.Options{})
	}
}
