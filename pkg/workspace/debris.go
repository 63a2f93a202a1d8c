package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// hydratePrefix begins the temporary archive a hydration downloads into
// the scratch root: hydratePrefix + DIR + "-" + 16 hex digits + ".zip".
// Older versions wrote hydratePrefix + 16 hex digits + ".zip".
const hydratePrefix = ReservedPrefix + "hydrate-"

// hydrateTempName returns a fresh name for the archive of a hydration of
// the workspace directory dir.
func hydrateTempName(dir string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hydratePrefix + dir + "-" + hex.EncodeToString(b[:]) + ".zip"
}

// Kinds of Debris.
const (
	// DebrisArchive is a snapshot archive a hydration downloaded, or one
	// a snapshot spooled to check its size before putting it.
	DebrisArchive = "archive"
	// DebrisExtraction is a tree being extracted, or an old tree set
	// aside, by a hydration (".DIR.zipsafe-new-*", ".DIR.zipsafe-old-*").
	DebrisExtraction = "extraction"
)

// Debris is an entry of the scratch root that a hydration leaves while it
// runs and a killed hydration leaves behind.
type Debris struct {
	// Name is the entry's name in the scratch root.
	Name string
	// Dir is the workspace directory it belongs to; empty when its name
	// does not say.
	Dir string
	// Kind is DebrisArchive or DebrisExtraction.
	Kind string
	// ModTime is the entry's modification time.
	ModTime time.Time
	// Bytes and Files measure it.
	Bytes int64
	Files int
	// InProgress is true when a hydration holds it, or it is younger than
	// the grace period: it is left alone.
	InProgress bool
	// Removed is true when CleanDebris removed it.
	Removed bool
	// Err is why removing it failed.
	Err error
}

// debrisOf reports whether name, an entry of the scratch root, is a
// hydration's temporary entry, of which kind, and for which directory.
func debrisOf(name string) (dir, kind string, ok bool) {
	if rest, ok := strings.CutPrefix(name, hydratePrefix); ok && strings.HasSuffix(rest, ".zip") {
		rest = strings.TrimSuffix(rest, ".zip")
		if d, tok, found := strings.Cut(rest, "-"); found && IsDirName(d) && len(tok) == 16 {
			return d, DebrisArchive, true
		}
		return "", DebrisArchive, true
	}
	if rest, ok := strings.CutPrefix(name, "."); ok {
		for _, mark := range []string{".zipsafe-new-", ".zipsafe-old-"} {
			if d, _, found := strings.Cut(rest, mark); found {
				if !IsDirName(d) {
					d = ""
				}
				return d, DebrisExtraction, true
			}
		}
	}
	return "", "", false
}

// IsDebris reports whether name, an entry of the scratch root, is a
// temporary entry of a hydration (see CleanDebris).
func IsDebris(name string) bool {
	_, _, ok := debrisOf(name)
	return ok
}

// CleanDebris finds the temporary entries of hydrations in the scratch
// root: downloaded archives and trees being extracted or set aside. One
// that a running hydration holds (it locks its archive while it runs), or
// that changed within grace, is reported as InProgress and left alone;
// the others are removed, unless dry. The caller keeps other cleaners
// away (the sweep holds its lock). The result is sorted by name.
func (m *Manager) CleanDebris(ctx context.Context, grace time.Duration, dry bool) ([]Debris, error) {
	const op = "workspace clean debris"
	d, err := m.root.Open(".")
	if err != nil {
		return nil, osError(op, nil, m.scratch, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, osError(op, nil, m.scratch, err)
	}
	slices.Sort(names)
	now := m.opts.Now()
	var out []Debris
	for _, n := range names {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return out, err
		}
		dir, kind, ok := debrisOf(n)
		if !ok {
			continue
		}
		fi, err := m.root.Lstat(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, osError(op, nil, n, err)
		}
		db := Debris{Name: n, Dir: dir, Kind: kind, ModTime: fi.ModTime().UTC()}
		switch {
		case fi.Mode().IsRegular():
			db.Bytes, db.Files = fi.Size(), 1
		case fi.IsDir():
			if r, err := m.root.OpenRoot(n); err == nil {
				c, _ := measure(r)
				db.Bytes, db.Files = c.bytes, c.files
				r.Close()
			}
		}
		// An archive is removed while its lock is held, so that a hydration
		// that has just created it finds out (see fetchSnapshot).
		var lock *os.File
		switch {
		case now.Sub(fi.ModTime()) < grace:
			db.InProgress = true
		case kind == DebrisArchive:
			var held bool
			if lock, held = m.lockArchive(n); held {
				db.InProgress = true
			}
		case kind == DebrisExtraction && m.hydrating(dir):
			db.InProgress = true
		}
		if !db.InProgress && !dry {
			if err := m.root.RemoveAll(n); err != nil {
				db.Err = osError(op, nil, n, err)
			} else {
				db.Removed = true
			}
		}
		if lock != nil {
			lock.Close()
		}
		out = append(out, db)
	}
	if !dry && slices.ContainsFunc(out, func(d Debris) bool { return d.Removed }) {
		_ = syncDir(m.root, ".")
	}
	return out, nil
}

// hydrating reports whether a hydration of the workspace directory dir
// (any directory when dir is empty) is running: one of its archives is
// locked. It lists the scratch root afresh, after the caller saw the
// extraction it asks about: a running hydration created its archive
// before that and removes it only after the extraction is gone, so the
// listing holds it.
func (m *Manager) hydrating(dir string) bool {
	d, err := m.root.Open(".")
	if err != nil {
		return true
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return true
	}
	for _, n := range names {
		if adir, kind, ok := debrisOf(n); ok && kind == DebrisArchive && (dir == "" || adir == "" || adir == dir) && m.archiveHeld(n) {
			return true
		}
	}
	return false
}

// archiveHeld reports whether a running hydration holds the lock of the
// archive name in the scratch root.
func (m *Manager) archiveHeld(name string) bool {
	f, held := m.lockArchive(name)
	if f != nil {
		f.Close()
	}
	return held
}

// lockArchive takes the lock of the archive name in the scratch root
// without waiting: held is true when a running hydration holds it; else f
// (nil for what is not a regular file) holds it until closed.
func (m *Manager) lockArchive(name string) (f *os.File, held bool) {
	f, err := m.root.OpenFile(name, os.O_RDONLY|osutil.OpenNoFollow|osutil.OpenNonBlock, 0)
	if err != nil {
		return nil, false
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, false
	}
	got, err := osutil.TryLockExclusive(f)
	if err != nil || !got {
		f.Close()
		return nil, err == nil
	}
	return f, false
}
