package zipsafe

import (
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/flate"

	"github.com/agentstore/agentstore/internal/osutil"
)

// ExtractOptions configures [Extract] and [ExtractFile].
type ExtractOptions struct {
	// Limits bounds the archive; zero fields select DefaultLimits.
	Limits Limits
	// Keep lists top-level names (single path components, e.g. ".index")
	// that survive extraction: if the old target has such a name, it is
	// copied (regular files, directories and symbolic links, without
	// following links) from the old target into the new tree before the
	// swap, and archive entries at or below a kept name are validated but
	// never extracted, so an archive cannot forge them.
	Keep []string
	// Progress, if set, is called after each file is extracted with the
	// running number of files and bytes. Files are extracted by several
	// goroutines; calls come one at a time.
	Progress func(files int, bytes int64)
	// Made, if set, is called once for every file and directory Extract
	// creates (name slash-separated, without a trailing slash) with its
	// information as it stands in the new tree once every entry is
	// extracted: a file's as soon as it is written (taken from its open
	// descriptor; nothing changes it afterwards), a directory's after the
	// last file. Calls come one at a time, files first, in no particular
	// order. They are made before the kept names are copied and the tree
	// is swapped in, so a failed Extract may have made some: the caller
	// uses them only when Extract succeeds. Renaming the new tree into
	// place changes none of them (only the top directory, which is not
	// reported). It costs one fstat per file and one lstat per directory,
	// instead of a walk of the finished tree.
	Made func(name string, fi fs.FileInfo)
}

// ExtractStats reports what [Extract] created.
type ExtractStats struct {
	// Files is the number of regular files extracted.
	Files int
	// Dirs is the number of directories created (explicit or implied by a
	// file's path).
	Dirs int
	// Bytes is the total number of bytes written.
	Bytes int64
}

