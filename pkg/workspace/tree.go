package workspace

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// Omission is an entry of a workspace that a snapshot cannot hold and
// left out: anything but a regular file or a directory. Symbolic links are
// refused, not stored (see docs/layout.md): a link restored elsewhere could
// point anywhere.
type Omission struct {
	// Path is the slash-separated path relative to the workspace.
	Path string `json:"path"`
	// Kind is what the entry is: EntryKind of its mode.
	Kind string `json:"kind"`
}

// EntryKind names the type of an entry for reports: "file", "directory",
// "symlink", "fifo", "socket", "device", "char_device" or "other".
func EntryKind(m fs.FileMode) string { return checkpoint.EntryKind(m) }

// treeScan is what one walk of a workspace tree found (the reserved names
// left out).
type treeScan struct {
	// State hashes every entry's path, type, permissions, size, inode,
	// modification and change time: equal states mean an untouched tree.
	State string
	// Files, Dirs and Bytes count what a snapshot holds.
	Files int
	Dirs  int
	Bytes int64
	// Omitted lists what a snapshot leaves out.
	Omitted []Omission
	// Newest is the newest modification time of any entry below the top.
	Newest time.Time
}

// scanTree walks the tree under root without following symbolic links or
// reading any file. Entries that vanish during the walk are skipped.
func scanTree(root *os.Root) (treeScan, error) {
	sc := newTreeScanner()
	err := walkTree(root, func(rel string, fi fs.FileInfo, _ *os.Root) error {
		sc.add(rel, fi)
		return nil
	})
	return sc.done(), err
}

// treeScanner accumulates a treeScan entry by entry, in the order
// walkTree visits them.
type treeScanner struct {
	sc  treeScan
	h   hash.Hash
	num [8]byte
}

func newTreeScanner() *treeScanner { return &treeScanner{h: sha256.New()} }

func (t *treeScanner) put(v uint64) {
	binary.BigEndian.PutUint64(t.num[:], v)
	t.h.Write(t.num[:])
}

// entryState is what a tree scan uses of one entry.
type entryState struct {
	rel          string // slash-separated, relative to the top
	mode         fs.FileMode
	size         int64
	ino          uint64
	mtime, ctime int64 // nanoseconds since the epoch
}

func stateOf(rel string, fi fs.FileInfo) entryState {
	return entryState{rel, fi.Mode(), fi.Size(), osutil.Inode(fi), fi.ModTime().UnixNano(), osutil.ChangeTime(fi)}
}

// add counts the entry rel and hashes what the tree state holds of it.
func (t *treeScanner) add(rel string, fi fs.FileInfo) { t.addState(stateOf(rel, fi)) }

func (t *treeScanner) addState(e entryState) {
	t.h.Write([]byte(e.rel))
	t.h.Write([]byte{0})
	t.put(uint64(e.mode))
	t.put(uint64(e.size))
	t.put(e.ino)
	t.put(uint64(e.mtime))
	t.put(uint64(e.ctime))
	sc := &t.sc
	if mt := time.Unix(0, e.mtime); mt.After(sc.Newest) {
		sc.Newest = mt
	}
	switch {
	case e.mode.IsRegular():
		sc.Files++
		sc.Bytes += e.size
	case e.mode.IsDir():
		sc.Dirs++
	default:
		sc.Omitted = append(sc.Omitted, Omission{Path: e.rel, Kind: EntryKind(e.mode)})
	}
}

// done returns the scan of the entries added.
func (t *treeScanner) done() treeScan {
	t.sc.State = hex.EncodeToString(t.h.Sum(nil))
	return t.sc
}

// madeTree collects the entries an extraction reports (in any order) and
// returns the scan a walk of the finished tree would give, without the
// walk. Entries are kept in fixed-size chunks and sorted by reference:
// a slice grown by append would copy them into ever larger allocations,
// each new memory to fault in (on the 20,000-file benchmark tree, a
// sixth of hydrate's page faults).
type madeTree struct {
	chunks [][]entryState // madeChunk entries each, the last one filling
	n      int
}

const madeChunk = 1024

// add records one entry; reserved names at the top, and everything
// below them, are left out as walkTree leaves them out.
func (m *madeTree) add(rel string, fi fs.FileInfo) {
	top, _, _ := strings.Cut(rel, "/")
	if IsReserved(top) {
		return
	}
	if k := len(m.chunks); k == 0 || len(m.chunks[k-1]) == madeChunk {
		m.chunks = append(m.chunks, make([]entryState, 0, madeChunk))
	}
	last := &m.chunks[len(m.chunks)-1]
	*last = append(*last, stateOf(rel, fi))
	m.n++
}

// scan sorts the entries into walkTree's order and scans them.
func (m *madeTree) scan() treeScan {
	order := make([]*entryState, 0, m.n)
	for _, c := range m.chunks {
		for i := range c {
			order = append(order, &c[i])
		}
	}
	slices.SortFunc(order, func(a, b *entryState) int { return compareTreePaths(a.rel, b.rel) })
	sc := newTreeScanner()
	for _, e := range order {
		sc.addState(*e)
	}
	return sc.done()
}

// compareTreePaths orders slash-separated paths as walkTree visits them:
// depth first, the names of one directory in byte order, a directory
// before what it holds. That is byte order with the separator below every
// byte a name can hold ("a/b" before "a-c", because "a" sorts before
// "a-c").
func compareTreePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		switch {
		case ca == cb:
			continue
		case ca == '/':
			return -1
		case cb == '/':
			return 1
		default:
			return cmp.Compare(ca, cb)
		}
	}
	return cmp.Compare(len(a), len(b))
}

// walkTree calls fn for every entry below root, depth first in lexical
// order, the reserved names at the top left out, with the directory that
// holds it; directories are entered after fn returns.
func walkTree(root *os.Root, fn func(rel string, fi fs.FileInfo, dir *os.Root) error) error {
	var walk func(dir *os.Root, rel string) error
	walk = func(dir *os.Root, rel string) error {
		d, err := dir.Open(".")
		if err != nil {
			return err
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return err
		}
		slices.Sort(names)
		for _, n := range names {
			p := path.Join(rel, n)
			if rel == "" {
				p = n
				if IsReserved(n) {
					continue
				}
			}
			fi, err := dir.Lstat(n)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if err := fn(p, fi, dir); err != nil {
				return err
			}
			if fi.IsDir() {
				sub, err := dir.OpenRoot(n)
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				if err != nil {
					return err
				}
				err = walk(sub, p)
				sub.Close()
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(root, "")
}
