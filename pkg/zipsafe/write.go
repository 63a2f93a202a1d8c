package zipsafe

import (
	"archive/zip"
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Compression levels for WriteOptions.Level besides the compress/flate levels.
const (
	// LevelDefault (the zero value) selects DefaultLevel.
	LevelDefault = 0
	// LevelStore stores entries without compression (method Store).
	LevelStore = -100
	// DefaultLevel is the Deflate level used when WriteOptions.Level is zero.
	// flate.BestSpeed is several times faster than level 6 (what `zip -r`
	// uses) for a modest loss of compression on typical source trees.
	DefaultLevel = flate.BestSpeed
)

// WriteOptions configures [Write].
type WriteOptions struct {
	// Limits caps the number of entries (files plus directories) and the
	// total number of file bytes read. MaxRatio is ignored.
	Limits Limits
	// Exclude, if set, is called with the slash-separated path relative to
	// the root of every entry of the tree (directories without a trailing
	// slash) and the entry as its directory lists it (Name and Type, the
	// type the directory reports; no Lstat is made for it, so Info may
	// fail); returning true leaves it (and, for a directory, everything
	// below it) out of the archive. Use it to omit reserved names, e.g.
	// func(rel string, _ fs.DirEntry) bool { return rel == ".index" }, or
	// entries a zip cannot hold (by d.Type()) instead of failing on them.
	Exclude func(rel string, d fs.DirEntry) bool
	// Level is the Deflate level: LevelDefault (0) for DefaultLevel, 1 to 9
	// or flate.DefaultCompression (-1) / flate.HuffmanOnly (-2) as in
	// compress/flate, or LevelStore for no compression. Whatever the
	// level, files that do not compress (by name: .png, .jpg, .zip, .gz,
	// .mp4, ...; or by a trial of their first bytes) are stored.
	Level int
	// Progress, if set, is called after each file is written with the
	// running number of files and file bytes. Calls come one at a time,
	// in archive order, from a goroutine Write starts.
	Progress func(files int, bytes int64)
}

// WriteStats reports what [Write] put in the archive.
type WriteStats struct {
	// Files is the number of regular files written.
	Files int
	// Dirs is the number of directory entries written.
	Dirs int
	// Bytes is the total uncompressed size of the files.
	Bytes int64
}

// Write writes the tree under root to w as a zip archive.
//
// Entries are written in lexical order, depth first; every directory gets an
// entry with a trailing slash so empty directories survive. Names are the
// slash-separated paths relative to root, UTF-8 (the UTF-8 flag is set for
// non-ASCII names). Each entry records its Unix permission bits (creator
// Unix), so the executable bit survives a round trip. Files are compressed
// with Deflate at opts.Level, except those that would not shrink, which are
// stored.
//
// Only regular files and directories are allowed: a symbolic link, device,
// FIFO, socket, a name that [Extract] would refuse, or a file that changes
// type while being read is an error naming its path. The tree is read
// through root, so nothing outside it is ever opened: a file is opened
// without following a symbolic link and its type and size taken from the
// open file, and each directory is checked to be the very object that was
// examined, so a concurrently swapped-in symbolic link is detected.
//
// Files of up to 2 MiB are read and compressed on every core at once (at
// most 16 MiB of them in memory at a time) and written in order; larger
// files stream through a 256 KiB buffer. Memory use therefore does not grow
// with the size of the tree or of its files, apart from the central
// directory (about 100 bytes per entry).
//
// The archive is streamed: w receives data as files are read. On error, the
// data already written to w is an incomplete archive and must be discarded.
func Write(w io.Writer, root *os.Root, opts WriteOptions) (WriteStats, error) {
	lim := opts.Limits.Resolved()
	level := opts.Level
	if level == LevelDefault {
		level = DefaultLevel
	}
	method := zip.Deflate
	if level == LevelStore {
		method = zip.Store
	} else if level < flate.HuffmanOnly || level > flate.BestCompression {
		return WriteStats{}, newErr(CodeIO, "", "invalid compression level %d", opts.Level)
	}

	bw := bufio.NewWriterSize(w, 256<<10)
	zw := zip.NewWriter(bw)
	if method == zip.Deflate {
		zw.RegisterCompressor(zip.Deflate, compressor(level))
	}
	p := newPacker(zw, lim, opts, method, level)
	t := &treeWriter{p: p, lim: lim, opts: opts, method: method}
	p.start()
	if err := t.walk(root, "", nil); err != nil && err != errStopped {
		p.fail(err)
	}
	stats, err := p.finish()
	if err != nil {
		return stats, err
	}
	if err := zw.Close(); err != nil {
		return stats, wrapErr(CodeIO, "", err)
	}
	return stats, nil
}

var flatePools [flate.BestCompression - flate.HuffmanOnly + 1]sync.Pool

// pooledFlate returns its flate.Writer to a pool on Close.
type pooledFlate struct {
	*flate.Writer
	pool *sync.Pool
}

func (p *pooledFlate) Close() error {
	err := p.Writer.Close()
	p.pool.Put(p.Writer)
	p.Writer = nil
	return err
}

// newFlate returns a flate.Writer at level writing to w, from a pool.
func newFlate(w io.Writer, level int) (*flate.Writer, *sync.Pool, error) {
	pool := &flatePools[level-flate.HuffmanOnly]
	if fw, ok := pool.Get().(*flate.Writer); ok {
		fw.Reset(w)
		return fw, pool, nil
	}
	fw, err := flate.NewWriter(w, level)
	return fw, pool, err
}

func compressor(level int) zip.Compressor {
	return func(w io.Writer) (io.WriteCloser, error) {
		fw, pool, err := newFlate(w, level)
		if err != nil {
			return nil, err
		}
		return &pooledFlate{fw, pool}, nil
	}
}

// treeWriter walks the tree in archive order and hands every entry to the
// packer. It runs on the caller's goroutine (so Exclude is called there).
type treeWriter struct {
	p       *packer
	lim     Limits
	opts    WriteOptions
	method  uint16
	entries int
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func describeType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	default:
		return fmt.Sprintf("file of type %v", m.Type())
	}
}

