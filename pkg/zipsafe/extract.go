package zipsafe

import (
	"archive/zip"
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
	// running number of files and bytes.
	Progress func(files int, bytes int64)
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
	lim := opts.Limits.resolve()
	keep := make(map[string]bool, len(opts.Keep))
	for _, k := range opts.Keep {
		if msg := checkName(k, 1); msg != "" || strings.Contains(k, "/") {
			if msg == "" {
				msg = "not a single path component"
			}
			return ExtractStats{}, newErr(CodeUnsafePath, k, "invalid Keep name: %s", msg)
		}
		keep[k] = true
	}
	if size < 0 {
		return ExtractStats{}, newErr(CodeCorruptArchive, "", "negative archive size")
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return ExtractStats{}, wrapErr(CodeCorruptArchive, "", err)
	}
	plan, err := validate(zr, size, lim, keep)
	if err != nil {
		return ExtractStats{}, err
	}

	absTarget, err := filepath.Abs(target)
	if err != nil {
		return ExtractStats{}, wrapErr(CodeIO, "", err)
	}
	parent, base := filepath.Dir(absTarget), filepath.Base(absTarget)
	if base == string(filepath.Separator) || base == "." || base == ".." {
		return ExtractStats{}, newErr(CodeIO, "", "invalid target %q", target)
	}
	oldExists := false
	if fi, err := os.Lstat(absTarget); err == nil {
		if !fi.IsDir() {
			return ExtractStats{}, newErr(CodeIO, "", "target %s exists and is not a directory", absTarget)
		}
		oldExists = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return ExtractStats{}, wrapErr(CodeIO, "", err)
	}

	prefix := base
	if len(prefix) > 64 {
		prefix = prefix[:64]
	}
	tmp, err := os.MkdirTemp(parent, "."+prefix+".zipsafe-new-*")
	if err != nil {
		return ExtractStats{}, wrapErr(CodeIO, "", err)
	}
	committed := false
	defer func() {
		if !committed {
			removeAll(tmp)
		}
	}()
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return ExtractStats{}, wrapErr(CodeIO, "", err)
	}
	x := &extractor{
		root:     root,
		lim:      lim,
		made:     make(map[string]bool),
		buf:      make([]byte, 256<<10),
		br:       bufio.NewReaderSize(nil, 256<<10),
		progress: opts.Progress,
	}
	err = x.run(plan)
	if err == nil && oldExists && len(keep) > 0 {
		err = copyKept(absTarget, root, keep)
	}
	x.closeCache()
	root.Close()
	if err != nil {
		return ExtractStats{}, err
	}

	if !oldExists {
		if err := os.Rename(tmp, absTarget); err != nil {
			return ExtractStats{}, wrapErr(CodeIO, "", err)
		}
		committed = true
		return x.stats, nil
	}
	aside, err := os.MkdirTemp(parent, "."+prefix+".zipsafe-old-*")
	if err != nil {
		return ExtractStats{}, wrapErr(CodeIO, "", err)
	}
	// Renaming a directory over an empty directory replaces it atomically
	// (os.Rename refuses to, hence syscall.Rename).
	if err := osutil.Rename(absTarget, aside); err != nil {
		os.Remove(aside)
		return ExtractStats{}, wrapErr(CodeIO, "", &os.LinkError{Op: "rename", Old: absTarget, New: aside, Err: err})
	}
	if err := os.Rename(tmp, absTarget); err != nil {
		if rerr := os.Rename(aside, absTarget); rerr != nil {
			return ExtractStats{}, newErr(CodeIO, "", "%v; restoring the old target from %s failed: %v", err, aside, rerr)
		}
		return ExtractStats{}, wrapErr(CodeIO, "", err)
	}
	committed = true
	removeAll(aside) // best effort: the new tree is in place
	return x.stats, nil
}

