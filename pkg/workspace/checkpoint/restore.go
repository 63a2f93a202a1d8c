package checkpoint

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// RestoreOptions configure a restore.
type RestoreOptions struct {
	// Paths, when set, restores only these files and directories (with
	// everything below them) and the directories above them; a path the
	// manifest does not hold is CodeNotFound. Empty restores the tree.
	Paths []string
	// Progress, if set, is called after each file is complete with the
	// running number of files and bytes restored.
	Progress func(files int, bytes int64)
}

// RestoreStats describe a restore.
type RestoreStats struct {
	Files int
	Dirs  int
	Bytes int64
	// Packs and Reads count the packs read and the ranged reads made.
	Packs int
	Reads int
}

// target is where one blob's plain content goes.
type target struct {
	file int // index into the restore's files
	off  int64
}

// Restore writes the tree of m (or the chosen paths) into dst, which
// should be an empty directory: the caller makes it appear all or
// nothing (pkg/workspace restores into a new directory and swaps it in).
// m is checked as Decode checks it. Blobs are read pack by pack, a few
// packs at once (Options.Parallel), each pack's needed blobs with as few
// ranged reads as their gaps allow; each blob is checked against its
// SHA-256 before a byte of it is written. Files get mode 0600, or 0700
// when the manifest's mode has an executable bit, and their recorded
// modification time; directories 0700. On an error dst holds part of the
// tree and must be discarded.
func (c *Checkpoints) Restore(ctx context.Context, m *Manifest, dst *os.Root, opts RestoreOptions) (RestoreStats, error) {
	const op = "checkpoint restore"
	var st RestoreStats
	if err := m.Check(c.opts.Limits); err != nil {
		return st, err
	}
	sel, err := selectEntries(m, opts.Paths, c.opts.Limits)
	if err != nil {
		return st, artifacts.Errorf(artifacts.CodeNotFound, op, err, "").With(c.opts.Scope, "", artifacts.NoVersion)
	}
	osErr := func(p string, err error) error {
		code := artifacts.CodeIO
		if errors.Is(err, fs.ErrPermission) {
			code = artifacts.CodePermission
		}
		return artifacts.Errorf(code, op, err, "%q", p).With(c.opts.Scope, "", artifacts.NoVersion)
	}
	var files []*Entry
	byPack := map[int][]Blob{}
	targets := map[int][]target{}
	for _, i := range sel {
		e := &m.Entries[i]
		if e.Type == TypeDir {
			if err := dst.Mkdir(e.Path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return st, osErr(e.Path, err)
			}
			st.Dirs++
			continue
		}
		perm := os.FileMode(0o600)
		if execBit(e.Mode) {
			perm = 0o700
		}
		f, err := dst.OpenFile(e.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
		if err != nil {
			return st, osErr(e.Path, err)
		}
		f.Close()
		fi := len(files)
		files = append(files, e)
		var off int64
		for _, bi := range e.Blobs {
			if _, ok := targets[bi]; !ok {
				bl := m.Blobs[bi]
				byPack[bl.Pack] = append(byPack[bl.Pack], bl)
			}
			targets[bi] = append(targets[bi], target{fi, off})
			off += m.Blobs[bi].Size
		}
	}
	blobIx := make(map[string]int, len(targets))
	for bi := range targets {
		blobIx[m.Blobs[bi].ID] = bi
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		reads   atomic.Int64
		sem     = make(chan struct{}, c.opts.Parallel)
		pending = make([]int, len(files))
	)
	for fi, e := range files {
		pending[fi] = len(e.Blobs)
	}
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
			cancel()
		}
		mu.Unlock()
	}
	write := func(bl Blob, plain []byte) error {
		for _, t := range targets[blobIx[bl.ID]] {
			e := files[t.file]
			f, err := dst.OpenFile(e.Path, os.O_WRONLY, 0)
			if err != nil {
				return osErr(e.Path, err)
			}
			_, err = f.WriteAt(plain, t.off)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return osErr(e.Path, err)
			}
		}
		return nil
	}
	for pi, blobs := range byPack {
		st.Packs++
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			n, err := c.readBlobs(ctx, m.Packs[pi], blobs, func(bl Blob, _, plain []byte) error { return write(bl, plain) })
			reads.Add(int64(n))
			if err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	st.Reads = int(reads.Load())
	if first != nil {
		return st, first
	}
	for _, e := range files {
		mt := time.Unix(0, e.MTime)
		if err := dst.Chtimes(e.Path, mt, mt); err != nil {
			return st, osErr(e.Path, err)
		}
		st.Files++
		st.Bytes += e.Size
		if opts.Progress != nil {
			opts.Progress(st.Files, st.Bytes)
		}
	}
	return st, nil
}

// selectEntries returns the indexes of the entries paths choose (all when
// none), with the directories above them, in manifest order.
func selectEntries(m *Manifest, paths []string, lim zipsafe.Limits) ([]int, error) {
	if len(paths) == 0 {
		all := make([]int, len(m.Entries))
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	byPath := make(map[string]int, len(m.Entries))
	for i, e := range m.Entries {
		byPath[e.Path] = i
	}
	want := map[int]bool{}
	for _, p := range paths {
		p = path.Clean(p)
		if err := zipsafe.CheckName(p, lim); err != nil {
			return nil, err
		}
		i, ok := byPath[p]
		if !ok {
			return nil, errors.New("the snapshot holds no " + p)
		}
		want[i] = true
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			want[byPath[d]] = true
		}
		if m.Entries[i].Type == TypeDir {
			for j, e := range m.Entries {
				if len(e.Path) > len(p) && e.Path[:len(p)] == p && e.Path[len(p)] == '/' {
					want[j] = true
				}
			}
		}
	}
	var out []int
	for i := range m.Entries {
		if want[i] {
			out = append(out, i)
		}
	}
	return out, nil
}