// ExtractFile opens the zip archive at zipPath and calls [Extract].
func ExtractFile(zipPath, target string, opts ExtractOptions) (ExtractStats, error) {
	f, err := os.Open(zipPath)
	if err != nil {
		return ExtractStats{}, wrapErr(CodeIO, "", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ExtractStats{}, wrapErr(CodeIO, "", err)
	}
	if !st.Mode().IsRegular() {
		return ExtractStats{}, newErr(CodeIO, "", "%s is not a regular file", zipPath)
	}
	return Extract(f, st.Size(), target, opts)
}

// Extract extracts the zip archive of the given size read from r into the
// directory target, all or nothing.
//
// The whole archive is validated before anything is written; see the
// package documentation and the Code constants for what is refused. The
// entries are then extracted into a new temporary directory created next to
// target (".<target>.zipsafe-new-*"), through an [os.Root], counting the
// bytes actually produced and checking each CRC-32. When that succeeded, the
// kept names (opts.Keep) are copied over from the old target, the old target
// (if any) is renamed aside, the new tree is renamed to target and the old
// tree is removed. If the final rename fails, the old target is renamed back.
//
// On error the target is as before and the temporary directory is removed.
// If target exists, it must be a directory (not a symbolic link). Its parent
// directory must exist. Concurrent modification of target by others during
// Extract is not supported.
func Extract(r io.ReaderAt, size int64, target string, opts ExtractOptions) (ExtractStats, error) {
	lim := opts.Limits.Resolved()
	keep, err := keepSet(opts.Keep)
	if err != nil {
		return ExtractStats{}, err
	}
	if size < 0 {
		return ExtractStats{}, newErr(CodeCorruptArchive, "", "negative archive size")
	}
	zr, err := zip.NewReader(newWindowReader(r, size), size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return ExtractStats{}, wrapErr(CodeCorruptArchive, "", err)
	}
	plan, err := validate(zr, size, lim, keep)
	if err != nil {
		return ExtractStats{}, err
	}

	var stats ExtractStats
	err = install(target, keep, func(root *os.Root) error {
		x := &extractor{
			root:     root,
			archive:  r,
			size:     size,
			lim:      lim,
			made:     make(map[string]bool),
			progress: opts.Progress,
			onMade:   opts.Made,
		}
		err := x.run(plan)
		stats = x.stats
		return err
	})
	if err != nil {
		return ExtractStats{}, err
	}
	return stats, nil
}

// Install makes a directory tree appear at target all or nothing, as
// Extract does: fill writes the tree into a fresh temporary directory
// next to target (".<target>.zipsafe-new-*"), through an [os.Root]; the
// keep names (single path components) are copied from the old target,
// if any, as Extract's Keep; only when all of it succeeded is the
// temporary directory renamed into place (the old target moved aside to
// ".<target>.zipsafe-old-*" and removed). On any error target is left as
// it was and the temporary directory is removed. An error of fill is
// returned as it is; others are [*Error] values of code [CodeIO] or
// [CodeUnsafePath] (a bad keep name).
func Install(target string, keep []string, fill func(root *os.Root) error) error {
	k, err := keepSet(keep)
	if err != nil {
		return err
	}
	return install(target, k, fill)
}

// keepSet checks the Keep names: single path components.
func keepSet(keep []string) (map[string]bool, error) {
	k := make(map[string]bool, len(keep))
	for _, name := range keep {
		if msg := checkName(name, 1); msg != "" || strings.Contains(name, "/") {
			if msg == "" {
				msg = "not a single path component"
			}
			return nil, newErr(CodeUnsafePath, name, "invalid Keep name: %s", msg)
		}
		k[name] = true
	}
	return k, nil
}

func install(target string, keep map[string]bool, fill func(root *os.Root) error) error {
	absTarget, err := filepath.Abs(target)
	if err != nil {
		return wrapErr(CodeIO, "", err)
	}
	parent, base := filepath.Dir(absTarget), filepath.Base(absTarget)
	if base == string(filepath.Separator) || base == "." || base == ".." {
		return newErr(CodeIO, "", "invalid target %q", target)
	}
	oldExists := false
	if fi, err := os.Lstat(absTarget); err == nil {
		if !fi.IsDir() {
			return newErr(CodeIO, "", "target %s exists and is not a directory", absTarget)
		}
		oldExists = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return wrapErr(CodeIO, "", err)
	}

	prefix := base
	if len(prefix) > 64 {
		prefix = prefix[:64]
	}
	tmp, err := os.MkdirTemp(parent, "."+prefix+".zipsafe-new-*")
	if err != nil {
		return wrapErr(CodeIO, "", err)
	}
	committed := false
	defer func() {
		if !committed {
			removeAll(tmp)
		}
	}()
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return wrapErr(CodeIO, "", err)
	}
	err = fill(root)
	if err == nil && oldExists && len(keep) > 0 {
		err = copyKept(absTarget, root, keep)
	}
	root.Close()
	if err != nil {
		return err
	}

	if !oldExists {
		if err := os.Rename(tmp, absTarget); err != nil {
			return wrapErr(CodeIO, "", err)
		}
		committed = true
		return nil
	}
	aside, err := os.MkdirTemp(parent, "."+prefix+".zipsafe-old-*")
	if err != nil {
		return wrapErr(CodeIO, "", err)
	}
	// Renaming a directory over an empty directory replaces it atomically
	// (os.Rename refuses to, hence syscall.Rename).
	if err := osutil.Rename(absTarget, aside); err != nil {
		os.Remove(aside)
		return wrapErr(CodeIO, "", &os.LinkError{Op: "rename", Old: absTarget, New: aside, Err: err})
	}
	if err := os.Rename(tmp, absTarget); err != nil {
		if rerr := os.Rename(aside, absTarget); rerr != nil {
			return newErr(CodeIO, "", "%v; restoring the old target from %s failed: %v", err, aside, rerr)
		}
		return wrapErr(CodeIO, "", err)
	}
	committed = true
	removeAll(aside) // best effort: the new tree is in place
	return nil
}

type planned struct {
	f    *zip.File
	off  int64 // of the entry's data in the archive
	dir  bool
	exec bool
}

const (
	seenFile = iota + 1
	seenDir
	seenImplied
)

