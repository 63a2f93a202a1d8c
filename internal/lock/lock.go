// Package lock is the lock file that keeps two maintenance runs (fs repair,
// ws sweep) off one store or scratch root at a time.
//
// A lock is one small JSON file (see Info) created with O_EXCL. It records
// the host, user, process id, start time and purpose of its holder, and
// its modification time is the holder's heartbeat: while held, a goroutine
// touches it every RefreshInterval (default one minute). A lock is stale,
// and may be taken over, when
//   - its heartbeat is older than StaleAfter (default DefaultStaleAfter, six
//     hours), or
//   - it was written on this host and its process is gone (kill(pid, 0)
//     fails with ESRCH), or
//   - it does not parse (an acquire interrupted between the create and the
//     write) and is older than a minute.
//
// A takeover writes a new lock file beside the stale one and renames it over
// the stale one only after reading the stale one again and finding it
// unchanged (same file, same bytes, same heartbeat). Two processes taking
// over the same stale lock in the same instant could both succeed; the
// loser finds out at its next refresh (which checks the file still holds
// its token) and its context is cancelled.
package lock

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
)

// DefaultStaleAfter is how long a lock whose heartbeat stopped is respected
// before it may be taken over.
const DefaultStaleAfter = 6 * time.Hour

// DefaultRefreshInterval is how often a held lock's heartbeat is renewed.
const DefaultRefreshInterval = time.Minute

// unparsableStaleAfter is how long a lock file that does not parse is
// respected: long enough for its creator to finish writing it.
const unparsableStaleAfter = time.Minute

// Info is what a lock file holds (as JSON).
type Info struct {
	// Host is the holder's host name.
	Host string `json:"host"`
	// PID is the holder's process id.
	PID int `json:"pid"`
	// User is the holder's user name, when known.
	User string `json:"user,omitempty"`
	// Started is when the lock was taken.
	Started time.Time `json:"started"`
	// Purpose says what the holder is doing ("fs repair").
	Purpose string `json:"purpose"`
	// Token is random and identifies this acquisition.
	Token string `json:"token"`
	// Refreshed is the heartbeat, the lock file's modification time; it is
	// filled in when a lock is read, never stored.
	Refreshed time.Time `json:"-"`
}

