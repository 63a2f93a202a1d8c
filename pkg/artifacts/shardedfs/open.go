package shardedfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// layout is the erlang-fs-sharded opener.
type layout struct{ opts Options }

// NewLayout returns the erlang-fs-sharded layout's opener for an
// artifacts.URLMux: ROOT holds scope-shards/. Its stores are opened with
// opts (the options of every shard).
func NewLayout(opts Options) artifacts.Layout { return layout{opts: opts} }

// Info describes the layout.
func (layout) Info() artifacts.LayoutInfo {
	return artifacts.LayoutInfo{
		Name:    LayoutName,
		Scheme:  artifacts.SchemeFile,
		Writer:  "Erlang ADK 0.10 durable_local (adk_scope_shard_router over adk_artifact_fs)",
		Marker:  "ROOT holds " + ShardsDir + "/",
		Example: "/var/lib/adk/artifacts",
		Facts: []string{
			"ROOT/scope-shards/<scope hash>/ is a complete erlang-fs store holding that one scope",
			"versions start at 1; numbers are never reused, not even after a delete (v-N.reserve stays)",
			"every record holds the payload's SHA-256; reads check size and digest",
			"lifetime ceilings per shard: " + strconv.Itoa(artifacts.DefaultMaxScanEntries/2) + " names per scope, " + strconv.Itoa(artifacts.DefaultMaxScanEntries/3) + " version numbers per name; no store-wide scope ceiling",
			"a put into a new scope makes its shard; a shard whose name is not its scope's hash is a verify finding",
			"repair repairs each shard as the Erlang adapter would, under one lock ROOT/.agentstore-repair.lock",
		},
	}
}

// Detect reports whether root holds scope-shards/.
func (layout) Detect(_ context.Context, loc artifacts.Location) (bool, error) {
	return artifacts.IsDir(filepath.Join(loc.Root, ShardsDir)), nil
}

// Guess recognises the inside of a sharded store: scope-shards/ itself, a
// shard, or anything below one.
func (layout) Guess(_ context.Context, loc artifacts.Location) string {
	parts := strings.Split(filepath.ToSlash(loc.Root), "/")
	for i := len(parts) - 1; i >= 1; i-- {
		if parts[i] != ShardsDir {
			continue
		}
		root := filepath.FromSlash(strings.Join(parts[:i], "/"))
		if root == "" {
			root = string(filepath.Separator)
		}
		what := "the inside of a sharded store"
		if i == len(parts)-2 && fsstore.IsHash(parts[i+1]) {
			what = "one shard of a sharded store (each shard holds one scope)"
		}
		return fmt.Sprintf("this looks like %s: use --store %s, the directory that holds %s/", what, root, ShardsDir)
	}
	return ""
}

// Open opens the store at loc.Root; with create a missing root is made
// (0700), and scope-shards/ follows with the first put.
func (l layout) Open(_ context.Context, loc artifacts.Location, create bool) (artifacts.Driver, error) {
	if create {
		if err := os.MkdirAll(loc.Root, 0o700); err != nil {
			code := artifacts.CodeIO
			if errors.Is(err, fs.ErrPermission) {
				code = artifacts.CodePermission
			}
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, artifacts.Errorf(code, "open", nil, "cannot create the store directory %s: %v", loc.Root, err)
		}
	}
	return Open(loc.Root, l.opts)
}