// entryType decodes the entry type from the external attributes.
func entryType(f *zip.File) (isDir, exec bool, msg string) {
	trailing := strings.HasSuffix(f.Name, "/")
	isDir = trailing || f.ExternalAttrs&0x10 != 0 // MS-DOS directory attribute
	switch f.CreatorVersion >> 8 {
	case 3, 19: // Unix, macOS
		mode := f.ExternalAttrs >> 16
		switch mode & 0o170000 {
		case 0, 0o100000: // no type (e.g. Erlang's zip module) or regular
			if mode&0o170000 == 0o100000 {
				isDir = trailing
			}
		case 0o040000:
			isDir = true
		case 0o120000:
			return false, false, "symbolic link entries are not allowed"
		case 0o020000:
			return false, false, "character device entries are not allowed"
		case 0o060000:
			return false, false, "block device entries are not allowed"
		case 0o010000:
			return false, false, "FIFO entries are not allowed"
		case 0o140000:
			return false, false, "socket entries are not allowed"
		default:
			return false, false, fmt.Sprintf("entries of file type %#o are not allowed", mode&0o170000)
		}
		exec = !isDir && mode&0o111 != 0
	}
	return isDir, exec, ""
}

// validate checks the whole archive before anything is written and returns
// the entries to extract, in central directory order.
func validate(zr *zip.Reader, size int64, lim Limits, keep map[string]bool) ([]planned, error) {
	files := zr.File
	if lim.MaxEntries > 0 && len(files) > lim.MaxEntries {
		return nil, newErr(CodeTooManyEntries, files[lim.MaxEntries].Name, "archive has %d entries, more than %d (Limits.MaxEntries)", len(files), lim.MaxEntries)
	}
	type span struct {
		start, end int64
		name       string
	}
	spans := make([]span, 0, len(files))
	seen := make(map[string]uint8, len(files))
	plan := make([]planned, 0, len(files))
	var total uint64
	for _, f := range files {
		name := f.Name
		if msg := checkName(name, lim.MaxDepth); msg != "" {
			return nil, newErr(CodeUnsafePath, name, "%s", msg)
		}
		if f.Flags&0x41 != 0 {
			return nil, newErr(CodeEncryptedEntry, name, "encrypted entries are not supported")
		}
		if f.Method != zip.Store && f.Method != zip.Deflate {
			return nil, newErr(CodeUnsupportedCompression, name, "compression method %d is not supported (only Store and Deflate)", f.Method)
		}
		isDir, exec, msg := entryType(f)
		if msg != "" {
			return nil, newErr(CodeUnsupportedEntryType, name, "%s", msg)
		}
		key := strings.TrimSuffix(name, "/")
		for i := 0; i < len(key); i++ {
			if key[i] != '/' {
				continue
			}
			switch seen[key[:i]] {
			case seenFile:
				return nil, newErr(CodeDuplicateEntry, name, "%q is also a file", key[:i])
			case 0:
				seen[key[:i]] = seenImplied
			}
		}
		switch seen[key] {
		case seenFile, seenDir:
			return nil, newErr(CodeDuplicateEntry, name, "duplicate entry for %q", key)
		case seenImplied:
			if !isDir {
				return nil, newErr(CodeDuplicateEntry, name, "%q is also a directory", key)
			}
		}
		if isDir {
			seen[key] = seenDir
		} else {
			seen[key] = seenFile
		}
		usize, csize := f.UncompressedSize64, f.CompressedSize64
		if isDir && usize != 0 {
			return nil, newErr(CodeCorruptArchive, name, "directory entry has %d bytes of data", usize)
		}
		if f.Method == zip.Store && csize != usize {
			return nil, newErr(CodeSizeMismatch, name, "stored entry has compressed size %d but uncompressed size %d", csize, usize)
		}
		if lim.MaxBytes > 0 {
			total += min(usize, 1<<62)
			if total > uint64(lim.MaxBytes) {
				return nil, newErr(CodeTooLarge, name, "archive declares more than %d bytes (Limits.MaxBytes)", lim.MaxBytes)
			}
		}
		if lim.MaxRatio > 0 && usize > RatioFloor && usize/max(csize, 1) > uint64(lim.MaxRatio) {
			return nil, newErr(CodeRatioExceeded, name, "declared compression ratio %d exceeds %d (Limits.MaxRatio)", usize/max(csize, 1), lim.MaxRatio)
		}
		off, err := f.DataOffset()
		if err != nil {
			return nil, wrapErr(CodeCorruptArchive, name, err)
		}
		if csize > uint64(size) || off < 30 || off > size-int64(csize) {
			return nil, newErr(CodeCorruptArchive, name, "entry data extends past the end of the archive (truncated?)")
		}
		// The 30 bytes before the data belong to the entry's own local
		// header, so two entries sharing a local header also overlap.
		spans = append(spans, span{off - 30, off + int64(csize), name})
		if top, _, _ := strings.Cut(key, "/"); keep[top] {
			continue
		}
		plan = append(plan, planned{f: f, off: off, dir: isDir, exec: exec})
	}
	slices.SortFunc(spans, func(a, b span) int {
		return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
	})
	var maxEnd int64
	var maxName string
	for i, s := range spans {
		if i > 0 && s.start < maxEnd {
			return nil, newErr(CodeOverlappingEntries, s.name, "entry data overlaps entry %q", maxName)
		}
		if s.end > maxEnd {
			maxEnd, maxName = s.end, s.name
		}
	}
	return plan, nil
}

