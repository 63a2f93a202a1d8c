// Package shardedfs is the driver of the erlang-fs-sharded layout: the
// store that Erlang ADK 0.10's supervised durable_local profile writes.
// Its exact-scope router gives every scope a root of its own,
//
//	ROOT/scope-shards/<H>/v1/scopes/<H>/names/<name hash>/v-N.{reserve,data,meta}
//
// where H is the scope hash used inside every store (artifacts.Scope.Hash),
// and each shard is a complete v1 filesystem store holding that one scope.
//
// The driver is a thin composition: every call picks the scope's shard and
// hands it to a package fsstore Store opened on the shard root, which reads
// and writes the v1 layout byte for byte. A put into a scope without a
// shard first makes ROOT/scope-shards/<H>/ (directories 0700, fsynced), as
// the Erlang router does, and fsstore makes the rest. What it adds is the
// store-wide view: Walk and ListScopes over every shard, and a shard whose
// directory name is not the hash of the scope inside it reported as a
// problem and never trusted. Lifetime ceilings apply per shard, since each
// shard is its own store.
package shardedfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// ShardsDir is the directory below the store root that holds the shards.
const ShardsDir = "scope-shards"

// LayoutName is the name of the layout.
const LayoutName = "erlang-fs-sharded"

// maxCached bounds the shard stores kept open between calls.
const maxCached = 1024

// Options configure a Store: the options of every shard's fsstore.Store.
type Options = fsstore.Options

// Store is a sharded filesystem store rooted at a directory that holds
// scope-shards/. It implements artifacts.Driver, artifacts.ScopeLister,
// artifacts.Walker and artifacts.PayloadOpener. It is safe for concurrent
// use, by many goroutines and processes, as fsstore is.
type Store struct {
	root   string
	shards string // root/scope-shards
	opts   Options
	// shardCaps are the capabilities of every shard.
	shardCaps artifacts.Capabilities

	mu     sync.Mutex
	cached map[string]*fsstore.Store // shard hash -> its store
}

var (
	_ artifacts.Driver        = (*Store)(nil)
	_ artifacts.ScopeLister   = (*Store)(nil)
	_ artifacts.Walker        = (*Store)(nil)
	_ artifacts.PayloadOpener = (*Store)(nil)
)

// Open returns a Store for root, which must be an existing real directory.
// root/scope-shards, when it exists, must be a real directory too; the
// first Put creates it.
func Open(root string, opts Options) (*Store, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "open", err, "store root %q", root)
	}
	// Check the options once, as every shard will: an fsstore on the root
	// itself validates them, and reports the ceilings, creating nothing.
	probe, err := fsstore.Open(abs, opts)
	if err != nil {
		return nil, err
	}
	s := &Store{root: abs, shards: filepath.Join(abs, ShardsDir), opts: opts, shardCaps: probe.Capabilities(), cached: map[string]*fsstore.Store{}}
	if err := checkDir("open", s.shards, true); err != nil {
		return nil, err
	}
	return s, nil
}

// Root returns the store's root directory.
func (s *Store) Root() string { return s.root }

// ShardsPath returns root/scope-shards.
func (s *Store) ShardsPath() string { return s.shards }

// ShardRoot returns the root of scope's shard: root/scope-shards/<hash>.
func (s *Store) ShardRoot(scope artifacts.Scope) string {
	return filepath.Join(s.shards, scope.Hash())
}

// Capabilities describes the driver: those of a shard, under this
// layout's name. The ceilings are per shard.
func (s *Store) Capabilities() artifacts.Capabilities {
	c := s.caps()
	c.Name, c.Layout = "fs-sharded", LayoutName
	c.ScopeCeilingPerShard = true
	return c
}

func (s *Store) caps() artifacts.Capabilities { return s.shardCaps }

// checkDir refuses a path that is a symbolic link or not a directory; with
// missingOK a path that does not exist passes.
func checkDir(op, path string, missingOK bool) error {
	fi, err := os.Lstat(path)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		return artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is a symbolic link, not a directory", path)
	case err == nil && !fi.IsDir():
		return artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is not a directory", path)
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist) && missingOK:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return artifacts.Errorf(artifacts.CodeNotFound, op, err, "%s does not exist", path)
	case errors.Is(err, fs.ErrPermission):
		return artifacts.Errorf(artifacts.CodePermission, op, err, "%s", path)
	}
	return artifacts.Errorf(artifacts.CodeIO, op, err, "%s", path)
}

