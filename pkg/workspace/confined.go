package workspace

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// MaxLineBytes is the longest line ReadLines returns; longer lines are cut
// to this many bytes.
const MaxLineBytes = 1 << 20

// MaxReadLines is the largest count ReadLines accepts.
const MaxReadLines = 100_000

// scopeError builds the *artifacts.Error of a workspace operation: a
// confined call's, or the manager's about a workspace directory. It names
// the scope when scope is not nil, and never a name or a version (see
// artifacts.NoVersion).
func scopeError(code artifacts.Code, op string, scope *artifacts.Scope, cause error, format string, args ...any) error {
	e := artifacts.Errorf(code, op, cause, format, args...)
	if scope != nil {
		e = e.With(*scope, "", artifacts.NoVersion)
	}
	return e
}

// osError classifies an operating-system error of a confined call.
func osError(op string, scope *artifacts.Scope, name string, err error) error {
	var ae *artifacts.Error
	if errors.As(err, &ae) {
		return err
	}
	code := artifacts.CodeIO
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = artifacts.CodeNotFound
	case errors.Is(err, fs.ErrExist):
		code = artifacts.CodeConflict
	case errors.Is(err, fs.ErrPermission), strings.Contains(err.Error(), "path escapes from parent"):
		code = artifacts.CodePermission
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTEMPTY),
		errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EINVAL):
		code = artifacts.CodeInvalidArgument
	}
	return scopeError(code, op, scope, err, "%q", name)
}

// cleanPath validates a slash-separated path relative to a root and returns
// it cleaned ("." for the root itself, allowed only when allowRoot). It
// refuses empty and absolute paths, NUL, paths that climb out with "..",
// and, when reserved is set, every path whose first component IsReserved
// reports or with an index name (isIndexName) at any depth: a symbolic
// link to the top ("self/.agentstore-index" with self -> .) would reach
// the index.
func cleanPath(op string, scope *artifacts.Scope, name string, allowRoot, reserved bool) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", scopeError(artifacts.CodeInvalidArgument, op, scope, nil, "path %q: "+format, append([]any{name}, args...)...)
	}
	switch {
	case name == "":
		return bad("empty path")
	case strings.IndexByte(name, 0) >= 0:
		return bad("contains NUL")
	case strings.HasPrefix(name, "/"):
		return bad("absolute path")
	case len(name) > 4096:
		return bad("longer than 4096 bytes")
	}
	p := path.Clean(name)
	if p == ".." || strings.HasPrefix(p, "../") {
		return bad("climbs out of the workspace")
	}
	if p == "." && !allowRoot {
		return bad("names the workspace itself")
	}
	if reserved && p != "." {
		top := true
		for c := range strings.SplitSeq(p, "/") {
			if isIndexName(c) || (top && IsReserved(c)) {
				return "", scopeError(artifacts.CodePermission, op, scope, nil, "path %q: %q is reserved for the workspace manager", name, c)
			}
			top = false
		}
	}
	return p, nil
}

// storable refuses, with CodeInvalidName, a cleaned path that a snapshot
// could not hold (zipsafe.CheckName under the manager's limits), so that
// no confined write can leave a name behind that would make every later
// snapshot fail.
func (w *Workspace) storable(op, name, p string) error {
	if err := zipsafe.CheckName(p, w.m.opts.Limits); err != nil {
		var ze *zipsafe.Error
		msg := err.Error()
		if errors.As(err, &ze) && ze.Err != nil {
			msg = ze.Err.Error()
		}
		return scopeError(artifacts.CodeInvalidName, op, &w.scope, err, "path %q cannot be kept in a snapshot (%s); choose another name", name, msg)
	}
	return nil
}

// writablePath is cleanPath for the paths a confined call creates: not
// the workspace itself, not reserved, and storable in a snapshot.
func (w *Workspace) writablePath(op, name string) (string, error) {
	p, err := cleanPath(op, &w.scope, name, false, true)
	if err != nil {
		return "", err
	}
	return p, w.storable(op, name, p)
}

// splitPath splits a cleaned path into its directory ("." at the top) and
// base name.
func splitPath(p string) (dir, base string) {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:]
	}
	return ".", p
}