// extractor writes the planned entries into root: the directories first,
// in order, then the files with one worker per core (at most maxWorkers).
type extractor struct {
	root     *os.Root
	archive  io.ReaderAt
	size     int64
	lim      Limits
	made     map[string]bool
	progress func(int, int64)
	onMade   func(string, fs.FileInfo)

	mu    sync.Mutex // guards stats after the directories are made
	stats ExtractStats
	bytes atomic.Int64 // file bytes written so far, by all workers
}

// maxWorkers bounds the files extracted at once.
const maxWorkers = 4

// smallEntries is the mean compressed entry size below which one worker
// extracts the files: creating a file and inflating a few kilobytes into
// it is then the work, and a second worker costs more CPU time than it
// saves wall time (hand-offs of the processor on every file creation,
// contention; measured in docs/performance.md). Tests of parallel
// extraction set it to 0.
var smallEntries uint64 = 64 << 10

// extractWorkers returns how many workers extract files, with procs
// processors to run on: one for entries of a mean compressed size under
// small, else one per processor, at most maxWorkers and one per file.
func extractWorkers(files []planned, procs int, small uint64) int {
	if len(files) == 0 {
		return 1
	}
	var packed uint64
	for _, p := range files {
		packed += p.f.CompressedSize64
	}
	if packed/uint64(len(files)) < small {
		return 1
	}
	return max(1, min(procs, maxWorkers, len(files)))
}

// fileWriter is a file of the new tree being written.
type fileWriter interface {
	io.Writer
	Close() error
	Stat() (fs.FileInfo, error)
}

func (x *extractor) run(plan []planned) error {
	if err := x.extract(plan); err != nil {
		return err
	}
	return x.reportDirs()
}

// reportDirs reports every directory made to onMade, now that all the
// files are in them.
func (x *extractor) reportDirs() error {
	if x.onMade == nil {
		return nil
	}
	for dir := range x.made {
		fi, err := x.root.Lstat(dir)
		if err != nil {
			return wrapErr(CodeIO, dir+"/", err)
		}
		x.onMade(dir, fi)
	}
	return nil
}