// Options configure Acquire. The zero value gives the defaults.
type Options struct {
	// Purpose is recorded in the lock file.
	Purpose string
	// StaleAfter is how old a heartbeat may get before the lock is stale
	// (default DefaultStaleAfter).
	StaleAfter time.Duration
	// RefreshInterval is how often the holder renews the heartbeat
	// (default DefaultRefreshInterval). Negative turns the background
	// refresh off (call Refresh yourself).
	RefreshInterval time.Duration
	// StallAfter, when positive, ties the background refresh to the
	// holder's progress: once Progress has not been called for
	// StallAfter, the refresher stops renewing the heartbeat and marks the
	// lock lost (cancelling its Context). A holder stuck in a call that
	// never returns then leaves a lock that goes stale StaleAfter later,
	// instead of keeping every later run out forever.
	StallAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// HeldError is returned by Acquire when another holder has the lock. Its
// ErrorCode is "locked" (exit status 5 on the command line).
type HeldError struct {
	// Path is the lock file.
	Path string
	// Holder is what the lock file says; zero when it did not parse.
	Holder Info
}

// Error describes the lock and its holder.
func (e *HeldError) Error() string {
	h := e.Holder
	if h.PID == 0 {
		return fmt.Sprintf("%s is locked (holder unknown: the lock file is being written or is damaged)", e.Path)
	}
	msg := fmt.Sprintf("%s is locked by %s (pid %d on %s", e.Path, h.Purpose, h.PID, h.Host)
	if h.User != "" {
		msg += fmt.Sprintf(", user %q", h.User)
	}
	msg += ") since " + h.Started.UTC().Format(time.RFC3339)
	if !h.Refreshed.IsZero() {
		msg += ", last refreshed " + h.Refreshed.UTC().Format(time.RFC3339)
	}
	return msg
}

// ErrorCode returns "locked".
func (e *HeldError) ErrorCode() string { return "locked" }

// ErrLost is the cause of the context cancellation when a held lock could
// not be refreshed or was taken over by someone else.
var ErrLost = errors.New("lock lost")

// Lock is a held lock. Release it when done.
type Lock struct {
	path string
	info Info
	opts Options

	// tookOver describes the stale lock this acquisition replaced.
	tookOver *State

	mu       sync.Mutex
	progress time.Time // last Progress, for StallAfter
	released bool
	lostErr  error
	lost     chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

// Acquire takes the lock file at path, taking over a stale one. When the
// lock is held it returns a *HeldError and changes nothing. The directory
// of path must exist.
func Acquire(path string, opts Options) (*Lock, error) {
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	if opts.RefreshInterval == 0 {
		opts.RefreshInterval = DefaultRefreshInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	info := newInfo(opts)
	b, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	l := &Lock{path: path, info: info, opts: opts, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	for attempt := 0; ; attempt++ {
		err := createExclusive(path, b)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		cur, err := read(path)
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue // released meanwhile: try again
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !cur.stale(opts) {
			return nil, &HeldError{Path: path, Holder: cur.info}
		}
		prev := State{Path: path, Exists: true, Holder: cur.info, Parsed: cur.parsed, Refreshed: cur.fi.ModTime(), Stale: true, Why: why(cur, opts, true)}
		prev.Holder.Refreshed = time.Time{}
		l.tookOver = &prev
		if err := takeOver(path, cur, b); err != nil {
			if errors.Is(err, errChanged) && attempt < 3 {
				l.tookOver = nil
				continue
			}
			if errors.Is(err, errChanged) {
				return nil, &HeldError{Path: path, Holder: cur.info}
			}
			return nil, fmt.Errorf("lock %s: taking over a stale lock: %w", path, err)
		}
		break
	}
	// Whoever wrote last owns the file: make sure that is us.
	if err := l.check(); err != nil {
		var held *HeldError
		if errors.As(err, &held) {
			return nil, err
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	l.progress = opts.Now()
	if opts.RefreshInterval > 0 {
		go l.refresher()
	} else {
		close(l.done)
	}
	return l, nil
}

func newInfo(opts Options) Info {
	host, _ := os.Hostname()
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	return Info{
		Host:    host,
		PID:     os.Getpid(),
		User:    name,
		Started: opts.Now().UTC().Truncate(time.Millisecond),
		Purpose: opts.Purpose,
		Token:   hex.EncodeToString(tok[:]),
	}
}

// TookOver returns the stale lock this acquisition took over, with why it
// was stale; ok is false when the lock was free. Callers log it, so that
// every takeover leaves a trace.
func (l *Lock) TookOver() (prev State, ok bool) {
	if l.tookOver == nil {
		return State{}, false
	}
	return *l.tookOver, true
}

// Path returns the lock file.
func (l *Lock) Path() string { return l.path }

// Info returns what the lock file says about this holder.
func (l *Lock) Info() Info { return l.info }

// Lost is closed when the lock is lost: a refresh failed or the file no
// longer holds this holder's token.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Context returns a context derived from parent that is cancelled, with
// cause ErrLost, when the lock is lost. Call the cancel function when done.
func (l *Lock) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-l.lost:
			cancel(l.Err())
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// Err returns why the lock was lost (wrapping ErrLost), or nil.
func (l *Lock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

func (l *Lock) markLost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lostErr == nil {
		if errors.Is(err, ErrStalled) {
			l.lostErr = fmt.Errorf("%w: %s: %w", ErrLost, l.path, err)
		} else {
			l.lostErr = fmt.Errorf("%w: %s: %v", ErrLost, l.path, err)
		}
		close(l.lost)
	}
}

// Refresh checks that the lock file still holds this holder's token and
// renews its heartbeat. On failure the lock is marked lost (see Lost and
// Context) and the error is returned.
func (l *Lock) Refresh() error {
	l.mu.Lock()
	released, lostErr := l.released, l.lostErr
	l.mu.Unlock()
	if released {
		return fmt.Errorf("lock %s: already released", l.path)
	}
	if lostErr != nil {
		return lostErr
	}
	err := l.check()
	if err == nil {
		now := l.opts.Now()
		err = os.Chtimes(l.path, now, now)
	}
	if err != nil {
		l.markLost(err)
		return l.Err()
	}
	return nil
}

// Progress tells the lock its holder is still making progress (see
// Options.StallAfter). It is cheap: call it from a progress callback.
func (l *Lock) Progress() {
	now := l.opts.Now()
	l.mu.Lock()
	l.progress = now
	l.mu.Unlock()
}

// ErrStalled is wrapped by Err when the lock was given up because its
// holder showed no progress for Options.StallAfter.
var ErrStalled = errors.New("no progress")

// stalled reports whether the holder has shown no progress for StallAfter.
func (l *Lock) stalled() bool {
	if l.opts.StallAfter <= 0 {
		return false
	}
	l.mu.Lock()
	last := l.progress
	l.mu.Unlock()
	return l.opts.Now().Sub(last) > l.opts.StallAfter
}

// check reads the lock file and makes sure it holds this holder's token.
func (l *Lock) check() error {
	cur, err := read(l.path)
	if err != nil {
		return err
	}
	if cur.info.Token != l.info.Token {
		return &HeldError{Path: l.path, Holder: cur.info}
	}
	return nil
}

func (l *Lock) refresher() {
	defer close(l.done)
	t := time.NewTicker(l.opts.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if l.stalled() {
				// Stop renewing: the heartbeat ages and the lock goes stale.
				l.markLost(fmt.Errorf("%w for %s: the heartbeat is no longer renewed", ErrStalled, l.opts.StallAfter))
				return
			}
			if l.Refresh() != nil {
				return
			}
		}
	}
}

// Release stops the refresh and removes the lock file if it still holds
// this holder's token. Calling it again does nothing.
func (l *Lock) Release() error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return nil
	}
	l.released = true
	l.mu.Unlock()
	if l.opts.RefreshInterval > 0 {
		close(l.stop)
	}
	<-l.done
	if err := l.check(); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("lock %s: not removed: %w", l.path, err)
	}
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return osutil.SyncDir(filepath.Dir(l.path))
}

// current is a lock file as read.
type current struct {
	raw    []byte
	fi     os.FileInfo
	info   Info
	parsed bool
}

func read(path string) (current, error) {
	var c current
	// A named pipe or symbolic link planted as the lock file is refused
	// unread instead of hanging every later run.
	f, err := osutil.OpenRegular(path)
	if err != nil {
		return c, err
	}
	defer f.Close()
	if c.fi, err = f.Stat(); err != nil {
		return c, err
	}
	buf := make([]byte, 64<<10)
	n, err := f.Read(buf)
	if err != nil && n == 0 && c.fi.Size() > 0 {
		return c, err
	}
	c.raw = buf[:n]
	c.parsed = json.Unmarshal(bytes.TrimSpace(c.raw), &c.info) == nil && c.info.PID > 0 && c.info.Token != ""
	if !c.parsed {
		c.info = Info{}
	}
	c.info.Refreshed = c.fi.ModTime()
	return c, nil
}

// stale decides whether a lock may be taken over.
func (c current) stale(opts Options) bool {
	age := opts.Now().Sub(c.fi.ModTime())
	if !c.parsed {
		return age > min(unparsableStaleAfter, opts.StaleAfter)
	}
	if age > opts.StaleAfter {
		return true
	}
	if host, err := os.Hostname(); err == nil && host == c.info.Host {
		return processGone(c.info.PID)
	}
	return false
}

// processGone reports whether no process has the id pid on this host.
func processGone(pid int) bool {
	if pid <= 0 {
		return true
	}
	return osutil.ProcessGone(pid)
}

var errChanged = errors.New("the stale lock changed while it was being taken over")

// takeOver replaces the stale lock old at path with a new file holding b,
// only if path still is old.
func takeOver(path string, old current, b []byte) error {
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	tmp := path + ".new-" + hex.EncodeToString(tok[:])
	if err := createExclusive(tmp, b); err != nil {
		return err
	}
	again, err := read(path)
	if err != nil || !os.SameFile(again.fi, old.fi) || !again.fi.ModTime().Equal(old.fi.ModTime()) || !bytes.Equal(again.raw, old.raw) {
		os.Remove(tmp)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return errChanged
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return osutil.SyncDir(filepath.Dir(path))
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