// mkdirParents creates the directory dir (a slash-separated path in
// root) and its missing parents, 0700, as MkdirAll does, charging each
// directory it makes to the ledger (dirDelta), and
// returns a function that removes again, deepest first, the directories
// it made and refunds them: a change that is then refused or fails calls
// it, so that it leaves nothing behind. A directory over the quota is
// removed at once and refused. The caller holds w.ledger.change,
// as every confined call that makes a directory or puts an entry in one
// does, so nothing can have entered these directories meanwhile. op and
// name name the call in a refusal.
func (w *Workspace) mkdirParents(root *os.Root, op, name, dir string) (removeMade func(), err error) {
	var made []string
	removeMade = func() {
		for i := len(made) - 1; i >= 0; i-- {
			if root.Remove(made[i]) == nil {
				w.ledger.book(dirDelta.neg())
			}
		}
	}
	for i := range len(dir) + 1 {
		if i < len(dir) && dir[i] != '/' {
			continue
		}
		switch err := root.Mkdir(dir[:i], 0o700); {
		case err == nil:
			// Charged once made: only a directory that was missing costs,
			// and no other change runs between the two.
			if qe := w.ledger.take(dirDelta); qe != nil {
				root.Remove(dir[:i])
				removeMade()
				return nil, w.refused(op, name, qe)
			}
			made = append(made, dir[:i])
		case errors.Is(err, fs.ErrExist):
			// There already. A file in the middle of dir fails the next
			// Mkdir; one at its end is found here, as MkdirAll finds it.
			if i == len(dir) {
				fi, err := root.Stat(dir)
				if err == nil && !fi.IsDir() {
					err = &fs.PathError{Op: "mkdirat", Path: dir, Err: syscall.ENOTDIR}
				}
				if err != nil {
					removeMade()
					return nil, err
				}
			}
		default:
			removeMade()
			return nil, err
		}
	}
	return removeMade, nil
}

// File is a file opened for reading through the confined API. It has no
// write methods.
type File struct {
	f *os.File
}

// Read reads from the file.
func (f *File) Read(p []byte) (int, error) { return f.f.Read(p) }

// ReadAt reads from the file at an offset.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

// Seek sets the offset of the next Read.
func (f *File) Seek(offset int64, whence int) (int64, error) { return f.f.Seek(offset, whence) }

// Stat describes the open file.
func (f *File) Stat() (fs.FileInfo, error) { return f.f.Stat() }

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// tree is the read side shared by Workspace and Reference.
type tree struct {
	op       string // prefix of operation names: "workspace" or "reference"
	scope    *artifacts.Scope
	reserved bool // refuse and hide the index's names (IsReserved); refuse the index
	// singleLink refuses to open a file with more than one hard link: its
	// other name may be outside the tree (the reference tree's contract).
	singleLink bool
}

// openRegular opens p for reading: it must be a regular file (a final
// symbolic link is not followed), and the file opened must be the one
// examined.
func (t tree) openRegular(root *os.Root, op, name string) (*os.File, fs.FileInfo, error) {
	p, err := cleanPath(op, t.scope, name, false, t.reserved)
	if err != nil {
		return nil, nil, err
	}
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, nil, osError(op, t.scope, name, err)
	}
	if err := t.checkRegular(op, name, fi); err != nil {
		return nil, nil, err
	}
	f, err := root.OpenFile(p, os.O_RDONLY|osutil.OpenNoFollow, 0)
	if err != nil {
		return nil, nil, osError(op, t.scope, name, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, osError(op, t.scope, name, err)
	}
	if !st.Mode().IsRegular() || !os.SameFile(st, fi) {
		f.Close()
		return nil, nil, scopeError(artifacts.CodeConflict, op, t.scope, nil, "%q was replaced while being opened", name)
	}
	if t.reserved && isIndexFile(root, st) {
		f.Close()
		return nil, nil, scopeError(artifacts.CodePermission, op, t.scope, nil, "%q is the workspace index", name)
	}
	if n, ok := osutil.Links(st); t.singleLink && ok && n > 1 {
		f.Close()
		return nil, nil, scopeError(artifacts.CodePermission, op, t.scope, nil, "%q has %d hard links; a file that may be linked from outside the tree is not read", name, n)
	}
	return f, st, nil
}