func (t *treeWriter) countEntry(rel string) error {
	if t.lim.MaxEntries > 0 && t.entries >= t.lim.MaxEntries {
		return newErr(CodeTooManyEntries, rel, "more than %d entries (Limits.MaxEntries)", t.lim.MaxEntries)
	}
	t.entries++
	return nil
}

// walk hands the entries below dir, whose path relative to the top is rel,
// to the packer. dirInfo is dir's own FileInfo as seen by Lstat in its
// parent (nil at top).
//
// Entries are typed as the directory lists them, without an Lstat each: a
// regular file is opened (without following a symbolic link or blocking
// on a FIFO) and its status taken from the open descriptor, so what is
// archived is what was examined; a directory is Lstat'ed and checked to be
// the directory then opened.
func (t *treeWriter) walk(dir *os.Root, rel string, dirInfo fs.FileInfo) error {
	d, err := dir.Open(".")
	if err != nil {
		return wrapErr(CodeIO, rel, err)
	}
	defer d.Close()
	if dirInfo != nil {
		st, err := d.Stat()
		if err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		if !os.SameFile(st, dirInfo) {
			return newErr(CodeUnsupportedFileType, rel, "directory was replaced while being read")
		}
	}
	ents, err := listDir(d)
	if err != nil {
		return wrapErr(CodeIO, rel, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	src := newSrcDir(dir, d)
	for _, de := range ents {
		name := de.Name()
		crel := joinRel(rel, name)
		if t.opts.Exclude != nil && t.opts.Exclude(crel, de) {
			continue
		}
		switch typ := de.Type(); {
		case typ.IsRegular():
			if err := t.file(src, name, crel); err != nil {
				return err
			}
		case typ.IsDir():
			fi, err := dir.Lstat(name)
			if err != nil {
				return wrapErr(CodeIO, crel, err)
			}
			if !fi.IsDir() {
				return newErr(CodeUnsupportedFileType, crel, "directory was replaced by a %s while being read", describeType(fi.Mode()))
			}
			if err := t.dir(dir, name, crel, fi); err != nil {
				return err
			}
		default:
			return newErr(CodeUnsupportedFileType, crel, "%s is not allowed in the tree", describeType(typ))
		}
	}
	return nil
}

func (t *treeWriter) dir(parent *os.Root, name, rel string, fi fs.FileInfo) error {
	if msg := checkName(rel+"/", t.lim.MaxDepth); msg != "" {
		return newErr(CodeUnsafePath, rel, "%s", msg)
	}
	if err := t.countEntry(rel); err != nil {
		return err
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return wrapErr(CodeIO, rel, err)
	}
	defer sub.Close()
	h := &zip.FileHeader{Name: rel + "/", Method: zip.Store, Modified: fi.ModTime()}
	h.SetMode(fs.ModeDir | fi.Mode().Perm())
	if err := t.p.send(&entry{kind: kindDir, rel: rel, hdr: h}); err != nil {
		return err
	}
	return t.walk(sub, rel, fi)
}

func (t *treeWriter) file(dir srcDir, name, rel string) error {
	if msg := checkName(rel, t.lim.MaxDepth); msg != "" {
		return newErr(CodeUnsafePath, rel, "%s", msg)
	}
	if err := t.countEntry(rel); err != nil {
		return err
	}
	f, st, err := dir.open(name)
	if isSymlinkErr(err) {
		return newErr(CodeUnsupportedFileType, rel, "file was replaced by a symbolic link while being read")
	}
	if err != nil {
		return wrapErr(CodeIO, rel, err)
	}
	if !st.regular {
		f.Close()
		return newErr(CodeUnsupportedFileType, rel, "file was replaced by a %s while being read", describeType(st.mode))
	}
	h := &zip.FileHeader{Name: rel, Method: t.method, Modified: st.mtime}
	h.SetMode(st.perm)
	e := &entry{kind: kindStream, rel: rel, hdr: h, f: f, size: st.size}
	if t.method == zip.Deflate && e.size <= bufferedMax {
		e.kind = kindBuffered
	}
	return t.p.send(e) // closes f on error
}

// onlyReader hides WriterTo/ReaderFrom so io.CopyBuffer uses our buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