// extract makes the directories, then the files.
func (x *extractor) extract(plan []planned) error {
	files := plan[:0] // the files, in place: plan is not used after
	for _, p := range plan {
		key := strings.TrimSuffix(p.f.Name, "/")
		if !p.dir {
			files = append(files, p)
			key = key[:max(strings.LastIndexByte(key, '/'), 0)]
		}
		if err := x.mkdirs(key); err != nil {
			return wrapErr(CodeIO, p.f.Name, err)
		}
	}
	workers := extractWorkers(files, runtime.GOMAXPROCS(0), smallEntries)
	if workers <= 1 {
		w := x.newWorker()
		defer w.close()
		for _, p := range files {
			if err := w.file(p); err != nil {
				return err
			}
		}
		return nil
	}
	// Entries are handed out in order, in runs of files of one directory
	// (see fileRuns); after the first failure no more are, and the failure
	// of the earliest entry is reported: the one a sequential extraction
	// would have met first.
	runs := fileRuns(files)
	var (
		next  atomic.Int64
		mu    sync.Mutex
		first = len(files) // index of the earliest failure
		fail  error
		stop  atomic.Int64 // == first, read without the lock
		wg    sync.WaitGroup
	)
	stop.Store(int64(len(files)))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := x.newWorker()
			defer w.close()
			for {
				r := int(next.Add(1) - 1)
				if r >= len(runs) {
					return
				}
				for i := runs[r].start; i < runs[r].end; i++ {
					if int64(i) >= stop.Load() {
						return
					}
					if err := w.file(files[i]); err != nil {
						mu.Lock()
						if i < first {
							first, fail = i, err
							stop.Store(int64(i))
						}
						mu.Unlock()
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	return fail
}

// A run is at most runFiles files or runBytes compressed bytes.
const (
	runFiles = 64
	runBytes = 256 << 10
)

// fileRun is a run of files[start:end] in one directory.
type fileRun struct{ start, end int }

// fileRuns cuts files into runs of consecutive files of one directory
// for the workers: each worker then creates files in a directory of its
// own most of the time (creations in one directory take turns on its
// lock in the kernel) and keeps that directory open, and a hand-off
// serves several small files. A run ends at runFiles files or runBytes of
// compressed data, so large entries are still handed out one by one.
func fileRuns(files []planned) []fileRun {
	var runs []fileRun
	start, bytes := 0, uint64(0)
	dirOf := func(p planned) string {
		return p.f.Name[:max(strings.LastIndexByte(p.f.Name, '/'), 0)]
	}
	for i, p := range files {
		if i > start && (i-start >= runFiles || bytes >= runBytes || dirOf(p) != dirOf(files[start])) {
			runs = append(runs, fileRun{start, i})
			start, bytes = i, 0
		}
		bytes += p.f.CompressedSize64
	}
	if start < len(files) {
		runs = append(runs, fileRun{start, len(files)})
	}
	return runs
}

// mkdirs creates dir and its missing parents inside the root.
func (x *extractor) mkdirs(dir string) error {
	if dir == "" || x.made[dir] {
		return nil
	}
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		if err := x.mkdirs(dir[:i]); err != nil {
			return err
		}
	}
	if err := x.root.Mkdir(dir, 0o700); err != nil {
		return err
	}
	x.made[dir] = true
	x.stats.Dirs++
	return nil
}

// worker extracts files with buffers, an inflater, a window on the
// archive and an open directory of its own.
type worker struct {
	x    *extractor
	dirs dirCache
	win  *windowReader
	br   *bufio.Reader // over the archive, for entries larger than the window
	bsr  bytes.Reader  // over the window, for the others
	fr   io.ReadCloser
	inf  inflater
	out  entryWriter
}

func (x *extractor) newWorker() *worker {
	return &worker{
		x:    x,
		dirs: dirCache{root: x.root},
		win:  newWindowReader(x.archive, x.size),
	}
}

func (w *worker) close() { w.dirs.close() }

func (w *worker) file(p planned) error {
	name := p.f.Name
	dir, base := "", name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		dir, base = name[:i], name[i+1:]
	}
	perm := os.FileMode(0o600)
	if p.exec {
		perm = 0o700
	}
	out, err := w.dirs.create(dir, base, name, perm)
	if err != nil {
		return wrapErr(CodeIO, name, err)
	}
	err = w.copyData(p, out)
	x := w.x
	var fi fs.FileInfo
	if err == nil && x.onMade != nil {
		if fi, err = out.Stat(); err != nil {
			err = wrapErr(CodeIO, name, err)
		}
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = wrapErr(CodeIO, name, cerr)
	}
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stats.Files++
	x.stats.Bytes += int64(p.f.UncompressedSize64)
	if x.onMade != nil {
		x.onMade(name, fi)
	}
	if x.progress != nil {
		x.progress(x.stats.Files, x.stats.Bytes)
	}
	return nil
}

// copyData writes the entry's data to out through the checks of
// entryWriter. Compressed data that fits in the worker's window on the
// archive (most entries: one read of the archive serves many) is read in
// place and inflated by the in-memory inflater; larger entries are read
// through a buffer and inflated by klauspost's streaming inflater, which
// writes straight from its history window (WriteTo).
func (w *worker) copyData(p planned, out io.Writer) error {
	f := p.f
	name := f.Name
	csize := int64(f.CompressedSize64)
	ew := &w.out
	*ew = entryWriter{x: w.x, name: name, declared: f.UncompressedSize64, csize: max(f.CompressedSize64, 1), out: out}
	data, inWindow, err := w.win.slice(p.off, csize)
	if err != nil {
		return newErr(CodeIO, name, "reading entry data: %w", err)
	}
	var src flate.Reader
	if inWindow {
		w.bsr.Reset(data)
		src = &w.bsr
	} else {
		if w.br == nil {
			w.br = bufio.NewReaderSize(nil, 256<<10)
		}
		w.br.Reset(io.NewSectionReader(w.x.archive, p.off, csize))
		src = w.br
	}
	switch {
	case f.Method == zip.Deflate && inWindow:
		err = w.inf.decode(data, ew)
	case f.Method == zip.Deflate:
		if w.fr == nil {
			w.fr = flate.NewReader(src)
		} else if err := w.fr.(flate.Resetter).Reset(src, nil); err != nil {
			return wrapErr(CodeCorruptArchive, name, err)
		}
		_, err = w.fr.(io.WriterTo).WriteTo(ew)
	case inWindow:
		_, err = ew.Write(data)
	default:
		_, err = w.br.WriteTo(ew)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return newErr(CodeCorruptArchive, name, "reading entry data: %w", err)
	}
	return ew.check(f.CRC32)
}

// entryWriter checks an entry's data as it is produced, against its
// declared size, the limits and, at the end, its CRC-32, and writes it
// to the file. Its errors are *Error.
type entryWriter struct {
	x        *extractor
	name     string
	declared uint64 // uncompressed size
	csize    uint64 // compressed size, at least 1
	written  uint64
	crc      uint32
	out      io.Writer
}

func (e *entryWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	x := e.x
	nw := e.written + uint64(len(p))
	if nw > e.declared {
		return 0, newErr(CodeSizeMismatch, e.name, "data inflates past its declared size of %d bytes", e.declared)
	}
	if total := x.bytes.Add(int64(len(p))); x.lim.MaxBytes > 0 && total > x.lim.MaxBytes {
		return 0, newErr(CodeTooLarge, e.name, "more than %d bytes in total (Limits.MaxBytes)", x.lim.MaxBytes)
	}
	if x.lim.MaxRatio > 0 && nw > RatioFloor && nw/e.csize > uint64(x.lim.MaxRatio) {
		return 0, newErr(CodeRatioExceeded, e.name, "compression ratio exceeds %d (Limits.MaxRatio)", x.lim.MaxRatio)
	}
	e.crc = crc32.Update(e.crc, crc32.IEEETable, p)
	if _, err := e.out.Write(p); err != nil {
		return 0, wrapErr(CodeIO, e.name, err)
	}
	e.written = nw
	return len(p), nil
}

// check reports an entry that ended short of its declared size or whose
// CRC-32 is not the archive's.
func (e *entryWriter) check(crc uint32) error {
	if e.written != e.declared {
		return newErr(CodeSizeMismatch, e.name, "entry has %d bytes but declares %d", e.written, e.declared)
	}
	if e.crc != crc {
		return newErr(CodeChecksumMismatch, e.name, "CRC-32 is %08x, archive says %08x", e.crc, crc)
	}
	return nil
}

// copyKept copies the kept top-level names from the old target into dst.
func copyKept(oldTarget string, dst *os.Root, keep map[string]bool) error {
	src, err := os.OpenRoot(oldTarget)
	if err != nil {
		return wrapErr(CodeIO, "", err)
	}
	defer src.Close()
	names := make([]string, 0, len(keep))
	for k := range keep {
		names = append(names, k)
	}
	slices.Sort(names)
	buf := make([]byte, 64<<10)
	for _, name := range names {
		fi, err := src.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return wrapErr(CodeIO, name, err)
		}
		if err := copyNode(src, dst, name, name, fi, buf); err != nil {
			return err
		}
	}
	return nil
}

