package workspace

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/agentstore/agentstore/internal/osutil"
)

// direntPool holds the memory of listings between calls: the getdents
// buffer (64 KiB lists a directory of about 2,000 short names in one
// system call; os.File.ReadDir takes 8 KiB at a time) and the names and
// records of the last listing, so that listing a large directory again
// allocates nothing but its result.
var direntPool = sync.Pool{New: func() any { return &dirents{buf: make([]byte, 64<<10)} }}

// maxPooledNames bounds the name buffer kept for reuse (a listing of
// about 60,000 short names); larger ones are left to the collector.
const maxPooledNames = 1 << 20

func getDirents() *dirents { return direntPool.Get().(*dirents) }

func putDirents(ds *dirents) {
	if cap(ds.names) > maxPooledNames || cap(ds.ents) > maxPooledNames/16 {
		return
	}
	ds.names, ds.ents = ds.names[:0], ds.ents[:0]
	direntPool.Put(ds)
}

// errBadDirent is a getdents record that does not fit its buffer.
var errBadDirent = errors.New("malformed directory entry")

// readEntries lists the open directory d with the entry types it reports,
// sorted by name (see dirents.read). The names share one string.
func readEntries(d *os.File) (ents []typedEntry, err error) {
	err = at(d, func(fd int) error { return withDirents(fd, d.Name(), func(ds *dirents) { ents = ds.entries() }) })
	return ents, err
}

// eachEntry calls fn for each entry of the open directory d as
// readEntries lists them, in name order; name is valid only during the
// call.
func eachEntry(d *os.File, fn func(name []byte, typ fs.FileMode)) error {
	return at(d, func(fd int) error { return withDirents(fd, d.Name(), func(ds *dirents) { ds.each(fn) }) })
}

// readEntriesAt is readEntries for the directory p (one path component)
// of the open directory top, opened with openDirAt; ok is false when it
// could not be opened so (a missing name, a link, not a directory, a
// path of several components): the caller opens it the general way,
// which reports why.
func readEntriesAt(top *os.File, p string) (ents []typedEntry, ok bool, err error) {
	ok, err = withDirAt(top, p, func(fd int) error { return withDirents(fd, p, func(ds *dirents) { ents = ds.entries() }) })
	return ents, ok, err
}

// eachEntryAt is eachEntry for the directory p of top, as readEntriesAt
// opens it.
func eachEntryAt(top *os.File, p string, fn func(name []byte, typ fs.FileMode)) (ok bool, err error) {
	return withDirAt(top, p, func(fd int) error { return withDirents(fd, p, func(ds *dirents) { ds.each(fn) }) })
}

// withDirents lists the directory open at fd (named name in errors) into
// pooled dirents and hands them to use, which must not keep them.
func withDirents(fd int, name string, use func(ds *dirents)) error {
	ds := getDirents()
	defer putDirents(ds)
	if err := ds.read(fd); err != nil {
		return pathErrorOf(err, name)
	}
	use(ds)
	return nil
}

// withDirAt runs fn on a descriptor of the directory p of top ("." for
// top itself, or one path component) opened by openDirAt, and closes it;
// ok is false, and fn did not run, when it could not be opened so.
func withDirAt(top *os.File, p string, fn func(fd int) error) (ok bool, err error) {
	fd, err := openDirAt(top, p)
	if err != nil {
		return false, nil
	}
	defer unix.Close(fd)
	return true, fn(fd)
}

// pathErrorOf names the directory in a listing's error; an *fs.PathError
// (of an entry) is returned as it is.
func pathErrorOf(err error, name string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: "readdirent", Path: name, Err: err}
}

// modeUnknown marks an entry whose type the directory did not report.
const modeUnknown = fs.ModeIrregular | fs.ModeTemporary

// dirents collects parsed getdents records: the names in one buffer.
type dirents struct {
	buf   []byte // for getdents
	names []byte
	ents  []direntRec
}

