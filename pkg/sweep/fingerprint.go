package sweep

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// maxMarkerBytes bounds a tombstone marker read by the sweep.
const maxMarkerBytes = 64 << 10

// Fingerprint is a cheap summary of a workspace directory, taken at plan
// time and again at every step of a removal: a difference means the
// workspace was touched and must not be removed in this run.
type Fingerprint struct {
	// Dev and Ino identify the directory itself.
	Dev, Ino uint64
	// LastAccess is the index's last access.
	LastAccess time.Time
	// IndexIno, IndexSize and IndexMtime identify the index file; a
	// snapshot rewrites it (recording its version), so they are compared
	// only between steps where nothing of ours writes it.
	IndexIno   uint64
	IndexSize  int64
	IndexMtime int64
	// Files and Bytes count the regular files below the directory (the
	// index excluded, temporary files of writes in progress included),
	// and MaxMtime is the newest modification time of any entry below it.
	Files    int
	Bytes    int64
	MaxMtime time.Time
	// Tree hashes every entry below the directory (but the index and its
	// temporary files): path, type, permissions, size, inode, mtime and
	// ctime, so that a rename, a rewrite or a chmod changes it.
	Tree [32]byte
	// SnapFiles, SnapDirs and SnapBytes count what a snapshot of the
	// directory holds (everything but the index, see workspace.IsReserved),
	// and
	// SnapList hashes its sorted entry names and file sizes, as the zip's
	// central directory lists them.
	SnapFiles int
	SnapDirs  int
	SnapBytes int64
	SnapList  [32]byte
	// Content hashes the CRC-32 of every file a snapshot holds, by path
	// (the checksums a zip's central directory lists); zero unless the
	// fingerprint was taken with content. Timestamps are coarse (a few
	// milliseconds) and inode numbers are reused, so only the content
	// tells a rewrite of a file with the same size apart.
	Content [32]byte
	// Omitted lists the entries a snapshot cannot hold (symbolic links,
	// FIFOs, sockets, devices): a workspace with any is never removed on
	// the strength of a snapshot.
	Omitted []workspace.Omission
}

// LastUse is the later of the index's last access and the newest
// modification below the directory: files edited behind the manager's
// back count as use.
func (f Fingerprint) LastUse() time.Time {
	if f.MaxMtime.After(f.LastAccess) {
		return f.MaxMtime
	}
	return f.LastAccess
}

// SameContent reports whether two fingerprints show the same last access
// and the same tree.
func (f Fingerprint) SameContent(g Fingerprint) bool {
	return f.LastAccess.Equal(g.LastAccess) && f.Files == g.Files && f.Bytes == g.Bytes &&
		f.MaxMtime.Equal(g.MaxMtime) && f.Tree == g.Tree && f.SnapList == g.SnapList &&
		(f.Content == [32]byte{} || g.Content == [32]byte{} || f.Content == g.Content)
}

// Same reports whether two fingerprints are identical: same directory,
// same index file, same tree.
func (f Fingerprint) Same(g Fingerprint) bool {
	return f.SameContent(g) && f.Dev == g.Dev && f.Ino == g.Ino &&
		f.IndexIno == g.IndexIno && f.IndexSize == g.IndexSize && f.IndexMtime == g.IndexMtime
}

