package workspace

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// CodeWouldOverwrite is the error code of an *OverwriteError.
const CodeWouldOverwrite = "would_overwrite"

// maxLost bounds the entries an OverwriteError lists.
const maxLost = 1000

// Loss is an entry of a workspace that a hydration would overwrite or
// remove and that no snapshot holds.
type Loss struct {
	// Path is the slash-separated path relative to the workspace.
	Path string `json:"path"`
	// Change is "new" (not in the version restored), "modified" (its
	// content differs), or the kind of an entry a snapshot cannot hold
	// ("symlink", "fifo", ...; see EntryKind).
	Change string `json:"change"`
}

// OverwriteError refuses a hydration that would lose work: the workspace
// differs from the version being restored, and its tree is not the one a
// snapshot recorded in its index. Nothing was changed. Its code is
// CodeWouldOverwrite; hydrate with HydrateOptions.Force to overwrite
// anyway, snapshot first, or restore elsewhere with Manager.HydrateTo.
type OverwriteError struct {
	// Scope is the session; Dir the workspace directory's path.
	Scope artifacts.Scope
	Dir   string
	// Version is the version that would have been restored.
	Version int64
	// Lost lists the entries that would be lost, sorted by path, at most
	// 1000; Total counts them all.
	Lost  []Loss
	Total int
}

// Error says what would be lost.
func (e *OverwriteError) Error() string {
	var b strings.Builder
	noun := "entries differ"
	if e.Total == 1 {
		noun = "entry differs"
	}
	fmt.Fprintf(&b, "hydrating v%d would overwrite unsaved work in %s: %d %s from v%d and no snapshot holds them (", e.Version, e.Dir, e.Total, noun, e.Version)
	for i, l := range e.Lost {
		if i == 5 {
			fmt.Fprintf(&b, ", and %d more", e.Total-5)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q %s", l.Path, l.Change)
	}
	b.WriteString("); nothing was changed")
	return b.String()
}

// ErrorCode returns CodeWouldOverwrite.
func (e *OverwriteError) ErrorCode() string { return CodeWouldOverwrite }

// checkOverwrite returns an *OverwriteError when the tree under old holds
// something that the version rec does not and no snapshot recorded in
// old's index holds either. compare walks the tree against the version
// and calls lose for each entry the hydration would lose (special files
// included); it runs only when no recorded snapshot holds the tree.
func (m *Manager) checkOverwrite(ctx context.Context, old *os.Root, scope artifacts.Scope, rec artifacts.Record, compare func(lose func(p, change string)) error) error {
	const op = "workspace hydrate"
	dir := DirName(scope.App, scope.User, scope.Session)
	sc, err := scanTree(old)
	if err != nil {
		return osError(op, &scope, dir, err)
	}
	if sc.Files == 0 && sc.Dirs == 0 && len(sc.Omitted) == 0 {
		return nil
	}
	// A tree a snapshot recorded is saved, all but what no snapshot can
	// hold: then only those entries would be lost.
	saved := false
	if ix, err := readIndex(old, dir); err == nil && ix.TreeState == sc.State && ix.Snapshotted() {
		if ix.IsSnapshot(rec) {
			saved = true
		} else if m.recordedSnapshot(ctx, scope, ix) {
			saved = true
		}
	}
	e := &OverwriteError{Scope: scope, Dir: m.scratch + string(os.PathSeparator) + dir, Version: rec.Version}
	lose := func(p, change string) {
		e.Total++
		if len(e.Lost) < maxLost {
			e.Lost = append(e.Lost, Loss{Path: p, Change: change})
		}
	}
	if saved {
		for _, o := range sc.Omitted {
			lose(o.Path, o.Kind)
		}
		if e.Total == 0 {
			return nil
		}
		return e
	}
	if err := compare(lose); err != nil {
		return err
	}
	if e.Total == 0 {
		return nil
	}
	return e
}

// zipLosses is checkOverwrite's compare for the archive src (n bytes, the
// version rec): it calls lose for what of the tree under old the archive
// does not hold, or holds otherwise.
func (m *Manager) zipLosses(ctx context.Context, old *os.Root, scope artifacts.Scope, src io.ReaderAt, n int64, rec artifacts.Record, lose func(p, change string)) error {
	const op = "workspace hydrate"
	dir := DirName(scope.App, scope.User, scope.Session)
	zr, err := zip.NewReader(src, n)
	if err != nil {
		return artifacts.Errorf(artifacts.CodeCorrupt, op, err, "the archive does not open").With(scope, SnapshotName, rec.Version)
	}
	files := make(map[string]*zip.File, len(zr.File))
	dirs := map[string]bool{}
	for _, zf := range zr.File {
		name := strings.TrimSuffix(zf.Name, "/")
		if strings.HasSuffix(zf.Name, "/") {
			dirs[name] = true
		} else {
			files[name] = zf
		}
		for d := path.Dir(name); d != "." && d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	buf := make([]byte, 64<<10)
	err = walkTree(old, func(rel string, fi fs.FileInfo, d *os.Root) error {
		switch {
		case fi.IsDir():
			if !dirs[rel] {
				lose(rel, "new")
			}
		case fi.Mode().IsRegular():
			zf := files[rel]
			if zf == nil {
				lose(rel, "new")
				return nil
			}
			if int64(zf.UncompressedSize64) != fi.Size() {
				lose(rel, "modified")
				return nil
			}
			crc, err := osutil.FileCRC(d, path.Base(rel), fi, buf)
			if err != nil {
				return err
			}
			if crc != zf.CRC32 {
				lose(rel, "modified")
			}
		default:
			lose(rel, EntryKind(fi.Mode()))
		}
		return artifacts.CheckContext(ctx, op)
	})
	if err != nil {
		return osError(op, &scope, dir, err)
	}
	return nil
}