// copyNode copies name (a child of src, described by fi from Lstat) to the
// same name in dst, without following symbolic links. rel names it in errors.
func copyNode(src, dst *os.Root, name, rel string, fi fs.FileInfo, buf []byte) error {
	switch {
	case fi.Mode().IsRegular():
		in, err := src.OpenFile(name, os.O_RDONLY|osutil.OpenNoFollow, 0)
		if err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		defer in.Close()
		st, err := in.Stat()
		if err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		if !st.Mode().IsRegular() || !os.SameFile(st, fi) {
			return newErr(CodeUnsupportedFileType, rel, "kept file was replaced while being copied")
		}
		out, err := dst.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
		if err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		_, err = io.CopyBuffer(out, onlyReader{in}, buf)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		return nil
	case fi.IsDir():
		s, err := src.OpenRoot(name)
		if err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		defer s.Close()
		sd, err := s.Open(".")
		if err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		st, err := sd.Stat()
		if err != nil {
			sd.Close()
			return wrapErr(CodeIO, rel, err)
		}
		if !os.SameFile(st, fi) {
			sd.Close()
			return newErr(CodeUnsupportedFileType, rel, "kept directory was replaced while being copied")
		}
		names, err := sd.Readdirnames(-1)
		sd.Close()
		if err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		if err := dst.Mkdir(name, 0o700); err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		d, err := dst.OpenRoot(name)
		if err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		defer d.Close()
		slices.Sort(names)
		for _, n := range names {
			cfi, err := s.Lstat(n)
			if err != nil {
				return wrapErr(CodeIO, rel+"/"+n, err)
			}
			if err := copyNode(s, d, n, rel+"/"+n, cfi, buf); err != nil {
				return err
			}
		}
		if err := dst.Chmod(name, st.Mode().Perm()|0o700); err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		return nil
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := src.Readlink(name)
		if err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		if err := dst.Symlink(link, name); err != nil {
			return wrapErr(CodeIO, rel, err)
		}
		return nil
	default:
		return newErr(CodeUnsupportedFileType, rel, "kept %s cannot be copied", describeType(fi.Mode()))
	}
}

