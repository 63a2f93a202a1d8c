// Package lock is the one lock contract of every maintenance run (fs
// repair, artifacts prune, ws sweep, ws delete, unlock): it keeps two runs
// off one store or scratch root at a time.
//
// A lock is one small JSON document (see Info) kept by a Backend: a file
// (File, created with O_EXCL) or a Cloud Storage object (package
// gcslock, created with a DoesNotExist precondition). It records the host,
// user, process id, start time and purpose of its holder. Its heartbeat
// is renewed by the holder every RefreshInterval (default one minute): the
// file's modification time, or the object's heartbeat metadata rewritten
// on the condition that the object is still the generation the holder
// read. A lock is stale, and may be taken over, when
//   - its heartbeat is older than StaleAfter (default DefaultStaleAfter, six
//     hours), never judged by when it was created, or
//   - it was written on this host and its process is gone (kill(pid, 0)
//     fails with ESRCH), or
//   - it does not parse (an acquire interrupted between the create and the
//     write, or a damaged lock) and its heartbeat is older than a minute.
//
// A takeover replaces the stale lock only if it is still exactly the lock
// that was judged stale (compare-and-swap: the same file, bytes and
// heartbeat; the same object generation). The holder whose lock was taken
// over, removed, or whose heartbeat could not be written finds out at its
// next heartbeat (which checks the lock still holds its token): its
// Context is cancelled with a cause wrapping ErrLost. Release removes the
// lock only if it still holds the holder's token, so a holder never
// removes the lock of whoever took it over.
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
	"sync"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
)

// DefaultStaleAfter is how long a lock whose heartbeat stopped is respected
// before it may be taken over.
const DefaultStaleAfter = 6 * time.Hour

// DefaultRefreshInterval is how often a held lock's heartbeat is renewed.
const DefaultRefreshInterval = time.Minute

// StoreLockName is the name of a store's maintenance lock: the file in the
// root of a filesystem store (beside v1/ or scope-shards/), the object
// below the prefix of a Cloud Storage store (beside PREFIX/v1/s/ or the
// ADK app prefixes), where no scan or listing of the layout meets it.
const StoreLockName = ".agentstore-repair.lock"

// unparsableStaleAfter is how long a lock that does not parse is
// respected: long enough for its creator to finish writing it.
const unparsableStaleAfter = time.Minute

// callTimeout bounds each backend call of the background heartbeat and of
// Release, which do not run under the holder's context.
const callTimeout = time.Minute

// Info is what a lock holds (as JSON).
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
	// Refreshed is the heartbeat; it is filled in when a lock is read,
	// never stored in the lock's bytes.
	Refreshed time.Time `json:"-"`
}

// Options configure Acquire. The zero value gives the defaults. Both
// backends take the same options.
type Options struct {
	// Purpose is recorded in the lock.
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
	// Now is the clock (default time.Now). Heartbeats are written with it
	// and staleness is judged with it.
	Now func() time.Time
}