func (t tree) checkRegular(op, name string, fi fs.FileInfo) error {
	switch {
	case fi.Mode().IsRegular():
		return nil
	case fi.IsDir():
		return scopeError(artifacts.CodeInvalidArgument, op, t.scope, nil, "%q is a directory", name)
	case fi.Mode()&fs.ModeSymlink != 0:
		return scopeError(artifacts.CodePermission, op, t.scope, nil, "%q is a symbolic link; links are not followed", name)
	default:
		return scopeError(artifacts.CodeInvalidArgument, op, t.scope, nil, "%q is not a regular file (%v)", name, fi.Mode().Type())
	}
}

func (t tree) open(root *os.Root, name string) (*File, error) {
	f, _, err := t.openRegular(root, t.op+" open", name)
	if err != nil {
		return nil, err
	}
	return &File{f: f}, nil
}

// Lines is a window of lines read by ReadLines.
type Lines struct {
	// Lines holds the lines without their line endings ("\n" or "\r\n").
	Lines []string
	// Next is the offset of the line after the window.
	Next int
	// More is true when the file has lines after the window.
	More bool
}

func (t tree) readLines(root *os.Root, name string, offset, count int) (Lines, error) {
	op := t.op + " read lines"
	if offset < 0 || count < 0 || count > MaxReadLines {
		return Lines{}, scopeError(artifacts.CodeInvalidArgument, op, t.scope, nil, "offset %d, count %d: want offset >= 0 and 0 <= count <= %d", offset, count, MaxReadLines)
	}
	f, _, err := t.openRegular(root, op, name)
	if err != nil {
		return Lines{}, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	out := Lines{Lines: []string{}, Next: offset}
	var line []byte
	for i := 0; ; i++ {
		line = line[:0]
		eof := false
		for {
			chunk, err := br.ReadSlice('\n')
			if len(line) < MaxLineBytes {
				line = append(line, chunk[:min(len(chunk), MaxLineBytes+1-len(line))]...)
			}
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err == io.EOF {
				eof = true
				break
			}
			return Lines{}, osError(op, t.scope, name, err)
		}
		if eof && len(line) == 0 {
			return out, nil
		}
		if i >= offset+count {
			out.More = true
			return out, nil
		}
		if i >= offset {
			s := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
			if len(s) > MaxLineBytes {
				s = s[:MaxLineBytes]
			}
			out.Lines = append(out.Lines, s)
			out.Next = i + 1
		}
		if eof {
			return out, nil
		}
	}
}

func (t tree) stat(root *os.Root, name string) (fs.FileInfo, error) {
	op := t.op + " stat"
	p, err := cleanPath(op, t.scope, name, true, t.reserved)
	if err != nil {
		return nil, err
	}
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, osError(op, t.scope, name, err)
	}
	return fi, nil
}

