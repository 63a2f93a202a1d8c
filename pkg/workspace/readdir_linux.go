package workspace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentstore/agentstore/internal/osutil"
)

// direntBufs holds the getdents buffers: 64 KiB lists a directory of
// about 2,000 short names in one system call (os.File.ReadDir takes 8 KiB
// at a time).
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// errBadDirent is a getdents record that does not fit its buffer.
var errBadDirent = errors.New("malformed directory entry")

// readEntries lists the open directory d with the entry types it reports,
// reading its descriptor with getdents directly: no Lstat per entry (a
// directory opened through an os.Root would make one), no path is
// resolved, and an entry whose type the file system does not report is
// typed with an fstatat relative to d (one removed meanwhile is left
// out). The names share one string.
func readEntries(d *os.File) ([]typedEntry, error) {
	rc, err := d.SyscallConn()
	if err != nil {
		return nil, err
	}
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	var ds dirents
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			n, err := unix.Getdents(int(fd), *bp)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				rerr = err
				return
			}
			if n <= 0 {
				return
			}
			if err := ds.parse((*bp)[:n]); err != nil {
				rerr = err
				return
			}
		}
	}); err != nil {
		return nil, err
	}
	if rerr != nil {
		return nil, &fs.PathError{Op: "readdirent", Path: d.Name(), Err: rerr}
	}
	return typeUnknown(rc, ds.entries())
}

// typeUnknown types the entries of modeUnknown with an fstatat relative
// to the directory of rc; one removed meanwhile is left out.
func typeUnknown(rc syscall.RawConn, ents []typedEntry) ([]typedEntry, error) {
	var serr error
	for i := range ents {
		if ents[i].typ != modeUnknown {
			continue
		}
		var st unix.Stat_t
		if err := rc.Control(func(fd uintptr) { serr = unix.Fstatat(int(fd), ents[i].name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
			return nil, err
		}
		switch {
		case serr == unix.ENOENT:
			ents[i].name = "" // removed meanwhile: left out below
		case serr != nil:
			return nil, &fs.PathError{Op: "lstat", Path: ents[i].name, Err: serr}
		default:
			ents[i].typ = osutil.ModeType(st.Mode)
		}
	}
	return slices.DeleteFunc(ents, func(e typedEntry) bool { return e.name == "" }), nil
}

// modeUnknown marks an entry whose type the directory did not report.
const modeUnknown = fs.ModeIrregular | fs.ModeTemporary

// dirents collects parsed getdents records: the names in one buffer.
type dirents struct {
	names []byte
	ents  []direntRec
}

type direntRec struct {
	off, end int // of the name in names
	typ      fs.FileMode
}

// parse adds the records of one getdents buffer (struct linux_dirent64:
// inode u64, offset s64, record length u16, type u8, NUL-terminated
// name), leaving out ".", ".." and deleted records (inode 0).
func (ds *dirents) parse(b []byte) error {
	// A record is at least 24 bytes (a 19-byte header, the name and its
	// NUL, aligned to 8): room for the records of b at once, and for
	// their names, which are at most half of b past the first few.
	ds.ents = slices.Grow(ds.ents, len(b)/24)
	ds.names = slices.Grow(ds.names, len(b)/2)
	for len(b) > 0 {
		if len(b) < 19 {
			return errBadDirent
		}
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < 19 || reclen > len(b) {
			return errBadDirent
		}
		ino, typ, name := binary.NativeEndian.Uint64(b[0:8]), b[18], b[19:reclen]
		b = b[reclen:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if ino == 0 || len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		ds.ents = append(ds.ents, direntRec{off: len(ds.names), end: len(ds.names) + len(name), typ: direntMode(typ)})
		ds.names = append(ds.names, name...)
	}
	return nil
}

// entries returns the records as entries whose names share one string.
func (ds *dirents) entries() []typedEntry {
	all := string(ds.names)
	out := make([]typedEntry, len(ds.ents))
	for i, e := range ds.ents {
		out[i] = typedEntry{name: all[e.off:e.end], typ: e.typ}
	}
	return out
}

// direntMode is the fs.FileMode of a getdents type (on Linux the type
// bits of a stat mode shifted right by 12), modeUnknown for DT_UNKNOWN and
// anything else.
func direntMode(typ byte) fs.FileMode {
	m := osutil.ModeType(uint32(typ) << 12)
	if typ == unix.DT_UNKNOWN || m == fs.ModeIrregular {
		return modeUnknown
	}
	return m
}
