package mcpfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
)

// readFS is what every route offers: reading. rel is a cleaned path
// relative to the route, "." for its top.
type readFS interface {
	stat(ctx context.Context, rel string) (fs.FileInfo, error)
	list(ctx context.Context, rel string) ([]fs.FileInfo, error)
	// readDir is list without sizes and times: names and types only.
	readDir(ctx context.Context, rel string) ([]fs.DirEntry, error)
	// eachEntry is readDir without a value per entry: fn sees each
	// entry's name (valid only during the call) and type, in name order.
	eachEntry(ctx context.Context, rel string, fn func(name []byte, typ fs.FileMode)) error
	open(ctx context.Context, rel string) (handle, error)
}

// writeFS is what the writable routes add.
type writeFS interface {
	readFS
	write(ctx context.Context, rel string, data []byte) error
	appendTo(ctx context.Context, rel string, data []byte) error
	mkdir(ctx context.Context, rel string) error
	remove(ctx context.Context, rel string) error
	rename(ctx context.Context, from, to string) error
}

// handle is an open regular file.
type handle interface {
	io.ReadCloser
	size() int64
}

// target is a resolved path: its route, the path below it and the path as
// the client sees it.
type target struct {
	route string // RouteWorkspace, ...
	rel   string
	vpath string
	fs    readFS
}

func (t target) writer() (writeFS, error) {
	if w, ok := t.fs.(writeFS); ok {
		return w, nil
	}
	return nil, artifacts.Errorf(artifacts.CodePermission, "mcp", nil, "%s is read-only", t.route)
}

// errNotAllowed is the error of a path outside every route.
func errNotAllowed(p string) error {
	return artifacts.Errorf(artifacts.CodePermission, "mcp", nil, "access denied: %s is outside the allowed directories (%s)", p, "call list_allowed_directories")
}

// resolve routes a client path. A relative path is relative to
// /workspace. The path is cleaned first, so ".." never leaves a route:
// "/workspace/../etc" is "/etc", outside every route.
func (c *call) resolve(p string) (target, error) {
	bad := func(format string, args ...any) (target, error) {
		return target{}, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, format, args...)
	}
	switch {
	case p == "":
		return bad("empty path")
	case strings.IndexByte(p, 0) >= 0:
		return bad("path %q contains NUL", p)
	case len(p) > 4096:
		return bad("path is longer than 4096 bytes")
	}
	if i := strings.Index(p, "://"); i > 0 && !strings.Contains(p[:i], "/") {
		return bad("%q is a URI; give a path such as /workspace/notes.md", p)
	}
	if strings.HasPrefix(p, "~") {
		return bad("path %q: ~ is not expanded; use /workspace, /reference or /memory", p)
	}
	if !strings.HasPrefix(p, "/") {
		p = RouteWorkspace + "/" + p
	}
	p = path.Clean(p)
	for _, r := range c.routes() {
		if p != r.route && !strings.HasPrefix(p, r.route+"/") {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, r.route), "/")
		if rel == "" {
			rel = "."
		}
		r.rel, r.vpath = rel, p
		return r, nil
	}
	return target{}, errNotAllowed(p)
}

// routes returns the configured routes.
func (c *call) routes() []target {
	out := []target{{route: RouteWorkspace, fs: &wsFS{c: c}}}
	if ref := c.s.opts.Manager.Reference(); ref != nil {
		out = append(out, target{route: RouteReference, fs: refFS{ref}})
	}
	if c.s.opts.Memory != nil {
		out = append(out, target{route: RouteMemory, fs: &memFS{c: c}})
	}
	return out
}

// ---- /workspace

// wsFS is the session's workspace, opened (and hydrated) on first touch.
type wsFS struct{ c *call }

func (w *wsFS) ws(ctx context.Context) (*workspace.Workspace, error) {
	if w.c.ws != nil {
		return w.c.ws, nil // opened (and checked) earlier in this call
	}
	ws, err := w.c.s.opts.Manager.Open(ctx, w.c.ss.scope)
	if err != nil {
		return nil, err
	}
	w.c.ss.markOpened()
	w.c.ws = ws
	return ws, nil
}

func (w *wsFS) stat(ctx context.Context, rel string) (fs.FileInfo, error) {
	ws, err := w.ws(ctx)
	if err != nil {
		return nil, err
	}
	return ws.Stat(rel)
}

func (w *wsFS) list(ctx context.Context, rel string) ([]fs.FileInfo, error) {
	ws, err := w.ws(ctx)
	if err != nil {
		return nil, err
	}
	return ws.List(rel)
}