// list returns the entries of directory name, sorted by name, as Lstat
// sees them; the reserved names at the top are hidden.
func (t tree) list(root *os.Root, name string) ([]fs.FileInfo, error) {
	op := t.op + " list"
	p, err := cleanPath(op, t.scope, name, true, t.reserved)
	if err != nil {
		return nil, err
	}
	dir := root
	if p != "." {
		fi, err := root.Lstat(p)
		if err != nil {
			return nil, osError(op, t.scope, name, err)
		}
		if !fi.IsDir() {
			return nil, scopeError(artifacts.CodeInvalidArgument, op, t.scope, nil, "%q is not a directory", name)
		}
		dir, err = root.OpenRoot(p)
		if err != nil {
			return nil, osError(op, t.scope, name, err)
		}
		defer dir.Close()
		if st, err := dir.Stat("."); err != nil || !os.SameFile(st, fi) {
			return nil, scopeError(artifacts.CodeConflict, op, t.scope, err, "%q was replaced while being listed", name)
		}
	}
	d, err := dir.Open(".")
	if err != nil {
		return nil, osError(op, t.scope, name, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, osError(op, t.scope, name, err)
	}
	slices.Sort(names)
	out := make([]fs.FileInfo, 0, len(names))
	for _, n := range names {
		if t.reserved && p == "." && IsReserved(n) {
			continue
		}
		fi, err := dir.Lstat(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, osError(op, t.scope, path.Join(p, n), err)
		}
		out = append(out, fi)
	}
	return out, nil
}

// Open opens a regular file of the workspace for reading. A symbolic link
// as the last component is refused, never followed.
func (w *Workspace) Open(name string) (*File, error) {
	root, done, err := w.use()
	if err != nil {
		return nil, err
	}
	defer done()
	return w.tree().open(root, name)
}

// ReadLines returns up to count lines of a text file starting at line
// offset (0-based).
func (w *Workspace) ReadLines(name string, offset, count int) (Lines, error) {
	root, done, err := w.use()
	if err != nil {
		return Lines{}, err
	}
	defer done()
	return w.tree().readLines(root, name, offset, count)
}

// Stat describes a file or directory of the workspace without following a
// final symbolic link. "." is the workspace itself.
func (w *Workspace) Stat(name string) (fs.FileInfo, error) {
	root, done, err := w.use()
	if err != nil {
		return nil, err
	}
	defer done()
	return w.tree().stat(root, name)
}

// List returns the entries of a directory of the workspace ("." for the
// top), sorted by name; the index and the manager's temporary files are
// not listed.
func (w *Workspace) List(name string) ([]fs.FileInfo, error) {
	root, done, err := w.use()
	if err != nil {
		return nil, err
	}
	defer done()
	return w.tree().list(root, name)
}

// Write replaces (or creates) the file name with data, atomically: the
// bytes are charged to the quota first, written to a temporary file at
// the top of the workspace (fsynced when Options.Durable is set) and
// renamed into place. Missing parent directories are created (each
// charged DirBytes). A refused write writes nothing.
func (w *Workspace) Write(ctx context.Context, name string, data []byte) error {
	_, err := w.write(ctx, "workspace write", name, nil, data)
	return err
}

// WriteFrom replaces (or creates) the file name with the bytes of r, like
// Write, charging the quota as the bytes arrive; when the quota is
// exceeded the temporary file is removed and nothing is written. It
// returns the number of bytes written.
func (w *Workspace) WriteFrom(ctx context.Context, name string, r io.Reader) (int64, error) {
	return w.write(ctx, "workspace write", name, r, nil)
}

func (w *Workspace) write(ctx context.Context, op, name string, r io.Reader, data []byte) (int64, error) {
	n, err := w.writeLocked(op, name, r, data)
	if err != nil {
		return n, err
	}
	return n, w.afterChange(ctx, op, name)
}

// target describes what a change of p would replace: the size of a
// regular file there (counted among the files), nothing for a missing
// name or another kind of entry; a directory is refused.
func (w *Workspace) target(root *os.Root, op, name, p string) (size int64, file bool, perm os.FileMode, err error) {
	fi, err := root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, false, 0o600, nil
	case err != nil:
		return 0, false, 0, osError(op, &w.scope, name, err)
	case fi.IsDir():
		return 0, false, 0, scopeError(artifacts.CodeInvalidArgument, op, &w.scope, nil, "%q is a directory", name)
	case fi.Mode().IsRegular():
		return fi.Size(), true, fi.Mode().Perm() | 0o600, nil
	}
	return 0, false, 0o600, nil
}

// replaceDelta is the delta of replacing what target found with n bytes
// (the turn not included).
func replaceDelta(n, old int64, file bool) delta {
	d := delta{bytes: n - old}
	if !file {
		d.files = 1
	}
	return d
}