// removeAll removes a tree we created, retrying a few times in case
// something else modifies it concurrently.
func removeAll(path string) {
	for range 10 {
		if os.RemoveAll(path) == nil {
			return
		}
	}
}

// windowReader serves the small reads archive/zip makes (local headers,
// entry data through a SectionReader) from one window of the archive read
// ahead, so that extracting many small entries, which lie one after the
// other, costs a read per window instead of several per entry.
type windowReader struct {
	r    io.ReaderAt
	size int64
	buf  []byte
	off  int64 // archive offset of buf[0]
	n    int   // valid bytes in buf
}

const readWindow = 1 << 20

func newWindowReader(r io.ReaderAt, size int64) *windowReader {
	return &windowReader{r: r, size: size}
}

// slice returns the archive's bytes [off, off+n) from the window,
// refilling it at off when they are not all in it; ok is false, and
// nothing is read, when n is larger than a window. The bytes are valid
// until the next call.
func (w *windowReader) slice(off, n int64) (b []byte, ok bool, err error) {
	if n > readWindow || off < 0 || n < 0 || off > w.size-n {
		return nil, false, nil
	}
	if off < w.off || off+n > w.off+int64(w.n) {
		if err := w.fill(off); err != nil {
			return nil, false, err
		}
	}
	start := int(off - w.off)
	return w.buf[start : start+int(n)], true, nil
}

// fill reads the window at off, which is inside the archive.
func (w *windowReader) fill(off int64) error {
	if w.buf == nil {
		w.buf = make([]byte, readWindow)
	}
	n, err := w.r.ReadAt(w.buf[:min(int64(readWindow), w.size-off)], off)
	if err == io.EOF && n > 0 {
		err = nil
	}
	w.off, w.n = off, n
	if err != nil {
		w.n = 0
		return err
	}
	return nil
}

// ReadAt reads from the window, refilling it at off when off is outside;
// reads of a window or more go to the archive directly.
func (w *windowReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) >= readWindow/2 {
		return w.r.ReadAt(p, off)
	}
	if off < w.off || off+int64(len(p)) > w.off+int64(w.n) {
		if off < 0 || off >= w.size {
			return w.r.ReadAt(p, off)
		}
		if err := w.fill(off); err != nil {
			return 0, err
		}
	}
	start := int(off - w.off)
	n := copy(p, w.buf[start:w.n])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
