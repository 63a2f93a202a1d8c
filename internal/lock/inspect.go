package lock

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
)

// State is what Inspect found at a lock path.
type State struct {
	// Path is the lock file.
	Path string `json:"path"`
	// Exists is false when there is no lock file.
	Exists bool `json:"exists"`
	// Holder is what the lock file says; zero when it does not parse.
	Holder Info `json:"holder"`
	// Parsed is false for a lock file that does not parse (damaged, or
	// being written).
	Parsed bool `json:"parsed"`
	// Refreshed is the heartbeat, the file's modification time.
	Refreshed time.Time `json:"refreshed"`
	// Stale says whether Acquire would take the lock over, and Why says
	// why it is or is not stale.
	Stale bool   `json:"stale"`
	Why   string `json:"why"`
	// Digest is the SHA-256 of the lock file's bytes, with its size and
	// modification time: it identifies this very lock for Remove.
	Digest string `json:"digest"`

	cur current
}

// Inspect reads the lock file at path and decides, as Acquire would,
// whether it is stale. A missing lock file is State{Exists: false}.
func Inspect(path string, opts Options) (State, error) {
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	st := State{Path: path}
	cur, err := read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.Exists, st.Parsed, st.Holder, st.Refreshed, st.cur = true, cur.parsed, cur.info, cur.fi.ModTime(), cur
	st.Holder.Refreshed = time.Time{}
	st.Stale = cur.stale(opts)
	st.Digest = fmt.Sprintf("%x:%d:%d", sha256Sum(cur.raw), cur.fi.Size(), cur.fi.ModTime().UnixNano())
	st.Why = why(cur, opts, st.Stale)
	return st, nil
}

// why says why the lock file cur is, or is not, stale.
func why(cur current, opts Options, stale bool) string {
	age := opts.Now().Sub(cur.fi.ModTime()).Round(time.Second)
	host, _ := os.Hostname()
	switch {
	case !cur.parsed && stale:
		return fmt.Sprintf("it does not parse (damaged) and is %s old", age)
	case !cur.parsed:
		return fmt.Sprintf("it does not parse and is only %s old: its holder may still be writing it", age)
	case age > opts.StaleAfter:
		return fmt.Sprintf("its heartbeat stopped %s ago (stale after %s)", age, opts.StaleAfter)
	case cur.info.Host == host && stale:
		return fmt.Sprintf("process %d is gone from this host", cur.info.PID)
	case cur.info.Host == host:
		return fmt.Sprintf("process %d is running on this host and refreshed the lock %s ago", cur.info.PID, age)
	}
	return fmt.Sprintf("it was taken on host %s, whose processes cannot be checked from here, and refreshed %s ago (stale after %s)", cur.info.Host, age, opts.StaleAfter)
}

// ErrChanged is returned by Remove when the lock file is no longer the one
// Inspect saw (refreshed, released or taken over since).
var ErrChanged = errors.New("the lock file changed since it was inspected")

// Remove deletes the lock file st describes, only if it is still that very
// file with the same bytes and heartbeat; otherwise it returns ErrChanged
// and removes nothing.
func Remove(st State) error {
	if !st.Exists {
		return nil
	}
	again, err := read(st.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrChanged
	}
	if err != nil {
		return err
	}
	if !os.SameFile(again.fi, st.cur.fi) || !again.fi.ModTime().Equal(st.cur.fi.ModTime()) || !bytes.Equal(again.raw, st.cur.raw) {
		return ErrChanged
	}
	if err := os.Remove(st.Path); err != nil {
		return err
	}
	return osutil.SyncDir(filepath.Dir(st.Path))
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