// writeLocked writes in two steps. The bytes go to a temporary file at
// the top, charged to the turn as they arrive and checked against what
// the file replaces now, so that a write that cannot fit stops early.
// Then, holding w.ledger.change, it makes the missing directories, looks
// at what the file replaces at that moment, books the difference (or is
// refused) and renames the file into place: the ledger changes with the
// tree, whatever other calls do meanwhile.
func (w *Workspace) writeLocked(op, name string, r io.Reader, data []byte) (int64, error) {
	root, done, err := w.use()
	if err != nil {
		return 0, err
	}
	defer done()
	sc := &w.scope
	p, err := w.writablePath(op, name)
	if err != nil {
		return 0, err
	}
	old, file, perm, err := w.target(root, op, name, p)
	if err != nil {
		return 0, err
	}
	// refuse refunds the turn's charge of written bytes and says what is
	// left for the whole write of n bytes.
	var turn int64
	refuse := func(qe *QuotaExceeded, n int64) (int64, error) {
		w.ledger.book(delta{turn: -turn})
		d := replaceDelta(n, old, file)
		d.turn = n
		if full := w.ledger.check(d); full != nil {
			qe = full
		}
		return 0, w.refused(op, name, qe)
	}
	if r == nil {
		d := replaceDelta(int64(len(data)), old, file)
		d.turn = int64(len(data))
		if qe := w.ledger.check(d); qe != nil {
			return refuse(qe, int64(len(data)))
		}
		if qe := w.ledger.take(delta{turn: int64(len(data))}); qe != nil {
			return refuse(qe, int64(len(data)))
		}
		turn = int64(len(data))
	} else if qe := w.ledger.check(replaceDelta(0, old, file)); qe != nil {
		return refuse(qe, 0)
	}
	top := w.heldDir()
	tmp := tempName(writeTempKind)
	f, err := createTemp(root, top, tmp, perm)
	if err != nil {
		w.ledger.book(delta{turn: -turn})
		return 0, osError(op, sc, name, err)
	}
	written := int64(len(data))
	var werr error
	if r == nil {
		_, werr = f.Write(data)
	} else {
		written, werr = w.copyCharged(f, r, old, &turn)
	}
	if werr == nil && w.m.opts.Durable {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = w.commitWrite(root, top, op, name, p, tmp, written)
	}
	if werr != nil {
		root.Remove(tmp)
		var qe *QuotaExceeded
		if errors.As(werr, &qe) {
			return refuse(qe, written)
		}
		w.ledger.book(delta{turn: -turn})
		return 0, osError(op, sc, name, werr)
	}
	w.markDirty()
	return written, nil
}

// commitWrite renames the temporary file tmp (at the top) holding n
// bytes to p, holding w.ledger.change: it makes p's missing directories,
// books the change against what p holds now, and undoes both when the
// quota refuses it (a *QuotaExceeded) or the rename fails.
func (w *Workspace) commitWrite(root *os.Root, top *os.File, op, name, p, tmp string, n int64) error {
	w.ledger.change.Lock()
	defer w.ledger.change.Unlock()
	dirName, base := splitPath(p)
	removeMade := func() {}
	if dirName != "." {
		var err error
		if removeMade, err = w.mkdirParents(root, op, name, dirName); err != nil {
			return err
		}
	}
	old, file, _, err := w.target(root, op, name, p)
	if err != nil {
		removeMade()
		return err
	}
	d := replaceDelta(n, old, file)
	if qe := w.ledger.take(d); qe != nil {
		removeMade()
		return qe
	}
	if dirName == "." {
		err = renameIn(root, top, tmp, base)
	} else {
		err = root.Rename(tmp, p)
	}
	if err != nil {
		w.ledger.book(d.neg())
		removeMade()
		return err
	}
	return nil
}

// createTemp creates the new file name (one path component) in dir for
// writing. top, when not nil, is an open descriptor of the same
// directory: the file is created relative to it with one openat (see
// createAt) instead of through the root, which also tries to add a
// regular file to the runtime's poller.
func createTemp(dir *os.Root, top *os.File, name string, perm os.FileMode) (*os.File, error) {
	if top != nil {
		if f, err := createAt(top, name, perm); !errors.Is(err, errors.ErrUnsupported) {
			return f, err
		}
	}
	return dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

// renameIn renames oldname to newname (each one path component) in dir,
// through top, a descriptor of the same directory, when not nil (see
// renameAt).
func renameIn(dir *os.Root, top *os.File, oldname, newname string) error {
	if top != nil {
		if err := renameAt(top, oldname, newname); !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	return dir.Rename(oldname, newname)
}

// copyCharged copies r to f, charging the turn chunk by chunk (adding
// to *turn) and checking the bytes so far against the total as a
// replacement of old bytes, so that a write over the quota stops at the
// chunk that crosses it. The caller refunds *turn on any error; a
// refusal is a *QuotaExceeded.
func (w *Workspace) copyCharged(f *os.File, r io.Reader, old int64, turn *int64) (int64, error) {
	buf := make([]byte, 256<<10)
	var written int64
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			// The file itself was checked before the first chunk; each
			// chunk checks the bytes.
			if qe := w.ledger.check(delta{bytes: written + int64(n) - old}); qe != nil {
				return 0, qe
			}
			if qe := w.ledger.take(delta{turn: int64(n)}); qe != nil {
				return 0, qe
			}
			*turn += int64(n)
			written += int64(n)
			if _, err := f.Write(buf[:n]); err != nil {
				return 0, err
			}
		}
		if rerr == io.EOF {
			return written, nil
		}
		if rerr != nil {
			return 0, rerr
		}
	}
}