func (w *wsFS) readDir(ctx context.Context, rel string) ([]fs.DirEntry, error) {
	ws, err := w.ws(ctx)
	if err != nil {
		return nil, err
	}
	return ws.ReadDir(rel)
}

func (w *wsFS) eachEntry(ctx context.Context, rel string, fn func(name []byte, typ fs.FileMode)) error {
	ws, err := w.ws(ctx)
	if err != nil {
		return err
	}
	return ws.EachEntry(rel, fn)
}

func (w *wsFS) open(ctx context.Context, rel string) (handle, error) {
	ws, err := w.ws(ctx)
	if err != nil {
		return nil, err
	}
	f, err := ws.Open(rel)
	if err != nil {
		return nil, err
	}
	return singleLink(f, rel)
}

// singleLink refuses a file with more than one hard link: one end may be
// outside the workspace, and the tools serve only files the workspace
// owns.
func singleLink(f *workspace.File, rel string) (handle, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if n, ok := osutil.Links(fi); ok && n > 1 {
		f.Close()
		return nil, artifacts.Errorf(artifacts.CodePermission, "mcp", nil, "%q has %d hard links; a file linked from elsewhere is not served", rel, n)
	}
	return fileHandle{f, fi.Size()}, nil
}

// checkLinks refuses to append to a file with more than one hard link.
func (w *wsFS) checkLinks(ctx context.Context, rel string) error {
	h, err := w.open(ctx, rel)
	if err != nil {
		if artifacts.IsNotFound(err) {
			return nil
		}
		return err
	}
	return h.Close()
}

func (w *wsFS) write(ctx context.Context, rel string, data []byte) error {
	ws, err := w.ws(ctx)
	if err != nil {
		return err
	}
	return ws.Write(ctx, rel, data)
}

func (w *wsFS) appendTo(ctx context.Context, rel string, data []byte) error {
	ws, err := w.ws(ctx)
	if err != nil {
		return err
	}
	if err := w.checkLinks(ctx, rel); err != nil {
		return err
	}
	return ws.Append(ctx, rel, data)
}

func (w *wsFS) mkdir(ctx context.Context, rel string) error {
	ws, err := w.ws(ctx)
	if err != nil {
		return err
	}
	return ws.Mkdir(ctx, rel)
}

func (w *wsFS) remove(ctx context.Context, rel string) error {
	ws, err := w.ws(ctx)
	if err != nil {
		return err
	}
	return ws.Remove(ctx, rel)
}

func (w *wsFS) rename(ctx context.Context, from, to string) error {
	ws, err := w.ws(ctx)
	if err != nil {
		return err
	}
	return ws.Rename(ctx, from, to)
}

// fileHandle is a confined *workspace.File.
type fileHandle struct {
	*workspace.File
	n int64
}

func (f fileHandle) size() int64 { return f.n }

// ---- /reference

// refFS is the operator's reference tree. It has no write methods.
type refFS struct{ r *workspace.Reference }

func (r refFS) stat(_ context.Context, rel string) (fs.FileInfo, error) { return r.r.Stat(rel) }

func (r refFS) list(_ context.Context, rel string) ([]fs.FileInfo, error) { return r.r.List(rel) }

func (r refFS) readDir(_ context.Context, rel string) ([]fs.DirEntry, error) {
	return r.r.ReadDir(rel)
}

func (r refFS) eachEntry(_ context.Context, rel string, fn func(name []byte, typ fs.FileMode)) error {
	return r.r.EachEntry(rel, fn)
}

func (r refFS) open(_ context.Context, rel string) (handle, error) {
	f, err := r.r.Open(rel)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return fileHandle{f, fi.Size()}, nil
}

// ---- /memory

// memFS is the user's long-term memory: one artifact per file in the
// user scope; directories are the names' slash-separated prefixes. A
// file's artifact name is its path below /memory behind the layout's
// user-scope prefix (Capabilities.UserNamePrefix, "user:" on Google ADK's
// layouts), which the route adds and removes: the model never sees it.
type memFS struct{ c *call }

// name is the artifact name of the memory file rel.
func (m *memFS) name(rel string) string {
	return m.store().Capabilities().UserNamePrefix + rel
}

// memoryNameReserve is the share of a scope's name slots (1/10) that the
// /memory route leaves to the runtime and other sessions: it creates no
// new name once the user scope has used the rest.
const memoryNameReserve = 10

func (m *memFS) scope() artifacts.Scope {
	sc := m.c.ss.scope
	return artifacts.UserScope(sc.App, sc.User)
}

func (m *memFS) store() *artifacts.Store { return m.c.s.opts.Memory }