// shard returns the store of scope's shard. Without create a scope with no
// shard is CodeNotFound with msg; with create the shard directory is made
// (scope-shards/ first when missing), each directory 0700 and its parent
// fsynced.
func (s *Store) shard(op string, scope artifacts.Scope, create bool, msg string) (*fsstore.Store, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	h := scope.Hash()
	s.mu.Lock()
	st := s.cached[h]
	s.mu.Unlock()
	if st != nil {
		return st, nil
	}
	dir := filepath.Join(s.shards, h)
	if err := checkDir(op, dir, create); err != nil {
		if artifacts.IsNotFound(err) {
			return nil, artifacts.Errorf(artifacts.CodeNotFound, op, nil, "%s", msg).With(scope, "", artifacts.NoVersion)
		}
		return nil, err
	}
	if create {
		for _, d := range []string{s.shards, dir} {
			if err := os.Mkdir(d, 0o700); err == nil {
				if err := osutil.SyncDir(filepath.Dir(d)); err != nil {
					return nil, artifacts.Errorf(artifacts.CodeIO, op, err, "%s", filepath.Dir(d))
				}
			} else if !errors.Is(err, fs.ErrExist) {
				return nil, checkDirErr(op, d, err)
			}
			if err := checkDir(op, d, false); err != nil {
				return nil, err
			}
		}
	}
	st, err := fsstore.Open(dir, s.opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.cached) >= maxCached {
		clear(s.cached)
	}
	if c := s.cached[h]; c != nil {
		st = c
	} else {
		s.cached[h] = st
	}
	s.mu.Unlock()
	return st, nil
}

func checkDirErr(op, path string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return artifacts.Errorf(artifacts.CodePermission, op, err, "%s", path)
	}
	return artifacts.Errorf(artifacts.CodeIO, op, err, "%s", path)
}

// Put streams r into a new version of name in scope's shard, making the
// shard first when the scope has none.
func (s *Store) Put(ctx context.Context, scope artifacts.Scope, name string, r io.Reader, opts artifacts.PutOptions) (artifacts.Record, error) {
	// Validate everything before the shard is made: a refused put leaves
	// no empty shard behind.
	if err := artifacts.ValidateName(name); err != nil {
		return artifacts.Record{}, err
	}
	if opts.MIMEType != "" {
		if err := artifacts.ValidateMIMEType(opts.MIMEType); err != nil {
			return artifacts.Record{}, err
		}
	}
	if err := artifacts.ValidateMetadata(opts.Metadata); err != nil {
		return artifacts.Record{}, err
	}
	if err := artifacts.CheckContext(ctx, "put"); err != nil {
		return artifacts.Record{}, err
	}
	st, err := s.shard("put", scope, true, "")
	if err != nil {
		return artifacts.Record{}, err
	}
	return st.Put(ctx, scope, name, r, opts)
}

// Get opens a version (artifacts.Latest for the latest) for reading.
func (s *Store) Get(ctx context.Context, scope artifacts.Scope, name string, version int64) (*artifacts.Reader, error) {
	st, err := s.readShard("get", scope, name)
	if err != nil {
		return nil, err
	}
	return st.Get(ctx, scope, name, version)
}

// GetRange opens length bytes at offset of a version (artifacts.Latest for the latest).
func (s *Store) GetRange(ctx context.Context, scope artifacts.Scope, name string, version int64, offset, length int64) (*artifacts.Reader, error) {
	st, err := s.readShard("get range", scope, name)
	if err != nil {
		return nil, err
	}
	return st.GetRange(ctx, scope, name, version, offset, length)
}

// Stat returns the record of a version (artifacts.Latest for the latest).
func (s *Store) Stat(ctx context.Context, scope artifacts.Scope, name string, version int64) (artifacts.Record, error) {
	st, err := s.readShard("stat", scope, name)
	if err != nil {
		return artifacts.Record{}, err
	}
	return st.Stat(ctx, scope, name, version)
}

// readShard is shard for the calls about one name: the name is checked
// before the shard is looked up, so an invalid name is reported as such
// even in a scope without a shard.
func (s *Store) readShard(op string, scope artifacts.Scope, name string) (*fsstore.Store, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if err := artifacts.ValidateName(name); err != nil {
		return nil, err
	}
	return s.shard(op, scope, false, "no such artifact")
}

// OpenPayload opens the payload of a record already read.
func (s *Store) OpenPayload(ctx context.Context, rec artifacts.Record) (*artifacts.Reader, error) {
	st, err := s.readShard("get", rec.Scope, rec.Name)
	if err != nil {
		return nil, err
	}
	return st.OpenPayload(ctx, rec)
}

// ListNames returns a page of the scope's names.
func (s *Store) ListNames(ctx context.Context, scope artifacts.Scope, opts artifacts.ListOptions) (artifacts.NamePage, error) {
	const op = "list names"
	if _, err := artifacts.NamePageArgs(scope, opts, s.caps().MaxPageLimit); err != nil {
		return artifacts.NamePage{}, err
	}
	st, err := s.shard(op, scope, false, "scope has no artifacts")
	if err != nil {
		return artifacts.NamePage{}, err
	}
	return st.ListNames(ctx, scope, opts)
}