// Append appends data to the file name, creating it when missing. The
// bytes are charged to the quota first. Unlike Write it is not atomic.
func (w *Workspace) Append(ctx context.Context, name string, data []byte) error {
	if err := w.appendLocked(name, data); err != nil {
		return err
	}
	return w.afterChange(ctx, "workspace append", name)
}

// appendLocked appends holding w.ledger.change throughout: the bytes are
// in memory, and what the file holds is booked as it changes.
func (w *Workspace) appendLocked(name string, data []byte) error {
	const op = "workspace append"
	root, done, err := w.use()
	if err != nil {
		return err
	}
	defer done()
	sc := &w.scope
	p, err := w.writablePath(op, name)
	if err != nil {
		return err
	}
	w.ledger.change.Lock()
	defer w.ledger.change.Unlock()
	dirName, base := splitPath(p)
	appended := false
	if dirName != "." {
		removeMade, err := w.mkdirParents(root, op, name, dirName)
		if err != nil {
			return osError(op, sc, name, err)
		}
		defer func() {
			if !appended {
				removeMade()
			}
		}()
	}
	dir, err := root.OpenRoot(dirName)
	if err != nil {
		return osError(op, sc, name, err)
	}
	defer dir.Close()
	fi, err := dir.Lstat(base)
	created := errors.Is(err, fs.ErrNotExist)
	switch {
	case created:
	case err != nil:
		return osError(op, sc, name, err)
	default:
		if err := w.tree().checkRegular(op, name, fi); err != nil {
			return err
		}
	}
	d := delta{turn: int64(len(data)), bytes: int64(len(data))}
	if created {
		d.files = 1
	}
	if qe := w.ledger.take(d); qe != nil {
		return w.refused(op, name, qe)
	}
	var f *os.File
	if created {
		f, err = dir.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	} else {
		f, err = w.openAppend(root, dir, op, name, base, fi)
	}
	if err != nil {
		w.ledger.book(d.neg())
		return osError(op, sc, name, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		w.ledger.book(d.neg())
		if created {
			// A failed append to a file it created leaves no file.
			dir.Remove(base)
		}
		return osError(op, sc, name, err)
	}
	w.markDirty()
	appended = true
	return nil
}

// openAppend opens the existing regular file base of dir, which Lstat
// described as fi, for appending: the file opened must be that one, and
// not the index.
func (w *Workspace) openAppend(root, dir *os.Root, op, name, base string, fi fs.FileInfo) (*os.File, error) {
	f, err := dir.OpenFile(base, os.O_WRONLY|os.O_APPEND|osutil.OpenNoFollow, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || !os.SameFile(st, fi) {
		f.Close()
		return nil, scopeError(artifacts.CodeConflict, op, &w.scope, err, "%q was replaced while being opened", name)
	}
	if isIndexFile(root, st) {
		f.Close()
		return nil, scopeError(artifacts.CodePermission, op, &w.scope, nil, "%q is the workspace index", name)
	}
	return f, nil
}

// Mkdir creates the directory name and any missing parents (0700), each
// charged DirBytes and counted as an entry.
func (w *Workspace) Mkdir(ctx context.Context, name string) error {
	const op = "workspace mkdir"
	err := w.mutate(op, name, func(root *os.Root, p string) error {
		if err := w.storable(op, name, p); err != nil {
			return err
		}
		_, err := w.mkdirParents(root, op, name, p)
		return err
	})
	if err != nil {
		return err
	}
	return w.afterChange(ctx, op, name)
}

// Remove removes a file, a symbolic link (not what it points to) or an
// empty directory.
func (w *Workspace) Remove(ctx context.Context, name string) error {
	err := w.mutate("workspace remove", name, func(root *os.Root, p string) error {
		fi, err := root.Lstat(p)
		if err != nil {
			return err
		}
		if err := root.Remove(p); err != nil {
			return err
		}
		w.ledger.book(freedDelta(fi))
		return nil
	})
	if err != nil {
		return err
	}
	return w.afterChange(ctx, "workspace remove", name)
}

// freedDelta is the delta of an entry described by fi leaving the
// workspace: a regular file's bytes and count, or a directory's
// DirBytes and count (the turn keeps what it was charged).
func freedDelta(fi fs.FileInfo) delta {
	switch {
	case fi.Mode().IsRegular():
		return delta{bytes: -fi.Size(), files: -1}
	case fi.IsDir():
		return delta{bytes: -DirBytes, dirs: -1}
	}
	return delta{}
}

// RemoveAll removes name and everything below it, never following
// symbolic links. Removing a missing name is not an error.
func (w *Workspace) RemoveAll(ctx context.Context, name string) error {
	err := w.mutate("workspace remove all", name, func(root *os.Root, p string) error {
		if err := root.RemoveAll(p); err != nil {
			return err
		}
		if c, err := measure(root); err == nil {
			w.ledger.setTree(c, false)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.afterChange(ctx, "workspace remove all", name)
}

// Rename renames (moves) oldName to newName, replacing a file (or an
// empty directory, when oldName is a directory) at newName. Neither may
// be a reserved name; a symbolic link is renamed itself.
func (w *Workspace) Rename(ctx context.Context, oldName, newName string) error {
	const op = "workspace rename"
	err := func() error {
		root, done, err := w.use()
		if err != nil {
			return err
		}
		defer done()
		sc := &w.scope
		oldP, err := cleanPath(op, sc, oldName, false, true)
		if err != nil {
			return err
		}
		np, err := w.writablePath(op, newName)
		if err != nil {
			return err
		}
		w.ledger.change.Lock()
		defer w.ledger.change.Unlock()
		ofi, err := root.Lstat(oldP)
		if err != nil {
			return osError(op, sc, oldName, err)
		}
		// Only an entry that is not the one renamed is freed: renaming a
		// file onto itself (or onto another link to it) changes nothing.
		var freed delta
		if fi, err := root.Lstat(np); err == nil && !os.SameFile(fi, ofi) {
			freed = freedDelta(fi)
		}
		if err := root.Rename(oldP, np); err != nil {
			return osError(op, sc, oldName, err)
		}
		w.ledger.book(freed)
		w.markDirty()
		return nil
	}()
	if err != nil {
		return err
	}
	return w.afterChange(ctx, op, newName)
}

// mutate runs fn on the cleaned path under the workspace's read lock,
// holding w.ledger.change.
func (w *Workspace) mutate(op, name string, fn func(root *os.Root, p string) error) error {
	root, done, err := w.use()
	if err != nil {
		return err
	}
	defer done()
	p, err := cleanPath(op, &w.scope, name, false, true)
	if err != nil {
		return err
	}
	w.ledger.change.Lock()
	err = fn(root, p)
	w.ledger.change.Unlock()
	if err != nil {
		return osError(op, &w.scope, name, err)
	}
	w.markDirty()
	return nil
}

// treeCount is what a workspace holds, as the ledger counts it.
type treeCount struct {
	bytes int64 // of the regular files
	files int   // regular files
	dirs  int   // directories below the top
}

// measure counts the regular files of the tree under root, their bytes
// and the directories, at any depth, without following symbolic links;
// the reserved names at the top are not counted.
func measure(root *os.Root) (treeCount, error) {
	var c treeCount
	err := walkTree(root, func(_ string, fi fs.FileInfo, _ *os.Root) error {
		switch {
		case fi.Mode().IsRegular():
			c.bytes += fi.Size()
			c.files++
		case fi.IsDir():
			c.dirs++
		}
		return nil
	})
	return c, err
}

// touchEvery is how often confined calls refresh the index's last access.
const touchEvery = time.Minute
