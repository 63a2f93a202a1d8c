package mcpfs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// kindTag is the listing tag of an entry.
func kindTag(mode fs.FileMode) string {
	switch {
	case mode.IsDir():
		return "[DIR]"
	case mode&fs.ModeSymlink != 0:
		return "[LINK]"
	}
	return "[FILE]"
}

// listDir resolves a path that must be a directory and lists it.
func (c *call) listDir(ctx context.Context, p string) (target, []fs.FileInfo, error) {
	t, err := c.target(p)
	if err != nil {
		return target{}, nil, err
	}
	ents, err := t.fs.list(ctx, t.rel)
	return t, ents, err
}

// listingBufs holds the buffers list_directory builds its text in.
var listingBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledListing bounds the listing buffer kept for reuse.
const maxPooledListing = 1 << 20

func listDirectory(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[pathArgs](raw)
	if err != nil {
		return nil, err
	}
	t, err := c.target(a.Path)
	if err != nil {
		return nil, err
	}
	// The listing, built in a reused buffer: the tag, a space and the
	// name a line.
	bp := listingBufs.Get().(*[]byte)
	b := (*bp)[:0]
	err = t.fs.eachEntry(ctx, t.rel, func(name []byte, typ fs.FileMode) {
		if len(b) > 0 {
			b = append(b, '\n')
		}
		b = append(b, kindTag(typ)...)
		b = append(b, ' ')
		b = append(b, name...)
	})
	text := string(b)
	if cap(b) <= maxPooledListing {
		*bp = b
		listingBufs.Put(bp)
	}
	if err != nil {
		return nil, err
	}
	return textResult(text), nil
}

func listDirectoryWithSizes(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[struct {
		Path   string `json:"path"`
		SortBy string `json:"sortBy"`
	}](raw)
	if err != nil {
		return nil, err
	}
	switch a.SortBy {
	case "", "name", "size":
	default:
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "sortBy %q: want name or size", a.SortBy)
	}
	_, ents, err := c.listDir(ctx, a.Path)
	if err != nil {
		return nil, err
	}
	if a.SortBy == "size" {
		slices.SortStableFunc(ents, func(x, y fs.FileInfo) int { return int(sizeOf(y) - sizeOf(x)) })
	}
	var lines []string
	files, dirs := 0, 0
	var total int64
	for _, e := range ents {
		size := ""
		if e.IsDir() {
			dirs++
		} else {
			files++
			total += sizeOf(e)
			size = fmt.Sprintf("%10s", formatSize(sizeOf(e)))
		}
		lines = append(lines, fmt.Sprintf("%s %-30s %s", kindTag(e.Mode()), e.Name(), size))
	}
	lines = append(lines, "", fmt.Sprintf("Total: %d files, %d directories", files, dirs), "Combined size: "+formatSize(total))
	return textResult(strings.Join(lines, "\n")), nil
}

func sizeOf(fi fs.FileInfo) int64 {
	if fi.Mode().IsRegular() {
		return fi.Size()
	}
	return 0
}

// walker walks a route's tree depth first in name order, bounded by the
// server's MaxEntries and MaxDepth.
type walker struct {
	c       *call
	t       target
	exclude excluder
	visited int
	stopped string // why the walk stopped early, "" when it did not
}