type planned struct {
	f    *zip.File
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
		plan = append(plan, planned{f: f, dir: isDir, exec: exec})
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

type extractor struct {
	root      *os.Root
	lim       Limits
	made      map[string]bool
	buf       []byte
	br        *bufio.Reader
	fr        io.ReadCloser
	progress  func(int, int64)
	stats     ExtractStats
	cacheDir  string
	cacheRoot *os.Root
}

func (x *extractor) run(plan []planned) error {
	for _, p := range plan {
		key := strings.TrimSuffix(p.f.Name, "/")
		if p.dir {
			if err := x.mkdirs(key); err != nil {
				return wrapErr(CodeIO, p.f.Name, err)
			}
			continue
		}
		if err := x.file(p, key); err != nil {
			return err
		}
	}
	return nil
}

func (x *extractor) closeCache() {
	if x.cacheRoot != nil {
		x.cacheRoot.Close()
		x.cacheRoot, x.cacheDir = nil, ""
	}
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

// dirRoot returns an os.Root for dir (relative to x.root), caching the last one.
func (x *extractor) dirRoot(dir string) (*os.Root, error) {
	if dir == "" {
		return x.root, nil
	}
	if x.cacheRoot != nil && x.cacheDir == dir {
		return x.cacheRoot, nil
	}
	x.closeCache()
	r, err := x.root.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	x.cacheRoot, x.cacheDir = r, dir
	return r, nil
}

func (x *extractor) file(p planned, key string) error {
	name := p.f.Name
	dir, base := "", key
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		dir, base = key[:i], key[i+1:]
	}
	if err := x.mkdirs(dir); err != nil {
		return wrapErr(CodeIO, name, err)
	}
	d, err := x.dirRoot(dir)
	if err != nil {
		return wrapErr(CodeIO, name, err)
	}
	perm := os.FileMode(0o600)
	if p.exec {
		perm = 0o700
	}
	out, err := d.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return wrapErr(CodeIO, name, err)
	}
	err = x.copyData(p.f, out)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = wrapErr(CodeIO, name, cerr)
	}
	if err != nil {
		return err
	}
	x.stats.Files++
	if x.progress != nil {
		x.progress(x.stats.Files, x.stats.Bytes)
	}
	return nil
}

func (x *extractor) copyData(f *zip.File, out io.Writer) error {
	name := f.Name
	raw, err := f.OpenRaw()
	if err != nil {
		return wrapErr(CodeCorruptArchive, name, err)
	}
	src := raw
	if f.Method == zip.Deflate {
		x.br.Reset(raw)
		if x.fr == nil {
			x.fr = flate.NewReader(x.br)
		} else if err := x.fr.(flate.Resetter).Reset(x.br, nil); err != nil {
			return wrapErr(CodeCorruptArchive, name, err)
		}
		src = x.fr
	}
	crc := crc32.NewIEEE()
	declared, csize := f.UncompressedSize64, max(f.CompressedSize64, 1)
	var written uint64
	for {
		n, rerr := src.Read(x.buf)
		if n > 0 {
			w := written + uint64(n)
			if w > declared {
				return newErr(CodeSizeMismatch, name, "data inflates past its declared size of %d bytes", declared)
			}
			if x.lim.MaxBytes > 0 && x.stats.Bytes+int64(n) > x.lim.MaxBytes {
				return newErr(CodeTooLarge, name, "more than %d bytes in total (Limits.MaxBytes)", x.lim.MaxBytes)
			}
			if x.lim.MaxRatio > 0 && w > RatioFloor && w/csize > uint64(x.lim.MaxRatio) {
				return newErr(CodeRatioExceeded, name, "compression ratio exceeds %d (Limits.MaxRatio)", x.lim.MaxRatio)
			}
			crc.Write(x.buf[:n])
			if _, err := out.Write(x.buf[:n]); err != nil {
				return wrapErr(CodeIO, name, err)
			}
			written = w
			x.stats.Bytes += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return newErr(CodeCorruptArchive, name, "reading entry data: %w", rerr)
		}
	}
	if written != declared {
		return newErr(CodeSizeMismatch, name, "entry has %d bytes but declares %d", written, declared)
	}
	if sum := crc.Sum32(); sum != f.CRC32 {
		return newErr(CodeChecksumMismatch, name, "CRC-32 is %08x, archive says %08x", sum, f.CRC32)
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