// names returns the scope's names below prefix dir ("." for all), at most
// MaxEntries+1 of them.
func (m *memFS) names(ctx context.Context, dir string) ([]artifacts.NameEntry, error) {
	var out []artifacts.NameEntry
	strip := m.store().Capabilities().UserNamePrefix
	pre := strip
	if dir != "." {
		pre += dir + "/"
	}
	cursor := ""
	if pre != "" {
		// Names sort bytewise, so those beginning with pre follow pre
		// (minus one byte, to start just before it).
		cursor = pre[:len(pre)-1] + string(pre[len(pre)-1]-1)
	}
	for {
		page, err := m.store().ListNames(ctx, m.scope(), artifacts.ListOptions{Cursor: cursor})
		if err != nil {
			if artifacts.IsNotFound(err) {
				return out, nil
			}
			return nil, err
		}
		for _, e := range page.Items {
			if !strings.HasPrefix(e.Name, pre) {
				if e.Name > pre {
					return out, nil
				}
				continue
			}
			e.Name = strings.TrimPrefix(e.Name, strip)
			out = append(out, e)
			if len(out) > m.c.s.limits.MaxEntries {
				return out, nil
			}
		}
		if page.NextCursor == "" {
			return out, nil
		}
		cursor = page.NextCursor
	}
}

func (m *memFS) stat(ctx context.Context, rel string) (fs.FileInfo, error) {
	if rel == "." {
		return memInfo{name: "memory", dir: true}, nil
	}
	rec, err := m.store().Stat(ctx, m.scope(), m.name(rel), artifacts.Latest)
	if err == nil {
		return memInfo{name: path.Base(rel), size: rec.Size, mod: rec.Created()}, nil
	}
	if !artifacts.IsNotFound(err) && artifacts.CodeOf(err) != artifacts.CodeInvalidName {
		return nil, err
	}
	names, lerr := m.names(ctx, rel)
	if lerr != nil {
		return nil, lerr
	}
	if len(names) > 0 {
		return memInfo{name: path.Base(rel), dir: true}, nil
	}
	return nil, artifacts.Errorf(artifacts.CodeNotFound, "mcp", nil, "%q does not exist", rel)
}

func (m *memFS) list(ctx context.Context, rel string) ([]fs.FileInfo, error) {
	names, err := m.names(ctx, rel)
	if err != nil {
		return nil, err
	}
	if rel != "." && len(names) == 0 {
		if _, err := m.store().Stat(ctx, m.scope(), m.name(rel), artifacts.Latest); err == nil {
			return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "%q is not a directory", rel)
		}
		return nil, artifacts.Errorf(artifacts.CodeNotFound, "mcp", nil, "%q does not exist", rel)
	}
	prefix := ""
	if rel != "." {
		prefix = rel + "/"
	}
	var out []fs.FileInfo
	seen := map[string]bool{}
	for _, e := range names {
		rest := strings.TrimPrefix(e.Name, prefix)
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			d := rest[:i]
			if !seen[d] {
				seen[d] = true
				out = append(out, memInfo{name: d, dir: true})
			}
			continue
		}
		out = append(out, memInfo{name: rest, size: e.Latest.Size, mod: e.Latest.Created()})
	}
	return out, nil
}

func (m *memFS) readDir(ctx context.Context, rel string) ([]fs.DirEntry, error) {
	infos, err := m.list(ctx, rel)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(infos))
	for i, fi := range infos {
		out[i] = fs.FileInfoToDirEntry(fi)
	}
	return out, nil
}

func (m *memFS) eachEntry(ctx context.Context, rel string, fn func(name []byte, typ fs.FileMode)) error {
	ents, err := m.readDir(ctx, rel)
	if err != nil {
		return err
	}
	for _, e := range ents {
		fn([]byte(e.Name()), e.Type())
	}
	return nil
}

func (m *memFS) open(ctx context.Context, rel string) (handle, error) {
	if rel == "." {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "/memory is a directory")
	}
	rd, err := m.store().Get(ctx, m.scope(), m.name(rel), artifacts.Latest)
	if err != nil {
		if artifacts.IsNotFound(err) {
			if fi, serr := m.stat(ctx, rel); serr == nil && fi.IsDir() {
				return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "%q is a directory", rel)
			}
		}
		return nil, err
	}
	return memHandle{rd}, nil
}

type memHandle struct{ *artifacts.Reader }

func (h memHandle) size() int64 { return h.Record().Size }

