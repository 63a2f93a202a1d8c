package workspace

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
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
func EntryKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "char_device"
	case m&fs.ModeDevice != 0:
		return "device"
	default:
		return "other"
	}
}

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
	var sc treeScan
	h := sha256.New()
	var num [8]byte
	put := func(v uint64) {
		binary.BigEndian.PutUint64(num[:], v)
		h.Write(num[:])
	}
	err := walkTree(root, func(rel string, fi fs.FileInfo, _ *os.Root) error {
		h.Write([]byte(rel))
		h.Write([]byte{0})
		put(uint64(fi.Mode()))
		put(uint64(fi.Size()))
		put(osutil.Inode(fi))
		put(uint64(fi.ModTime().UnixNano()))
		put(uint64(osutil.ChangeTime(fi)))
		if mt := fi.ModTime(); mt.After(sc.Newest) {
			sc.Newest = mt
		}
		switch {
		case fi.Mode().IsRegular():
			sc.Files++
			sc.Bytes += fi.Size()
		case fi.IsDir():
			sc.Dirs++
		default:
			sc.Omitted = append(sc.Omitted, Omission{Path: rel, Kind: EntryKind(fi.Mode())})
		}
		return nil
	})
	sc.State = hex.EncodeToString(h.Sum(nil))
	return sc, err
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
