package fsstore

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
)

// LayoutName is the name of the layout this package reads and writes.
const LayoutName = "erlang-fs"

// ShardsDirName is the directory of the sharded layout (package
// shardedfs): a v1 store directly inside ROOT/scope-shards/ is a shard of
// it, not a store of its own.
const ShardsDirName = "scope-shards"

// layout is the erlang-fs opener.
type layout struct{ opts Options }

// NewLayout returns the erlang-fs layout's opener for an artifacts.URLMux:
// ROOT holds v1/. Its stores are opened with opts.
func NewLayout(opts Options) artifacts.Layout { return layout{opts: opts} }

// Info describes the layout.
func (layout) Info() artifacts.LayoutInfo {
	return artifacts.LayoutInfo{
		Name:    LayoutName,
		Scheme:  artifacts.SchemeFile,
		Writer:  "Erlang ADK adk_artifact_fs (one root)",
		Marker:  "ROOT holds " + LayoutDir + "/",
		Example: "/var/lib/agentstore/store",
		Facts: []string{
			"ROOT/v1/scopes/<scope hash>/names/<name hash>/v-N.{reserve,data,meta}",
			"versions start at 1; numbers are never reused, not even after a delete (v-N.reserve stays)",
			"every record holds the payload's SHA-256; reads check size and digest",
			"lifetime ceilings per store: " + strconv.Itoa(artifacts.DefaultMaxScanEntries/2) + " scopes, " + strconv.Itoa(artifacts.DefaultMaxScanEntries/2) + " names per scope, " + strconv.Itoa(artifacts.DefaultMaxScanEntries/3) + " version numbers per name",
			"writers in many processes at once; no lock needed; repair takes ROOT/.agentstore-repair.lock",
		},
	}
}

// Detect reports whether root holds v1/ (and is not itself a shard of a
// sharded store, whose root holds scope-shards/).
func (layout) Detect(_ context.Context, loc artifacts.Location) (bool, error) {
	if isShard(loc.Root) {
		return false, nil
	}
	return artifacts.IsDir(filepath.Join(loc.Root, LayoutDir)), nil
}

// isShard reports whether dir is ROOT/scope-shards/<hash>.
func isShard(dir string) bool {
	return IsHash(filepath.Base(dir)) && filepath.Base(filepath.Dir(dir)) == ShardsDirName
}

// Guess recognises the inside of a store (ROOT/v1, ROOT/v1/scopes, a scope
// or name directory) and a directory one level above a store.
func (layout) Guess(_ context.Context, loc artifacts.Location) string {
	parts := strings.Split(filepath.ToSlash(loc.Root), "/")
	for i := len(parts) - 1; i >= 1; i-- {
		if parts[i] != LayoutDir {
			continue
		}
		root := filepath.FromSlash(strings.Join(parts[:i], "/"))
		if root == "" {
			root = string(filepath.Separator)
		}
		// ROOT/v1 itself, anything below ROOT/v1/scopes, or anything below
		// the v1/ of an existing store.
		if i+1 < len(parts) && parts[i+1] != ScopesDir && !artifacts.IsDir(filepath.Join(root, LayoutDir, ScopesDir)) {
			continue
		}
		if isShard(root) {
			return "" // the sharded layout's guess
		}
		return fmt.Sprintf("this looks like the inside of a store: use --store %s, the directory that holds %s/", root, LayoutDir)
	}
	// One level too high: a subdirectory holds v1/.
	entries, err := readDirN(loc.Root, 64)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		sub := filepath.Join(loc.Root, e.Name())
		if e.IsDir() && !isShard(sub) && artifacts.IsDir(filepath.Join(sub, LayoutDir)) {
			return fmt.Sprintf("a store is one level down: use --store %s, the directory that holds %s/", sub, LayoutDir)
		}
	}
	return ""
}

// readDirN reads at most n entries of dir.
func readDirN(dir string, n int) ([]fs.DirEntry, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(n)
}

// Open opens the store at loc.Root; with create a missing root is made
// (0700), and v1/ follows with the first put.
func (l layout) Open(_ context.Context, loc artifacts.Location, create bool) (artifacts.Driver, error) {
	if create {
		if err := os.MkdirAll(loc.Root, 0o700); err != nil {
			code := artifacts.CodeIO
			if errors.Is(err, fs.ErrPermission) {
				code = artifacts.CodePermission
			}
			return nil, artifacts.Errorf(code, "open", nil, "cannot create the store directory %s: %v", loc.Root, unwrapPath(err))
		}
	}
	return Open(loc.Root, l.opts)
}

// unwrapPath drops the operation and path of a *fs.PathError, which the
// message names already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