func (m *memFS) put(ctx context.Context, rel string, data []byte) error {
	if rel == "." {
		return artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "/memory is a directory")
	}
	fi, err := m.stat(ctx, rel)
	switch {
	case err == nil && fi.IsDir():
		return artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "%q is a directory", rel)
	case artifacts.IsNotFound(err):
		if err := m.checkNameSlots(ctx, rel); err != nil {
			return err
		}
	}
	refund, err := m.c.chargeMemory(ctx, rel, int64(len(data)))
	if err != nil {
		return err
	}
	if _, err := m.store().Put(ctx, m.scope(), m.name(rel), bytes.NewReader(data), artifacts.PutOptions{MIMEType: mimeOf(rel)}); err != nil {
		refund()
		return memError(rel, err)
	}
	return nil
}

// checkNameSlots refuses a new memory file when the user scope has used
// all but the reserve (1/memoryNameReserve) of its name slots, on a layout
// whose scopes hold a finite number of names in their lifetime (deleting
// one does not give its slot back): the model cannot use up the names
// that the runtime and the user's other sessions need. Two sessions
// creating names at once may both pass; the reserve absorbs that.
func (m *memFS) checkNameSlots(ctx context.Context, rel string) error {
	caps := m.store().Capabilities()
	if caps.NoCeilings {
		return nil
	}
	used, err := m.store().NameSlots(ctx, m.scope())
	switch {
	case artifacts.CodeOf(err) == artifacts.CodeUnsupported:
		return nil
	case err != nil:
		return memError(rel, err)
	}
	capacity := caps.NameCapacity()
	reserve := max(capacity/memoryNameReserve, 1)
	if used < capacity-reserve {
		return nil
	}
	return artifacts.Errorf(artifacts.CodeNameCapacity, "mcp", nil,
		"%s/%s would be a new memory file, but the user's memory has used %d of its %d names (on this store a deleted file's name is never given back) and the last %d are kept for the runtime and other sessions: write into an existing memory file instead (list_directory %s shows them)",
		RouteMemory, rel, used, capacity, reserve, RouteMemory)
}

// memError says what a store error of the memory file rel means without
// the store's own words where they may name host paths or the layout's
// name prefix (its capacity errors).
func memError(rel string, err error) error {
	switch code := artifacts.CodeOf(err); code {
	case artifacts.CodeNameCapacity, artifacts.CodeScopeCapacity:
		return artifacts.Errorf(code, "mcp", nil, "%s/%s cannot be created: the store has no room for another name in the user's memory (%s); write into an existing memory file instead", RouteMemory, rel, strings.ToUpper(string(code)))
	case artifacts.CodeVersionCapacity:
		return artifacts.Errorf(code, "mcp", nil, "%s/%s has used all the versions the store gives one file (%s); write a new memory file instead", RouteMemory, rel, strings.ToUpper(string(code)))
	}
	return err
}

func (m *memFS) write(ctx context.Context, rel string, data []byte) error {
	return m.put(ctx, rel, data)
}

func (m *memFS) appendTo(ctx context.Context, rel string, data []byte) error {
	old, err := m.readAll(ctx, rel)
	if err != nil && !artifacts.IsNotFound(err) {
		return err
	}
	return m.put(ctx, rel, append(old, data...))
}

// readAll reads a memory file of at most MaxReadBytes.
func (m *memFS) readAll(ctx context.Context, rel string) ([]byte, error) {
	h, err := m.open(ctx, rel)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return readBounded(h, rel, m.c.s.limits.MaxReadBytes)
}

// mkdir succeeds: /memory's directories exist as soon as a file below
// them does.
func (m *memFS) mkdir(ctx context.Context, rel string) error {
	if _, err := m.store().Stat(ctx, m.scope(), m.name(rel), artifacts.Latest); err == nil {
		return artifacts.Errorf(artifacts.CodeConflict, "mcp", nil, "%q is a file", rel)
	}
	return nil
}

func (m *memFS) remove(ctx context.Context, rel string) error {
	if rel == "." {
		return artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "/memory itself cannot be removed")
	}
	_, err := m.store().Delete(ctx, m.scope(), m.name(rel), artifacts.Selector{Kind: artifacts.SelectAll})
	return err
}

func (m *memFS) rename(ctx context.Context, from, to string) error {
	data, err := m.readAll(ctx, from)
	if err != nil {
		return err
	}
	if err := m.put(ctx, to, data); err != nil {
		return err
	}
	return m.remove(ctx, from)
}

// memInfo describes a /memory entry.
type memInfo struct {
	name string
	dir  bool
	size int64
	mod  time.Time
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o700
	}
	return 0o600
}
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

// readBounded reads all of r, refusing more than max bytes.
func readBounded(r io.Reader, name string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, artifacts.Errorf(artifacts.CodeTooLarge, "mcp", nil, "%q is larger than the %d-byte read limit", name, max)
	}
	return data, nil
}

var errStop = errors.New("stop")
