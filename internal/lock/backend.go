package lock

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
)

// Backend keeps one lock: the narrow interface the lock contract (Acquire,
// heartbeat, takeover, Release, Inspect, Remove) is built on. Every
// conditional method changes the lock only if it is still exactly the
// Snapshot given (the compare-and-swap every takeover and removal relies
// on), and returns ErrChanged, changing nothing, otherwise. File is the
// filesystem backend; package gcslock has the Cloud Storage one.
type Backend interface {
	// Where names the lock for messages: a path, or a gs:// URL.
	Where() string
	// Create writes raw as a new lock with heartbeat now, only if no lock
	// exists; an existing lock is an error wrapping fs.ErrExist.
	Create(ctx context.Context, raw []byte, now time.Time) error
	// Read returns the lock as it is; no lock is an error wrapping
	// fs.ErrNotExist.
	Read(ctx context.Context) (Snapshot, error)
	// Touch renews the heartbeat of the lock held to now, if it is still
	// held, and returns the lock as it then is.
	Touch(ctx context.Context, held Snapshot, now time.Time) (Snapshot, error)
	// Replace writes raw with heartbeat now in place of the lock old, if
	// it is still old.
	Replace(ctx context.Context, old Snapshot, raw []byte, now time.Time) error
	// Remove deletes the lock s, if it is still s.
	Remove(ctx context.Context, s Snapshot) error
}

// Snapshot is a lock as a Backend read it.
type Snapshot struct {
	// Raw is the lock's bytes (JSON Info when it parses).
	Raw []byte
	// Heartbeat is when the holder last renewed the lock.
	Heartbeat time.Time
	// Version identifies exactly this state of the lock (for a file: its
	// identity, bytes and heartbeat; for an object: its generation); the
	// backend's conditional methods compare it.
	Version string
}

// ErrChanged is returned when a lock is no longer the one read before
// (refreshed, released or taken over since): nothing was changed.
var ErrChanged = errors.New("the lock changed since it was read")

// File returns the Backend of the lock file at path, whose directory must
// exist. The heartbeat is the file's modification time. A takeover writes
// a new file beside the stale one and renames it over the stale one only
// after reading the stale one again and finding it unchanged; two
// processes taking over the same stale lock in the same instant could both
// succeed, and the loser finds out at its next heartbeat.
func File(path string) Backend { return fileBackend(path) }

type fileBackend string

func (f fileBackend) Where() string { return string(f) }

func (f fileBackend) Create(_ context.Context, raw []byte, now time.Time) error {
	if err := createExclusive(string(f), raw); err != nil {
		return err
	}
	return os.Chtimes(string(f), now, now)
}

func (f fileBackend) Read(context.Context) (Snapshot, error) {
	var s Snapshot
	path := string(f)
	// A named pipe or symbolic link planted as the lock file is refused
	// unread instead of hanging every later run.
	fh, err := osutil.OpenRegular(path)
	if err != nil {
		return s, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return s, err
	}
	buf := make([]byte, 64<<10)
	n, err := fh.Read(buf)
	if err != nil && n == 0 && fi.Size() > 0 {
		return s, err
	}
	s.Raw = buf[:n]
	s.Heartbeat = fi.ModTime()
	sum := sha256.Sum256(s.Raw)
	s.Version = fmt.Sprintf("%x:%d:%d:%d:%d", sum, fi.Size(), fi.ModTime().UnixNano(), osutil.Device(fi), osutil.Inode(fi))
	return s, nil
}

// still reads the lock file again and returns ErrChanged unless it is s.
func (f fileBackend) still(ctx context.Context, s Snapshot) error {
	again, err := f.Read(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrChanged
	}
	if err != nil {
		return err
	}
	if again.Version != s.Version || !bytes.Equal(again.Raw, s.Raw) {
		return ErrChanged
	}
	return nil
}

func (f fileBackend) Touch(ctx context.Context, held Snapshot, now time.Time) (Snapshot, error) {
	if err := f.still(ctx, held); err != nil {
		return Snapshot{}, err
	}
	if err := os.Chtimes(string(f), now, now); err != nil {
		return Snapshot{}, err
	}
	return f.Read(ctx)
}

func (f fileBackend) Replace(ctx context.Context, old Snapshot, raw []byte, now time.Time) error {
	path := string(f)
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	tmp := path + ".new-" + hex.EncodeToString(tok[:])
	if err := createExclusive(tmp, raw); err != nil {
		return err
	}
	if err := os.Chtimes(tmp, now, now); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := f.still(ctx, old); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return osutil.SyncDir(filepath.Dir(path))
}

func (f fileBackend) Remove(ctx context.Context, s Snapshot) error {
	if err := f.still(ctx, s); err != nil {
		return err
	}
	if err := os.Remove(string(f)); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ErrChanged
		}
		return err
	}
	return osutil.SyncDir(filepath.Dir(string(f)))
}

// createExclusive creates path with O_EXCL, writes b and syncs the file
// and its directory.
func createExclusive(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return err
	}
	return osutil.SyncDir(filepath.Dir(path))
}