// Hex returns a short hex digest of the whole fingerprint but the
// directory's identity, as plans record it.
func (f Fingerprint) Hex() string {
	h := sha256.New()
	var b [8]byte
	put := func(v uint64) {
		binary.BigEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	put(uint64(f.LastAccess.UnixNano()))
	put(uint64(f.Files))
	put(uint64(f.Bytes))
	put(uint64(f.MaxMtime.UnixNano()))
	h.Write(f.Tree[:])
	h.Write(f.SnapList[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// describeChange says how g differs from f, for a skip reason.
func describeChange(f, g Fingerprint) string {
	var parts []string
	if !f.LastAccess.Equal(g.LastAccess) {
		parts = append(parts, fmt.Sprintf("last access %s -> %s", f.LastAccess.UTC().Format(time.RFC3339Nano), g.LastAccess.UTC().Format(time.RFC3339Nano)))
	}
	if f.Files != g.Files || f.Bytes != g.Bytes {
		parts = append(parts, fmt.Sprintf("%d files/%d bytes -> %d files/%d bytes", f.Files, f.Bytes, g.Files, g.Bytes))
	}
	if !f.MaxMtime.Equal(g.MaxMtime) {
		parts = append(parts, "newest modification time changed")
	}
	if len(parts) == 0 && (f.Tree != g.Tree || f.SnapList != g.SnapList || f.Content != g.Content) {
		parts = append(parts, "entries renamed, replaced or changed")
	}
	if len(parts) == 0 && (f.Dev != g.Dev || f.Ino != g.Ino) {
		parts = append(parts, "directory replaced")
	}
	if len(parts) == 0 {
		parts = append(parts, "index rewritten")
	}
	return strings.Join(parts, ", ")
}

// snapEntry is one entry a snapshot archive lists.
type snapEntry struct {
	name string // slash path; directories end in "/"
	size int64
	crc  uint32 // of a file's content, when read
}

func hashSnapList(es []snapEntry) [32]byte {
	slices.SortFunc(es, func(a, b snapEntry) int { return strings.Compare(a.name, b.name) })
	h := sha256.New()
	var b [8]byte
	for _, e := range es {
		h.Write([]byte(e.name))
		h.Write([]byte{0})
		binary.BigEndian.PutUint64(b[:], uint64(e.size))
		h.Write(b[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// hashContent hashes the CRC-32 of every file of es (sorted by hashSnapList).
func hashContent(es []snapEntry) [32]byte {
	h := sha256.New()
	var b [4]byte
	for _, e := range es {
		if strings.HasSuffix(e.name, "/") {
			continue
		}
		h.Write([]byte(e.name))
		h.Write([]byte{0})
		binary.BigEndian.PutUint32(b[:], e.crc)
		h.Write(b[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// fingerprint measures the workspace directory open as root, whose index
// must hash to dir; with content it also reads every file a snapshot would
// hold. Symbolic links are never followed.
func fingerprint(root *os.Root, dir string, content bool) (Fingerprint, error) {
	var fp Fingerprint
	top, err := root.Stat(".")
	if err != nil {
		return fp, err
	}
	fp.Dev, fp.Ino = osutil.Device(top), osutil.Inode(top)
	ix, ifi, err := workspace.ReadIndex(root, dir)
	if err != nil {
		return fp, fmt.Errorf("index: %w", err)
	}
	fp.LastAccess = ix.LastAccess
	fp.IndexIno, fp.IndexSize, fp.IndexMtime = osutil.Inode(ifi), ifi.Size(), ifi.ModTime().UnixNano()

	tree := sha256.New()
	var snap []snapEntry
	var buf []byte
	if content {
		buf = make([]byte, 64<<10)
	}
	var num [8]byte
	put := func(v uint64) {
		binary.BigEndian.PutUint64(num[:], v)
		tree.Write(num[:])
	}
	var walk func(d *os.Root, rel string) error
	walk = func(d *os.Root, rel string) error {
		f, err := d.Open(".")
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		slices.Sort(names)
		for _, n := range names {
			if rel == "" && workspace.IsReserved(n) {
				continue // the index and its temporary files
			}
			fi, err := d.Lstat(n)
			if errors.Is(err, fs.ErrNotExist) {
				// Removed between the listing and the Lstat: a change.
				tree.Write([]byte("\x00gone\x00" + n))
				continue
			}
			if err != nil {
				return err
			}
			p := n
			if rel != "" {
				p = rel + "/" + n
			}
			tree.Write([]byte(p))
			tree.Write([]byte{0})
			put(uint64(fi.Mode()))
			put(uint64(fi.Size()))
			put(osutil.Inode(fi))
			put(uint64(fi.ModTime().UnixNano()))
			put(uint64(osutil.ChangeTime(fi)))
			if mt := fi.ModTime(); mt.After(fp.MaxMtime) {
				fp.MaxMtime = mt
			}
			switch {
			case fi.Mode().IsRegular():
				fp.Files++
				fp.Bytes += fi.Size()
				fp.SnapFiles++
				fp.SnapBytes += fi.Size()
				e := snapEntry{name: p, size: fi.Size()}
				if content {
					if e.crc, err = osutil.FileCRC(d, n, fi, buf); err != nil {
						return err
					}
				}
				snap = append(snap, e)
			case fi.IsDir():
				fp.SnapDirs++
				snap = append(snap, snapEntry{name: p + "/"})
				sub, err := d.OpenRoot(n)
				if err != nil {
					return err
				}
				err = walk(sub, p)
				sub.Close()
				if err != nil {
					return err
				}
			default:
				fp.Omitted = append(fp.Omitted, workspace.Omission{Path: p, Kind: workspace.EntryKind(fi.Mode())})
			}
		}
		return nil
	}
	if err := walk(root, ""); err != nil {
		return fp, err
	}
	tree.Sum(fp.Tree[:0])
	fp.SnapList = hashSnapList(snap)
	if content {
		fp.Content = hashContent(snap)
	}
	return fp, nil
}