func (o Options) normalized() Options {
	if o.StaleAfter <= 0 {
		o.StaleAfter = DefaultStaleAfter
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// HeldError is returned by Acquire when another holder has the lock. Its
// ErrorCode is "locked" (exit status 5 on the command line).
type HeldError struct {
	// Path is where the lock is (Backend.Where): a file or a gs:// URL.
	Path string
	// Holder is what the lock says; zero when it did not parse.
	Holder Info
}

// Error describes the lock and its holder.
func (e *HeldError) Error() string {
	h := e.Holder
	if h.PID == 0 {
		return fmt.Sprintf("%s is locked (holder unknown: the lock is being written or is damaged)", e.Path)
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
// not be refreshed or was taken over or removed by someone else.
var ErrLost = errors.New("lock lost")

// Lock is a held lock. Release it when done.
type Lock struct {
	b    Backend
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

// Acquire takes the lock file at path, taking over a stale one (see File
// and AcquireBackend). The directory of path must exist.
func Acquire(path string, opts Options) (*Lock, error) {
	return AcquireBackend(context.Background(), File(path), opts)
}

// AcquireBackend takes the lock b keeps, taking over a stale one. When the
// lock is held it returns a *HeldError and changes nothing. ctx bounds the
// acquisition only: the background heartbeat and Release run on their own.
func AcquireBackend(ctx context.Context, b Backend, opts Options) (*Lock, error) {
	opts = opts.normalized()
	info := newInfo(opts)
	raw, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	raw = append(raw, '\n')
	where := b.Where()
	l := &Lock{b: b, info: info, opts: opts, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	for attempt := 0; ; attempt++ {
		err := b.Create(ctx, raw, opts.Now())
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, wrapErr(where, "", err)
		}
		cur, err := read(ctx, b)
		if errors.Is(err, fs.ErrNotExist) && attempt < 3 {
			continue // released meanwhile: try again
		}
		if err != nil {
			return nil, wrapErr(where, "", err)
		}
		if !cur.stale(opts) {
			return nil, &HeldError{Path: where, Holder: cur.info}
		}
		prev := cur.state(b, opts)
		l.tookOver = &prev
		if err := b.Replace(ctx, cur.snap, raw, opts.Now()); err != nil {
			if errors.Is(err, ErrChanged) && attempt < 3 {
				l.tookOver = nil
				continue
			}
			if errors.Is(err, ErrChanged) {
				return nil, &HeldError{Path: where, Holder: cur.info}
			}
			return nil, wrapErr(where, "taking over a stale lock", err)
		}
		break
	}
	// Whoever wrote last owns the lock: make sure that is us.
	if _, err := l.check(ctx); err != nil {
		var held *HeldError
		if errors.As(err, &held) {
			return nil, err
		}
		return nil, wrapErr(where, "", err)
	}
	l.progress = opts.Now()
	if opts.RefreshInterval > 0 {
		go l.refresher()
	} else {
		close(l.done)
	}
	return l, nil
}

// wrapErr says which lock an error of its backend is about, unless the
// error already names it.
func wrapErr(where, doing string, err error) error {
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) && !errors.Is(err, fs.ErrNotExist) {
		return err // a backend's classified error names the lock already
	}
	if doing != "" {
		return fmt.Errorf("lock %s: %s: %w", where, doing, err)
	}
	return fmt.Errorf("lock %s: %w", where, err)
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

// Path returns where the lock is (the backend's Where).
func (l *Lock) Path() string { return l.b.Where() }

// Info returns what the lock says about this holder.
func (l *Lock) Info() Info { return l.info }

// Lost is closed when the lock is lost: a refresh failed or the lock no
// longer holds this holder's token.
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Context returns a context derived from parent that is cancelled, with
// cause Err (wrapping ErrLost), when the lock is lost. Call the cancel
// function when done.
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
			l.lostErr = fmt.Errorf("%w: %s: %w", ErrLost, l.b.Where(), err)
		} else {
			l.lostErr = fmt.Errorf("%w: %s: %v", ErrLost, l.b.Where(), err)
		}
		close(l.lost)
	}
}

// Refresh checks that the lock still holds this holder's token and renews
// its heartbeat, on the condition that the lock is still the one just
// read. On failure the lock is marked lost (see Lost and Context) and the
// error is returned.
func (l *Lock) Refresh() error {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return l.refresh(ctx)
}

func (l *Lock) refresh(ctx context.Context) error {
	l.mu.Lock()
	released, lostErr := l.released, l.lostErr
	l.mu.Unlock()
	if released {
		return fmt.Errorf("lock %s: already released", l.b.Where())
	}
	if lostErr != nil {
		return lostErr
	}
	cur, err := l.check(ctx)
	if err == nil {
		_, err = l.b.Touch(ctx, cur.snap, l.opts.Now())
	}
	if errors.Is(err, ErrChanged) {
		err = errors.New("the lock was replaced or removed by someone else")
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

// check reads the lock and makes sure it holds this holder's token.
func (l *Lock) check(ctx context.Context) (current, error) {
	cur, err := read(ctx, l.b)
	if err != nil {
		return cur, err
	}
	if cur.info.Token != l.info.Token {
		return cur, &HeldError{Path: l.b.Where(), Holder: cur.info}
	}
	return cur, nil
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

// Release stops the refresh and removes the lock if it still holds this
// holder's token (never the lock of whoever took it over). Calling it
// again does nothing.
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
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cur, err := l.check(ctx)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("lock %s: not removed: %w", l.b.Where(), err)
	}
	if err := l.b.Remove(ctx, cur.snap); err != nil {
		if errors.Is(err, ErrChanged) {
			return fmt.Errorf("lock %s: not removed: it changed while it was being released", l.b.Where())
		}
		return wrapErr(l.b.Where(), "releasing", err)
	}
	return nil
}

// current is a lock as read.
type current struct {
	snap   Snapshot
	info   Info
	parsed bool
}

// read reads the lock b keeps and parses it.
func read(ctx context.Context, b Backend) (current, error) {
	var c current
	snap, err := b.Read(ctx)
	if err != nil {
		return c, err
	}
	c.snap = snap
	c.parsed = json.Unmarshal(bytes.TrimSpace(snap.Raw), &c.info) == nil && c.info.PID > 0 && c.info.Token != ""
	if !c.parsed {
		c.info = Info{}
	}
	c.info.Refreshed = snap.Heartbeat
	return c, nil
}

// stale decides whether a lock may be taken over, from its heartbeat.
func (c current) stale(opts Options) bool {
	age := opts.Now().Sub(c.snap.Heartbeat)
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
