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
		Marker:  "ROOT holds " + LayoutDir + "/" + ScopesDir + "/ (or an empty " + LayoutDir + "/)",
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

// Detect reports whether root holds v1/ as this layout writes it (see
// holdsLayout), and is not itself a shard of a sharded store, whose root
// holds scope-shards/.
func (layout) Detect(_ context.Context, loc artifacts.Location) (bool, error) {
	if isShard(loc.Root) {
		return false, nil
	}
	return holdsLayout(filepath.Join(loc.Root, LayoutDir)), nil
}

// holdsLayout reports whether v1 (ROOT/v1) is a directory holding what
// this layout writes there: scopes/, or nothing yet. A v1/ holding other
// entries only (the s/ of a copied Erlang GCS bucket, say) is not a store
// of this layout, so that it is refused instead of read as an empty store.
// A v1/ that cannot be read counts as one: opening it then reports why.
func holdsLayout(v1 string) bool {
	if !artifacts.IsDir(v1) {
		return false
	}
	if artifacts.IsDir(filepath.Join(v1, ScopesDir)) {
		return true
	}
	entries, err := readDirN(v1, 1)
	return err != nil || len(entries) == 0
}

// gcsCopyHint says what a directory v1 holding s/ and no scopes/ is: the
// object names of Erlang ADK's Cloud Storage adapter copied to a disk.
func gcsCopyHint(v1 string) string {
	if !artifacts.IsDir(filepath.Join(v1, "s")) || artifacts.IsDir(filepath.Join(v1, ScopesDir)) {
		return ""
	}
	return fmt.Sprintf("%s holds s/, the object names of Erlang ADK's Cloud Storage adapter (layout erlang-gcs), not the scopes/ of an erlang-fs store: a copy of a bucket is read where it is served from, --store gs://BUCKET/PREFIX", v1)
}

// isShard reports whether dir is ROOT/scope-shards/<hash>.
func isShard(dir string) bool {
	return IsHash(filepath.Base(dir)) && filepath.Base(filepath.Dir(dir)) == ShardsDirName
}

// Guess recognises the inside of a store (ROOT/v1, ROOT/v1/scopes, a scope
// or name directory) and a directory one level above a store.
func (layout) Guess(_ context.Context, loc artifacts.Location) string {
	for _, v1 := range []string{filepath.Join(loc.Root, LayoutDir), loc.Root} {
		if h := gcsCopyHint(v1); h != "" {
			return h
		}
	}
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
		if !holdsLayout(filepath.Join(root, LayoutDir)) {
			continue
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
		if e.IsDir() && !isShard(sub) && holdsLayout(filepath.Join(sub, LayoutDir)) {
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