// walk calls fn for each entry below dir (relative to the target), with
// its path relative to the walk's top; fn returns descend=false to skip a
// directory's contents and errStop to end the walk.
func (w *walker) walk(ctx context.Context, dir string, depth int, fn func(rel string, e fs.DirEntry) (bool, error)) error {
	if err := ctx.Err(); err != nil {
		return artifacts.CheckContext(ctx, "mcp")
	}
	full := path.Join(w.t.rel, dir)
	ents, err := w.t.fs.readDir(ctx, full)
	if err != nil {
		if dir != "." && (artifacts.IsNotFound(err) || artifacts.CodeOf(err) == artifacts.CodeConflict) {
			return nil // removed or replaced meanwhile
		}
		return err
	}
	for _, e := range ents {
		// A cancelled or timed-out call stops between entries, not only
		// between directories.
		if ctx.Err() != nil {
			return artifacts.CheckContext(ctx, "mcp")
		}
		rel := path.Join(dir, e.Name())
		if w.exclude.excluded(rel) {
			continue
		}
		if w.visited >= w.c.s.limits.MaxEntries {
			w.stopped = fmt.Sprintf("stopped after %d entries (the limit); narrow the path or add excludePatterns", w.visited)
			return errStop
		}
		w.visited++
		descend, err := fn(rel, e)
		if err != nil {
			return err
		}
		if e.IsDir() && descend {
			if depth+1 >= w.c.s.limits.MaxDepth {
				w.stopped = fmt.Sprintf("did not descend below depth %d (the limit)", w.c.s.limits.MaxDepth)
				continue
			}
			if err := w.walk(ctx, rel, depth+1, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// run walks the whole tree; errStop is not an error.
func (w *walker) run(ctx context.Context, fn func(rel string, e fs.DirEntry) (bool, error)) error {
	err := w.walk(ctx, ".", 0, fn)
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// notes returns the walk's note, if it stopped early.
func (w *walker) notes() []string {
	if w.stopped == "" {
		return nil
	}
	return []string{"[agentstore: the walk " + w.stopped + ".]"}
}

type treeEntry struct {
	Name     string       `json:"name"`
	Type     string       `json:"type"`
	Children *[]treeEntry `json:"children,omitempty"`
}

func directoryTree(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[struct {
		Path            string   `json:"path"`
		ExcludePatterns []string `json:"excludePatterns"`
	}](raw)
	if err != nil {
		return nil, err
	}
	t, err := c.target(a.Path)
	if err != nil {
		return nil, err
	}
	ex, err := compileExcludes(a.ExcludePatterns, true)
	if err != nil {
		return nil, err
	}
	if fi, err := t.fs.stat(ctx, t.rel); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "%s is not a directory", t.vpath)
	}
	w := &walker{c: c, t: t, exclude: ex}
	top := []treeEntry{}
	// children of each directory by relative path; the walk is depth
	// first, so a directory's entry exists before its children.
	dirs := map[string]*[]treeEntry{".": &top}
	err = w.run(ctx, func(rel string, fi fs.DirEntry) (bool, error) {
		parent := dirs[path.Dir(rel)]
		e := treeEntry{Name: fi.Name(), Type: "file"}
		if fi.IsDir() {
			e.Type = "directory"
			kids := []treeEntry{}
			e.Children = &kids
		}
		*parent = append(*parent, e)
		if fi.IsDir() {
			dirs[rel] = (*parent)[len(*parent)-1].Children
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return nil, err
	}
	return textResult(string(out), w.notes()...), nil
}

func searchFiles(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[struct {
		Path            string   `json:"path"`
		Pattern         string   `json:"pattern"`
		ExcludePatterns []string `json:"excludePatterns"`
	}](raw)
	if err != nil {
		return nil, err
	}
	if err := need("pattern", a.Pattern); err != nil {
		return nil, err
	}
	g, err := compileGlob(a.Pattern)
	if err != nil {
		return nil, badGlob("pattern", a.Pattern, err)
	}
	ex, err := compileExcludes(a.ExcludePatterns, false)
	if err != nil {
		return nil, err
	}
	t, err := c.target(a.Path)
	if err != nil {
		return nil, err
	}
	w := &walker{c: c, t: t, exclude: ex}
	var found []string
	err = w.run(ctx, func(rel string, _ fs.DirEntry) (bool, error) {
		if g.match(rel) {
			found = append(found, path.Join(t.vpath, rel))
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	text := "No matches found"
	if len(found) > 0 {
		text = strings.Join(found, "\n")
	}
	return textResult(text, w.notes()...), nil
}

func getFileInfo(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[pathArgs](raw)
	if err != nil {
		return nil, err
	}
	t, err := c.target(a.Path)
	if err != nil {
		return nil, err
	}
	fi, err := t.fs.stat(ctx, t.rel)
	if err != nil {
		return nil, err
	}
	lines := []string{
		fmt.Sprintf("size: %d", sizeOf(fi)),
		"modified: " + fi.ModTime().UTC().Format(time.RFC3339),
		fmt.Sprintf("isDirectory: %v", fi.IsDir()),
		fmt.Sprintf("isFile: %v", fi.Mode().IsRegular()),
		fmt.Sprintf("isSymbolicLink: %v", fi.Mode()&fs.ModeSymlink != 0),
		fmt.Sprintf("permissions: %o", fi.Mode().Perm()),
	}
	return textResult(strings.Join(lines, "\n")), nil
}

func listAllowedDirectories(_ context.Context, c *call, _ json.RawMessage) (*mcp.CallToolResult, error) {
	lines := []string{"Allowed directories:"}
	for _, r := range c.routes() {
		lines = append(lines, r.route)
	}
	return textResult(strings.Join(lines, "\n")), nil
}

// maxGrepLine bounds the text of a grep match line.
const maxGrepLine = 500

func grepTool(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[struct {
		Pattern    string   `json:"pattern"`
		Path       string   `json:"path"`
		Include    string   `json:"include"`
		MaxMatches *float64 `json:"maxMatches"`
	}](raw)
	if err != nil {
		return nil, err
	}
	if err := need("pattern", a.Pattern); err != nil {
		return nil, err
	}
	re, err := compileGrep(a.Pattern)
	if err != nil {
		return nil, err
	}
	limit := c.s.limits.MaxMatches
	if n, ok, err := lineCount("maxMatches", a.MaxMatches); err != nil {
		return nil, err
	} else if ok && n > 0 {
		limit = min(n, c.s.limits.MaxMatches)
	}
	var inc glob
	if a.Include != "" {
		g, err := compileGlob(a.Include)
		if err != nil {
			return nil, badGlob("include", a.Include, err)
		}
		inc = g
	}
	if a.Path == "" {
		a.Path = RouteWorkspace
	}
	t, err := c.target(a.Path)
	if err != nil {
		return nil, err
	}
	var out []string
	budget := c.s.limits.MaxReadBytes
	full := false
	// One reader and one line buffer serve every file; lines are read one
	// by one, at most 1 MiB of each kept, so memory does not grow with
	// the files.
	br := bufio.NewReaderSize(nil, 64<<10)
	var line []byte
	work := grepBudget{ctx: ctx, insts: re.insts}
	scan := func(rel string, vpath string) error {
		if err := artifacts.CheckContext(ctx, "mcp"); err != nil {
			return err
		}
		h, err := t.fs.open(ctx, rel)
		if err != nil {
			return nil // gone, a link, or refused: not searched
		}
		defer h.Close()
		br.Reset(h)
		if _, err := sniffText(br, vpath); err != nil {
			return nil // binary
		}
		for n := 1; ; n++ {
			var err error
			line, err = readLine(br, line[:0], 1<<20)
			if len(line) == 0 && err != nil {
				return nil
			}
			matched := re.match(ctx, line)
			if cerr := work.spend(len(line)); cerr != nil {
				return cerr
			}
			if !matched {
				if err != nil {
					return nil
				}
				continue
			}
			s := string(line)
			if len(s) > maxGrepLine {
				s = s[:maxGrepLine] + "…"
			}
			entry := fmt.Sprintf("%s:%d: %s", vpath, n, s)
			budget -= int64(len(entry))
			if len(out) >= limit || budget < 0 {
				full = true
				return errStop
			}
			out = append(out, entry)
			if err != nil {
				return nil
			}
		}
	}
	fi, err := t.fs.stat(ctx, t.rel)
	if err != nil {
		return nil, err
	}
	w := &walker{c: c, t: t}
	if fi.IsDir() {
		err = w.run(ctx, func(rel string, fi fs.DirEntry) (bool, error) {
			if !fi.Type().IsRegular() {
				return true, nil
			}
			if a.Include != "" && !inc.match(rel) && !inc.match(fi.Name()) {
				return true, nil
			}
			return true, scan(path.Join(t.rel, rel), path.Join(t.vpath, rel))
		})
	} else {
		err = scan(t.rel, t.vpath)
		if errors.Is(err, errStop) {
			err = nil
		}
	}
	if err != nil {
		return nil, err
	}
	notes := w.notes()
	if full {
		notes = append(notes, fmt.Sprintf("[agentstore: stopped at %d matches; narrow the pattern, path or include, or raise maxMatches (at most %d).]", len(out), c.s.limits.MaxMatches))
	}
	text := "No matches found"
	if len(out) > 0 {
		text = strings.Join(out, "\n")
	}
	c.info.bytes = int64(len(text))
	return textResult(text, notes...), nil
}

// readLine appends the next line of br to buf without its line ending,
// keeping at most max bytes of it; err is io.EOF after the last line.
func readLine(br *bufio.Reader, buf []byte, max int) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if room := max - len(buf); room > 0 {
			buf = append(buf, chunk[:min(len(chunk), room)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		buf = bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))
		return buf, err
	}
}