// ListVersions returns a page of a name's published records.
func (s *Store) ListVersions(ctx context.Context, scope artifacts.Scope, name string, opts artifacts.ListOptions) (artifacts.VersionPage, error) {
	const op = "list versions"
	if _, _, err := artifacts.VersionPageArgs(scope, name, opts, s.caps().MaxPageLimit); err != nil {
		return artifacts.VersionPage{}, err
	}
	st, err := s.shard(op, scope, false, "no such artifact")
	if err != nil {
		return artifacts.VersionPage{}, err
	}
	return st.ListVersions(ctx, scope, name, opts)
}

// Delete removes the selected published versions from scope's shard. The
// shard itself stays, as the Erlang router leaves it.
func (s *Store) Delete(ctx context.Context, scope artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	st, err := s.readShard("delete", scope, name)
	if err != nil {
		return nil, err
	}
	return st.Delete(ctx, scope, name, sel)
}

// ShardUsage is one shard as Shards reports it.
type ShardUsage struct {
	// Hash is the shard's directory name.
	Hash string
	// Root is the shard's root directory.
	Root string
}

// Shards lists the shard directories: the entries of scope-shards/ whose
// names are 64 lowercase hex digits. Other entries are not shards and are
// left out; a shard entry that is not a real directory is CodeUnsafeStore.
func (s *Store) Shards(ctx context.Context) ([]ShardUsage, error) {
	const op = "walk"
	entries, err := os.ReadDir(s.shards)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, checkDirErr(op, s.shards, err)
	}
	out := make([]ShardUsage, 0, len(entries))
	for _, e := range entries {
		if !fsstore.IsHash(e.Name()) {
			continue
		}
		p := filepath.Join(s.shards, e.Name())
		if e.Type()&fs.ModeSymlink != 0 || !e.IsDir() {
			return nil, artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is not a directory", p)
		}
		out = append(out, ShardUsage{Hash: e.Name(), Root: p})
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return nil, err
	}
	return out, nil
}

// MisplacedReason is the Problem reason of a version found in a shard
// whose directory name is not the hash of the version's scope.
const MisplacedReason = "the shard directory %s is not the hash of this version's scope (%s, hash %s): the store never reads it there; move the shard to that name or inspect it"

// Walk reads every shard, several at once, and calls fn once per scope
// found in a shard, from one goroutine, in no set order. A scope found in
// a shard whose name is not its hash is reported with Known false and
// every version in it as a Problem (MisplacedReason): it is never trusted.
func (s *Store) Walk(ctx context.Context, fn func(artifacts.ScopeUsage) error) error {
	shards, err := s.Shards(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		usages []artifacts.ScopeUsage
		err    error
	}
	jobs := make(chan ShardUsage)
	results := make(chan result)
	workers := min(len(shards), max(4, 4*runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sh := range jobs {
				u, err := s.walkShard(ctx, sh)
				select {
				case results <- result{u, err}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, sh := range shards {
			select {
			case jobs <- sh:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	for r := range results {
		if r.err != nil {
			cancel()
			return r.err
		}
		for _, u := range r.usages {
			if err := fn(u); err != nil {
				cancel()
				return err
			}
		}
	}
	return artifacts.CheckContext(ctx, "walk")
}

// walkShard walks one shard's store.
func (s *Store) walkShard(ctx context.Context, sh ShardUsage) ([]artifacts.ScopeUsage, error) {
	st, err := fsstore.Open(sh.Root, s.opts)
	if err != nil {
		return nil, err
	}
	var out []artifacts.ScopeUsage
	err = st.Walk(ctx, func(u artifacts.ScopeUsage) error {
		if u.Hash != sh.Hash {
			u = misplaced(sh, u)
		}
		out = append(out, u)
		return nil
	})
	return out, err
}

// misplaced turns the usage of a scope found in another scope's shard into
// one that trusts nothing: unknown scope, every version a Problem.
func misplaced(sh ShardUsage, u artifacts.ScopeUsage) artifacts.ScopeUsage {
	scope := "an unreadable scope"
	if u.Known {
		scope = u.Scope.String()
	}
	reason := fmt.Sprintf(MisplacedReason, sh.Hash, scope, u.Hash)
	out := artifacts.ScopeUsage{Hash: sh.Hash + "/" + u.Hash, NameSlots: u.NameSlots}
	for _, n := range u.Names {
		m := artifacts.NameUsage{Name: n.Name, Hash: n.Hash, Reservations: n.Reservations, Problems: n.Problems}
		for _, r := range n.Records {
			m.Problems = append(m.Problems, artifacts.Problem{Version: r.Version, Path: sh.Root, Reason: reason})
		}
		out.Names = append(out.Names, m)
	}
	return out
}

// ListScopes returns every scope with at least one published version
// whose record decodes, in a shard of its own hash.
func (s *Store) ListScopes(ctx context.Context) ([]artifacts.Scope, error) {
	var out []artifacts.Scope
	err := s.Walk(ctx, func(u artifacts.ScopeUsage) error {
		if u.Known {
			out = append(out, u.Scope)
		}
		return nil
	})
	return out, err
}
