package sweep

import (
	"archive/zip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// Names the sweep keeps in the scratch root. All begin with
// workspace.ReservedPrefix, so package workspace reports them as temporary
// entries (Info.Temporary), never as workspaces.
const (
	// LockFile is the lock that keeps two sweeps off one scratch root.
	LockFile = workspace.ReservedPrefix + "sweep.lock"
	// TombstonePrefix begins the name a workspace directory is renamed to
	// before it is removed: TombstonePrefix + DIR + "-" + TOKEN. Its
	// marker, recording the scope and the verified snapshot version, is
	// the same name + MarkerSuffix.
	TombstonePrefix = workspace.ReservedPrefix + "sweep-"
	// MarkerSuffix ends the name of a tombstone's marker file.
	MarkerSuffix = ".json"
	// tempPrefix begins the sweep's temporary files (verification copies,
	// markers being written); any left by a killed sweep are removed by the
	// next one.
	tempPrefix = workspace.ReservedPrefix + "sweeptmp-"
)

// markerFormat is the value of marker.Format.
const markerFormat = "agentstore-sweep-marker/1"

// Marker modes.
const (
	// modeSnapshot: the tree is in the store as the verified Version.
	modeSnapshot = "snapshot"
	// modeDiscard: the tree is discarded under a confirmed plan.
	modeDiscard = "discard"
	// modeConflict: a writer wrote into the tombstone while it was being
	// removed; an operator must look. Never removed nor restored.
	modeConflict = "conflict"
)

// marker is the record kept beside a tombstone until the tombstone is
// gone.
type marker struct {
	Format    string          `json:"format"`
	Dir       string          `json:"dir"`
	Scope     artifacts.Scope `json:"scope"`
	Mode      string          `json:"mode"`
	Version   int64           `json:"version,omitempty"`
	Digest    string          `json:"digest,omitempty"`
	Token     string          `json:"token,omitempty"`
	Size      int64           `json:"size,omitempty"`
	SnapFiles int             `json:"snap_files"`
	SnapDirs  int             `json:"snap_dirs"`
	SnapBytes int64           `json:"snap_bytes"`
	SnapList  string          `json:"snap_list"`
	// SnapContent hashes the CRC-32 of every file (Fingerprint.Content).
	SnapContent string    `json:"snap_content"`
	PlanID      string    `json:"plan_id,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Created     time.Time `json:"created"`
}

func token() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// parseTombstone returns the workspace directory name of a tombstone name.
func parseTombstone(name string) (dir string, ok bool) {
	rest, ok := strings.CutPrefix(name, TombstonePrefix)
	if !ok || strings.HasSuffix(rest, MarkerSuffix) {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 || i+1 >= len(rest) {
		return "", false
	}
	dir = rest[:i]
	return dir, workspace.IsDirName(dir)
}

// syncRoot fsyncs the scratch root directory.
func syncRoot(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeMarker writes the marker atomically: a temporary file created
// exclusively, fsynced, renamed into place, the scratch root fsynced.
func writeMarker(root *os.Root, name string, m marker) error {
	m.Format = markerFormat
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := tempPrefix + token()
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
		return err
	}
	return syncRoot(root)
}

// readMarker reads and checks the marker of a tombstone of dir.
func readMarker(root *os.Root, name, dir string) (marker, error) {
	fi, err := root.Lstat(name)
	if err != nil {
		return marker{}, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxMarkerBytes {
		return marker{}, fmt.Errorf("marker %s is not a small regular file", name)
	}
	b, err := root.ReadFile(name)
	if err != nil {
		return marker{}, err
	}
	var m marker
	if err := json.Unmarshal(b, &m); err != nil {
		return marker{}, fmt.Errorf("marker %s does not decode: %w", name, err)
	}
	if m.Format != markerFormat || m.Dir != dir {
		return marker{}, fmt.Errorf("marker %s is for %q (format %q), not for %s", name, m.Dir, m.Format, dir)
	}
	// A sweep of an earlier version wrote markers for directories under
	// their legacy names; the marker is the sweep's own record, so its
	// scope is trusted for either name.
	if err := m.Scope.Validate(); err != nil || (workspace.DirName(m.Scope.App, m.Scope.User, m.Scope.Session) != dir && workspace.LegacyDirName(m.Scope.User, m.Scope.Session) != dir) {
		return marker{}, fmt.Errorf("marker %s names a scope that does not hash to %s", name, dir)
	}
	switch m.Mode {
	case modeSnapshot:
		if m.Version < 0 || (m.Version == 0 && m.Digest == "" && m.Token == "") {
			return marker{}, fmt.Errorf("marker %s records no verified snapshot", name)
		}
	case modeDiscard, modeConflict:
	default:
		return marker{}, fmt.Errorf("marker %s has mode %q", name, m.Mode)
	}
	return m, nil
}

// removeMarker removes a marker and fsyncs the scratch root.
func removeMarker(root *os.Root, name string) error {
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncRoot(root)
}

// errConflict says a writer wrote into a tombstone while it was being
// removed.
var errConflict = errors.New("the workspace was written to while it was being removed")

// removeTree empties the tombstone open as dir (named name in the scratch
// root) and removes it. The index goes last: a session resuming work in
// the directory rewrites the index before it writes anything else, so an
// index that changed, or an entry that appeared, or a directory that is not
// empty at the final rmdir shows a writer (errConflict); once the
// directory is gone, a writer's creates fail instead of being lost.
func removeTree(root, dir *os.Root, name string, fp Fingerprint) error {
	names, err := listNames(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if n == workspace.IndexName {
			continue
		}
		if err := dir.RemoveAll(n); err != nil {
			return err
		}
	}
	fi, err := dir.Lstat(workspace.IndexName)
	if err != nil {
		return fmt.Errorf("%w: index: %v", errConflict, err)
	}
	if ino := osutil.Inode(fi); ino != fp.IndexIno || fi.Size() != fp.IndexSize || fi.ModTime().UnixNano() != fp.IndexMtime {
		return fmt.Errorf("%w: its index was rewritten", errConflict)
	}
	left, err := listNames(dir)
	if err != nil {
		return err
	}
	if len(left) != 1 {
		return fmt.Errorf("%w: %d new entries appeared", errConflict, len(left)-1)
	}
	if err := dir.Remove(workspace.IndexName); err != nil {
		return err
	}
	if err := root.Remove(name); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("%w: entries appeared at the last moment", errConflict)
		}
		return err
	}
	return syncRoot(root)
}

func listNames(dir *os.Root) ([]string, error) {
	d, err := dir.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// onlyReader hides WriterTo/ReaderFrom so io.CopyBuffer uses its buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// snapSummary is what a verified snapshot must list.
type snapSummary struct {
	Files   int
	Dirs    int
	Bytes   int64
	List    [32]byte
	Content [32]byte // zero: not checked
}

func summaryOf(fp Fingerprint) snapSummary {
	return snapSummary{Files: fp.SnapFiles, Dirs: fp.SnapDirs, Bytes: fp.SnapBytes, List: fp.SnapList, Content: fp.Content}
}

// verify reads version of the scope's snapshot back from the store: it
// streams the payload through the store's verifying Reader to its end into
// a temporary copy in the scratch root (the Reader reports a size or
// SHA-256 mismatch instead of EOF), checks the record's digest when one is
// expected, then reads the zip's central directory and checks it lists
// exactly the files, sizes and directories of want.
func verify(ctx context.Context, st *artifacts.Store, root *os.Root, scope artifacts.Scope, version int64, digest string, want snapSummary) (artifacts.Record, error) {
	rd, err := st.Get(ctx, scope, workspace.SnapshotName, version)
	if err != nil {
		return artifacts.Record{}, err
	}
	rec := rd.Record()
	if rec.Version != version || (digest != "" && rec.Digest != digest) {
		rd.Close()
		return rec, fmt.Errorf("the store returned v%d with digest %s, expected v%d with digest %s", rec.Version, rec.Digest, version, digest)
	}
	tmp := tempPrefix + token() + ".zip"
	f, err := root.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		rd.Close()
		return rec, err
	}
	defer func() {
		f.Close()
		root.Remove(tmp)
	}()
	n, err := io.CopyBuffer(f, onlyReader{rd}, make([]byte, 128<<10))
	rd.Close()
	if err != nil {
		return rec, err
	}
	if n != rec.Size {
		return rec, fmt.Errorf("read %d bytes, the record says %d", n, rec.Size)
	}
	zr, err := zip.NewReader(f, n)
	if err != nil {
		return rec, fmt.Errorf("the archive does not open: %w", err)
	}
	var got snapSummary
	entries := make([]snapEntry, 0, len(zr.File))
	seen := make(map[string]bool, len(zr.File))
	for _, zf := range zr.File {
		if seen[zf.Name] {
			return rec, fmt.Errorf("the archive lists %q twice", zf.Name)
		}
		seen[zf.Name] = true
		if strings.HasSuffix(zf.Name, "/") {
			got.Dirs++
			entries = append(entries, snapEntry{name: zf.Name})
			continue
		}
		got.Files++
		got.Bytes += int64(zf.UncompressedSize64)
		entries = append(entries, snapEntry{name: zf.Name, size: int64(zf.UncompressedSize64), crc: zf.CRC32})
	}
	got.List = hashSnapList(entries)
	if want.Content != [32]byte{} {
		got.Content = hashContent(entries)
	}
	if got != want {
		return rec, fmt.Errorf("the archive lists %d files, %d directories, %d bytes; the tree has %d files, %d directories, %d bytes (same names and sizes: %t, same checksums: %t)",
			got.Files, got.Dirs, got.Bytes, want.Files, want.Dirs, want.Bytes, got.List == want.List, got.Content == want.Content)
	}
	return rec, nil
}