type direntRec struct {
	key uint64 // the sort key (see sort)
	off uint32 // of the name in names
	n   uint16 // the name's length
	typ fs.FileMode
}

// each calls fn for each entry, in the order of ds.ents; the name is
// valid only during the call.
func (ds *dirents) each(fn func(name []byte, typ fs.FileMode)) {
	for _, e := range ds.ents {
		fn(ds.name(e), e.typ)
	}
}

// name returns the name of e, in ds's buffer.
func (ds *dirents) name(e direntRec) []byte { return ds.names[e.off : e.off+uint32(e.n)] }

// read lists the directory open at fd (getdents into ds.buf until the
// end), types each entry whose type the file system does not report with
// an fstatat relative to fd (one removed meanwhile is left out) and sorts
// the entries by name. No path is resolved and no entry is Lstat'ed
// otherwise (a directory opened through an os.Root would Lstat each).
func (ds *dirents) read(fd int) error {
	if len(ds.buf) == 0 {
		ds.buf = make([]byte, 64<<10)
	}
	for {
		n, err := unix.Getdents(fd, ds.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			break
		}
		if err := ds.parse(ds.buf[:n]); err != nil {
			return err
		}
	}
	if err := ds.typeUnknown(fd); err != nil {
		return err
	}
	ds.sort()
	return nil
}

// sort sorts the entries by name, byte by byte. Each entry's key is the
// 8 bytes of its name after the prefix all the names share, big-endian
// and padded with zeros (a name holds no NUL, so a shorter name sorts
// first, as bytes.Compare has it): entries are compared by key, and by
// the whole name only where keys are equal. That is three times faster
// than comparing names on 1,000 names in hash order (ext4's).
func (ds *dirents) sort() {
	if len(ds.ents) < 2 {
		return
	}
	first := ds.name(ds.ents[0])
	common := len(first)
	for _, e := range ds.ents[1:] {
		name := ds.name(e)
		n := 0
		for n < common && n < len(name) && name[n] == first[n] {
			n++
		}
		if common = n; common == 0 {
			break
		}
	}
	for i := range ds.ents {
		var k [8]byte
		copy(k[:], ds.name(ds.ents[i])[common:])
		ds.ents[i].key = binary.BigEndian.Uint64(k[:])
	}
	slices.SortFunc(ds.ents, func(a, b direntRec) int {
		if a.key != b.key {
			return cmp.Compare(a.key, b.key)
		}
		return bytes.Compare(ds.name(a), ds.name(b))
	})
}

// typeUnknown types the entries of modeUnknown with an fstatat relative
// to the directory at fd; one removed meanwhile is left out.
func (ds *dirents) typeUnknown(fd int) error {
	gone := false
	for i := range ds.ents {
		e := &ds.ents[i]
		if e.typ != modeUnknown {
			continue
		}
		var st unix.Stat_t
		name := string(ds.name(*e))
		err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case err == unix.ENOENT:
			e.n, gone = 0, true // removed meanwhile: left out below
		case err != nil:
			return &fs.PathError{Op: "lstat", Path: name, Err: err}
		default:
			e.typ = osutil.ModeType(st.Mode)
		}
	}
	if gone {
		ds.ents = slices.DeleteFunc(ds.ents, func(e direntRec) bool { return e.n == 0 })
	}
	return nil
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
		if len(ds.names)+len(name) > math.MaxUint32 {
			return errBadDirent // 4 GiB of names: not a directory to list
		}
		ds.ents = append(ds.ents, direntRec{off: uint32(len(ds.names)), n: uint16(len(name)), typ: direntMode(typ)})
		ds.names = append(ds.names, name...)
	}
	return nil
}

// entries returns the records as entries whose names share one string.
func (ds *dirents) entries() []typedEntry {
	all := string(ds.names)
	out := make([]typedEntry, len(ds.ents))
	for i, e := range ds.ents {
		out[i] = typedEntry{name: all[e.off : e.off+uint32(e.n)], typ: e.typ}
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
