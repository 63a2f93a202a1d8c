package mcpfs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// toolDef is one tool: its listing and its function.
type toolDef struct {
	tool   *mcp.Tool
	hidden bool // listed only when named in Options.Tools
	run    func(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error)
}

type schema = map[string]any

func object(props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) schema {
	if desc == "" {
		return schema{"type": "string"}
	}
	return schema{"type": "string", "description": desc}
}

func num(desc string) schema { return schema{"type": "number", "description": desc} }

func strings_(desc string) schema {
	s := schema{"type": "array", "items": schema{"type": "string"}, "default": []string{}}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

// outputSchema is every tool's output schema: the reference server's
// {"content": string}, plus the fields of notes and error results.
var outputSchema = object(schema{
	"content":           str("the result as text"),
	"note":              str("how the result was bounded and how to read on"),
	"code":              str("error results: a stable code such as NOT_FOUND or QUOTA_EXCEEDED"),
	"message":           str("error results: what failed"),
	"path":              str("error results: the path concerned"),
	"limit":             str("QUOTA_EXCEEDED: the limit that bound: turn_bytes, bytes, files or entries"),
	"remaining_bytes":   schema{"type": "integer", "description": "QUOTA_EXCEEDED: the byte allowance left (absent when bytes are not limited)"},
	"remaining_files":   schema{"type": "integer", "description": "QUOTA_EXCEEDED: the files that may still be created (absent without a file limit)"},
	"remaining_entries": schema{"type": "integer", "description": "QUOTA_EXCEEDED: the files and directories that may still be created (absent without an entry limit)"},
	"turn_limit_bytes":  schema{"type": "integer", "description": "QUOTA_EXCEEDED: the per-turn limit (0: none)"},
	"total_limit_bytes": schema{"type": "integer", "description": "QUOTA_EXCEEDED: the total limit (0: none)"},
	"max_files":         schema{"type": "integer", "description": "QUOTA_EXCEEDED: the file-count limit (0: none)"},
	"max_entries":       schema{"type": "integer", "description": "QUOTA_EXCEEDED: the limit on files and directories together (0: none)"},
	"truncated":         schema{"type": "boolean"},
	"next_offset":       schema{"type": "integer"},
}, "content")

// mediaOutputSchema is read_media_file's: the content blocks.
var mediaOutputSchema = object(schema{
	"content": schema{"description": "the content blocks; on error results, the error's text"},
	"note":    str(""), "code": str(""), "message": str(""), "path": str(""),
}, "content")

func boolp(b bool) *bool { return &b }

// readOnly, write, ... are the annotations of the tool kinds, as the
// reference server sets them.
func readOnly(title string) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, OpenWorldHint: boolp(false)}
}

func writes(title string, destructive, idempotent bool) *mcp.ToolAnnotations {
	return &mcp.ToolAnnotations{Title: title, DestructiveHint: boolp(destructive), IdempotentHint: idempotent, OpenWorldHint: boolp(false)}
}

func def(name, title, desc string, ann *mcp.ToolAnnotations, in schema, run func(context.Context, *call, json.RawMessage) (*mcp.CallToolResult, error)) *toolDef {
	return &toolDef{
		tool: &mcp.Tool{Name: name, Title: title, Description: desc, Annotations: ann, InputSchema: in, OutputSchema: outputSchema},
		run:  run,
	}
}

func (t *toolDef) withOutput(s schema) *toolDef {
	t.tool.OutputSchema = s
	return t
}

const pathsNote = " Paths: /workspace/... (this session's files; relative paths are relative to it), /reference/... (read-only reference files) and /memory/... (the user's long-term memory, shared by their sessions)."

// allTools returns every tool the package has, in listing order.
func allTools() []*toolDef {
	headTail := schema{
		"path": str(""),
		"tail": num("If given, only the last N lines"),
		"head": num("If given, only the first N lines"),
	}
	window := schema{
		"path":   str(""),
		"tail":   num("If given, only the last N lines"),
		"head":   num("If given, only the first N lines"),
		"offset": num("agentstore: first line to return, 0-based (with limit: a window of lines)"),
		"limit":  num("agentstore: number of lines to return from offset"),
	}
	pathOnly := object(schema{"path": str("")}, "path")
	tools := []*toolDef{
		def("read_file", "Read File (Deprecated)", "Deprecated alias of read_text_file.", readOnly("Read File (Deprecated)"), object(headTail, "path"), readTextFile),
		def("read_text_file", "Read Text File",
			"Read a text file. head/tail return the first/last N lines; offset/limit return a window of lines. Large files are returned a window at a time with a note saying how to read on. Binary files are refused (use read_media_file)."+pathsNote,
			readOnly("Read Text File"), object(window, "path"), readTextFile),
		def("read_media_file", "Read Media File",
			"Read a file as base64 with its MIME type: images and audio as image/audio content, anything else as an embedded resource."+pathsNote,
			readOnly("Read Media File"), pathOnly, readMediaFile).withOutput(mediaOutputSchema),
		def("read_multiple_files", "Read Multiple Files",
			"Read several text files in one call; each is returned under its path, and a failed read does not stop the others."+pathsNote,
			readOnly("Read Multiple Files"), object(schema{"paths": schema{"type": "array", "items": schema{"type": "string"}, "minItems": 1, "description": "The files to read"}}, "paths"), readMultipleFiles),
		def("write_file", "Write File",
			"Create a file or replace its contents, atomically. The bytes are charged to the session's quota first; over it the call fails with QUOTA_EXCEEDED and writes nothing."+pathsNote,
			writes("Write File", true, true), object(schema{"path": str(""), "content": str("")}, "path", "content"), writeFile),
		def("edit_file", "Edit File",
			"Replace exact text (or the same lines ignoring indentation) in a text file, edits in order; returns a unified diff. dryRun shows the diff without writing."+pathsNote,
			writes("Edit File", true, false), object(schema{
				"path": str(""),
				"edits": schema{"type": "array", "items": object(schema{
					"oldText": str("Text to search for, exactly"),
					"newText": str("Text to put in its place"),
				}, "oldText", "newText")},
				"dryRun": schema{"type": "boolean", "default": false, "description": "Show the diff without writing"},
			}, "path", "edits"), editFile),
		def("create_directory", "Create Directory",
			"Create a directory and any missing parents; an existing directory is fine."+pathsNote,
			writes("Create Directory", false, true), pathOnly, createDirectory),
		def("list_directory", "List Directory",
			"List a directory: one line per entry, [DIR] or [FILE] (or [LINK] for a symbolic link, which is never followed) and the name."+pathsNote,
			readOnly("List Directory"), pathOnly, listDirectory),
		def("list_directory_with_sizes", "List Directory with Sizes",
			"List a directory with file sizes and totals, sorted by name or size."+pathsNote,
			readOnly("List Directory with Sizes"), object(schema{
				"path":   str(""),
				"sortBy": schema{"type": "string", "enum": []string{"name", "size"}, "default": "name", "description": "Sort by name or by size (largest first)"},
			}, "path"), listDirectoryWithSizes),
		def("directory_tree", "Directory Tree",
			"A recursive tree of a directory as JSON: entries with name, type (file or directory) and, for directories, children. excludePatterns are globs. The walk is bounded; a note says when it stopped early."+pathsNote,
			readOnly("Directory Tree"), object(schema{"path": str(""), "excludePatterns": strings_("")}, "path"), directoryTree),
		def("move_file", "Move File",
			"Move or rename a file or directory within one of /workspace or /memory; fails when the destination exists."+pathsNote,
			writes("Move File", true, false), object(schema{"source": str(""), "destination": str("")}, "source", "destination"), moveFile),
		def("search_files", "Search Files",
			"Find files and directories whose path relative to path matches a glob ('*.csv' at the top, '**/*.csv' at any depth); excludePatterns are globs too. The walk is bounded."+pathsNote,
			readOnly("Search Files"), object(schema{"path": str(""), "pattern": str(""), "excludePatterns": strings_("")}, "path", "pattern"), searchFiles),
		def("get_file_info", "Get File Info",
			"Size, modification time, type and permissions of a file or directory (symbolic links are described, not followed)."+pathsNote,
			readOnly("Get File Info"), pathOnly, getFileInfo),
		def("list_allowed_directories", "List Allowed Directories",
			"The top directories this server serves: /workspace, and /reference and /memory when configured.",
			readOnly("List Allowed Directories"), object(schema{}), listAllowedDirectories),
		def("grep", "Grep",
			"Search file contents for a regular expression (RE2 syntax); returns path:line: text for each matching line. path (default /workspace) may be a file or a directory; include is a glob on the relative path or the file name; at most maxMatches matches. Binary files are skipped."+pathsNote,
			readOnly("Grep"), object(schema{
				"pattern":    str("Regular expression (RE2)"),
				"path":       str("File or directory to search (default /workspace)"),
				"include":    str("Only files whose relative path or name matches this glob"),
				"maxMatches": num("Stop after this many matches"),
			}, "pattern"), grepTool),
		def("append_file", "Append File",
			"Append text to a file, creating it when missing; charged to the quota like write_file."+pathsNote,
			writes("Append File", false, false), object(schema{"path": str(""), "content": str("")}, "path", "content"), appendFile),
		def("delete_file", "Delete File",
			"Delete a file (or, in /workspace, an empty directory or a symbolic link, never what it points to)."+pathsNote,
			writes("Delete File", true, false), pathOnly, deleteFile),
		def("copy_file", "Copy File",
			"Copy a file to a new path (from any route into /workspace or /memory); fails when the destination exists. Charged to the quota."+pathsNote,
			writes("Copy File", false, false), object(schema{"source": str(""), "destination": str("")}, "source", "destination"), copyFile),
	}
	end := def("end_turn", "End Turn",
		"For the agent runtime, not the model: ends the turn (publishing a snapshot under the end-of-turn policy) and starts the next one, resetting the per-turn allowance.",
		writes("End Turn", false, false), object(schema{}), endTurn)
	end.hidden = true
	return append(append(tools, end), checkpointTools()...)
}

// ---- argument types

type pathArgs struct {
	Path string `json:"path"`
}

type readArgs struct {
	Path   string   `json:"path"`
	Head   *float64 `json:"head"`
	Tail   *float64 `json:"tail"`
	Offset *float64 `json:"offset"`
	Limit  *float64 `json:"limit"`
}

type contentArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

type moveArgs struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// need reports a missing required string argument.
func need(name, v string) error {
	if v == "" {
		return artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "argument %q is required", name)
	}
	return nil
}

// target resolves the path argument and records it for the audit.
func (c *call) target(p string) (target, error) {
	if err := need("path", p); err != nil {
		return target{}, err
	}
	c.info.path = p
	t, err := c.resolve(p)
	if err == nil {
		c.info.path = t.vpath
	}
	return t, err
}

// ---- reading

func readTextFile(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[readArgs](raw)
	if err != nil {
		return nil, err
	}
	head, hasHead, err := lineCount("head", a.Head)
	if err != nil {
		return nil, err
	}
	tail, hasTail, err := lineCount("tail", a.Tail)
	if err != nil {
		return nil, err
	}
	offset, hasOffset, err := lineCount("offset", a.Offset)
	if err != nil {
		return nil, err
	}
	limit, hasLimit, err := lineCount("limit", a.Limit)
	if err != nil {
		return nil, err
	}
	switch {
	case hasHead && hasTail:
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "give head or tail, not both")
	case (hasHead || hasTail) && (hasOffset || hasLimit):
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "give head/tail or offset/limit, not both")
	}
	t, err := c.target(a.Path)
	if err != nil {
		return nil, err
	}
	h, err := t.fs.open(ctx, t.rel)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	max := c.s.limits.MaxReadBytes
	if ra, ok := h.(io.ReaderAt); ok && hasTail {
		// Only the head (binary check) and the end are read.
		if err := sniffAt(ra, h.size(), t.vpath); err != nil {
			return nil, err
		}
		text, err := tailLines(ra, h.size(), tail, max)
		if err != nil {
			return nil, err
		}
		c.info.bytes = int64(len(text))
		return textResult(text), nil
	}
	br, err := textReader(h, t.vpath)
	if err != nil {
		return nil, err
	}
	if hasTail {
		text, err := tailStream(br, tail, max)
		if err != nil {
			return nil, err
		}
		c.info.bytes = int64(len(text))
		return textResult(text), nil
	}
	if !hasHead && !hasOffset && !hasLimit && h.size() <= max {
		data, err := readBounded(br, t.vpath, max)
		if err != nil {
			return nil, err
		}
		c.info.bytes = int64(len(data))
		return textResult(string(data)), nil
	}
	count := -1
	switch {
	case hasHead:
		count = head
	case hasLimit:
		count = limit
	}
	w, err := readLines(br, offset, count, max)
	if err != nil {
		return nil, err
	}
	c.info.bytes = int64(len(w.text))
	switch {
	case w.truncated:
		res := textResult(w.text, fmt.Sprintf("[agentstore: %s is %d bytes; this read stopped at the %d-byte limit after line %d. Read on with offset=%d (and limit=N lines).]", t.vpath, h.size(), max, w.next, w.next))
		sc := res.StructuredContent.(map[string]any)
		sc["truncated"], sc["next_offset"] = true, w.next
		return res, nil
	case w.more && hasLimit:
		res := textResult(w.text, fmt.Sprintf("[agentstore: more lines follow; read on with offset=%d.]", w.next))
		res.StructuredContent.(map[string]any)["next_offset"] = w.next
		return res, nil
	}
	return textResult(w.text), nil
}

func readMediaFile(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[pathArgs](raw)
	if err != nil {
		return nil, err
	}
	t, err := c.target(a.Path)
	if err != nil {
		return nil, err
	}
	h, err := t.fs.open(ctx, t.rel)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	data, err := readBounded(h, t.vpath, c.s.limits.MaxReadBytes)
	if err != nil {
		return nil, err
	}
	c.info.bytes = int64(len(data))
	mt := mimeOf(t.vpath)
	var content mcp.Content
	kind := "resource"
	switch {
	case strings.HasPrefix(mt, "image/"):
		content, kind = &mcp.ImageContent{Data: data, MIMEType: mt}, "image"
	case strings.HasPrefix(mt, "audio/"):
		content, kind = &mcp.AudioContent{Data: data, MIMEType: mt}, "audio"
	default:
		content = &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file://" + t.vpath, MIMEType: mt, Blob: data}}
	}
	b, _ := json.Marshal(content)
	var item map[string]any
	_ = json.Unmarshal(b, &item)
	_ = kind
	return &mcp.CallToolResult{Content: []mcp.Content{content}, StructuredContent: map[string]any{"content": []any{item}}}, nil
}

// mimeOf is the MIME type of a file name's extension.
func mimeOf(name string) string {
	mt := mime.TypeByExtension(path.Ext(name))
	if mt == "" {
		return artifacts.DefaultMIMEType
	}
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = strings.TrimSpace(mt[:i])
	}
	return mt
}

func readMultipleFiles(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[struct {
		Paths []string `json:"paths"`
	}](raw)
	if err != nil {
		return nil, err
	}
	if len(a.Paths) == 0 {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "argument \"paths\" needs at least one path")
	}
	budget := c.s.limits.MaxReadBytes
	var parts []string
	for _, p := range a.Paths {
		text, err := c.readWhole(ctx, p, budget)
		if err != nil {
			sub := &call{s: c.s, ss: c.ss, info: &callInfo{path: p}}
			if t, rerr := c.resolve(p); rerr == nil {
				sub.info.path = t.vpath
			}
			parts = append(parts, fmt.Sprintf("%s: Error - %s: %s", p, errorCode(err), sub.message(err)))
			continue
		}
		budget -= int64(len(text))
		c.info.bytes += int64(len(text))
		parts = append(parts, p+":\n"+text+"\n")
	}
	return textResult(strings.Join(parts, "\n---\n")), nil
}

// readWhole reads a whole text file of at most max bytes.
func (c *call) readWhole(ctx context.Context, p string, max int64) (string, error) {
	if p == "" {
		return "", need("path", p)
	}
	t, err := c.resolve(p)
	if err != nil {
		return "", err
	}
	h, err := t.fs.open(ctx, t.rel)
	if err != nil {
		return "", err
	}
	defer h.Close()
	br, err := textReader(h, t.vpath)
	if err != nil {
		return "", err
	}
	data, err := readBounded(br, t.vpath, max)
	return string(data), err
}

// ---- writing

// contentCall decodes the path and content of write_file and append_file
// and resolves the path to a writable target: the checks both tools make
// before a byte is written.
func contentCall(c *call, raw json.RawMessage) (target, writeFS, []byte, error) {
	a, err := decode[contentArgs](raw)
	if err != nil {
		return target{}, nil, nil, err
	}
	if a.Content == nil {
		return target{}, nil, nil, need("content", "")
	}
	t, err := c.target(a.Path)
	if err != nil {
		return target{}, nil, nil, err
	}
	w, err := t.writer()
	if err != nil {
		return target{}, nil, nil, err
	}
	return t, w, []byte(*a.Content), nil
}

func writeFile(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	t, w, data, err := contentCall(c, raw)
	if err != nil {
		return nil, err
	}
	if err := w.write(ctx, t.rel, data); err != nil {
		return nil, err
	}
	c.info.bytes = int64(len(data))
	return textResult("Successfully wrote to " + t.vpath), nil
}

func appendFile(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	t, w, data, err := contentCall(c, raw)
	if err != nil {
		return nil, err
	}
	if err := w.appendTo(ctx, t.rel, data); err != nil {
		return nil, err
	}
	c.info.bytes = int64(len(data))
	return textResult(fmt.Sprintf("Successfully appended %d bytes to %s", len(data), t.vpath)), nil
}

type edit struct {
	OldText *string `json:"oldText"`
	NewText *string `json:"newText"`
}

func editFile(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[struct {
		Path   string `json:"path"`
		Edits  []edit `json:"edits"`
		DryRun bool   `json:"dryRun"`
	}](raw)
	if err != nil {
		return nil, err
	}
	if a.Edits == nil {
		return nil, need("edits", "")
	}
	for i, e := range a.Edits {
		if e.OldText == nil || e.NewText == nil {
			return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "edit %d needs oldText and newText", i)
		}
	}
	t, err := c.target(a.Path)
	if err != nil {
		return nil, err
	}
	var w writeFS
	if !a.DryRun {
		if w, err = t.writer(); err != nil {
			return nil, err
		}
	}
	old, err := c.readWhole(ctx, t.vpath, c.s.limits.MaxReadBytes)
	if err != nil {
		return nil, err
	}
	old = strings.ReplaceAll(old, "\r\n", "\n")
	modified, err := applyEdits(old, a.Edits)
	if err != nil {
		return nil, err
	}
	diff := unifiedDiff(old, modified, t.vpath)
	fence := "```"
	for strings.Contains(diff, fence) {
		fence += "`"
	}
	if !a.DryRun {
		if err := w.write(ctx, t.rel, []byte(modified)); err != nil {
			return nil, err
		}
		c.info.bytes = int64(len(modified))
	}
	return textResult(fence + "diff\n" + diff + fence + "\n\n"), nil
}

// applyEdits applies edits in order: an exact match of oldText (its first
// occurrence), else a run of lines equal to oldText's lines after trimming
// their whitespace, whose replacement keeps the first line's indentation.
func applyEdits(text string, edits []edit) (string, error) {
	for _, e := range edits {
		oldT := strings.ReplaceAll(*e.OldText, "\r\n", "\n")
		newT := strings.ReplaceAll(*e.NewText, "\r\n", "\n")
		if oldT != "" && strings.Contains(text, oldT) {
			text = strings.Replace(text, oldT, newT, 1)
			continue
		}
		oldLines := strings.Split(oldT, "\n")
		lines := strings.Split(text, "\n")
		found := false
		for i := 0; i+len(oldLines) <= len(lines) && oldT != ""; i++ {
			match := true
			for j, ol := range oldLines {
				if strings.TrimSpace(ol) != strings.TrimSpace(lines[i+j]) {
					match = false
					break
				}
			}
			if !match {
				continue
			}
			indent := leadingSpace(lines[i])
			newLines := strings.Split(newT, "\n")
			for j, nl := range newLines {
				if j == 0 {
					newLines[j] = indent + strings.TrimLeft(nl, " \t")
					continue
				}
				if j < len(oldLines) {
					oi, ni := leadingSpace(oldLines[j]), leadingSpace(nl)
					if oi != "" && ni != "" {
						newLines[j] = indent + strings.Repeat(" ", max(0, len(ni)-len(oi))) + strings.TrimLeft(nl, " \t")
					}
				}
			}
			lines = append(lines[:i], append(newLines, lines[i+len(oldLines):]...)...)
			text = strings.Join(lines, "\n")
			found = true
			break
		}
		if !found {
			return "", artifacts.Errorf(artifacts.CodeNotFound, "mcp", nil, "could not find the text of an edit:\n%s", *e.OldText)
		}
	}
	return text, nil
}

func leadingSpace(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, " \t"))]
}

func createDirectory(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[pathArgs](raw)
	if err != nil {
		return nil, err
	}
	t, err := c.target(a.Path)
	if err != nil {
		return nil, err
	}
	w, err := t.writer()
	if err != nil {
		return nil, err
	}
	if t.rel != "." {
		if err := w.mkdir(ctx, t.rel); err != nil {
			return nil, err
		}
	}
	return textResult("Successfully created directory " + t.vpath), nil
}

func deleteFile(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[pathArgs](raw)
	if err != nil {
		return nil, err
	}
	t, err := c.target(a.Path)
	if err != nil {
		return nil, err
	}
	w, err := t.writer()
	if err != nil {
		return nil, err
	}
	if t.rel == "." {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "%s itself cannot be deleted", t.route)
	}
	if err := w.remove(ctx, t.rel); err != nil {
		return nil, err
	}
	return textResult("Successfully deleted " + t.vpath), nil
}

// twoTargets resolves source and destination: both writable... the
// destination must be writable and must not exist.
func (c *call) twoTargets(ctx context.Context, a moveArgs) (src, dst target, w writeFS, err error) {
	if err = need("source", a.Source); err != nil {
		return
	}
	if err = need("destination", a.Destination); err != nil {
		return
	}
	if src, err = c.target(a.Source); err != nil {
		return
	}
	if dst, err = c.resolve(a.Destination); err != nil {
		c.info.path = a.Destination
		return
	}
	if w, err = dst.writer(); err != nil {
		c.info.path = dst.vpath
		return
	}
	if _, serr := dst.fs.stat(ctx, dst.rel); serr == nil || dst.rel == "." {
		c.info.path = dst.vpath
		err = artifacts.Errorf(artifacts.CodeConflict, "mcp", nil, "destination %s already exists", dst.vpath)
	}
	return
}

func moveFile(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[moveArgs](raw)
	if err != nil {
		return nil, err
	}
	src, dst, w, err := c.twoTargets(ctx, a)
	if err != nil {
		return nil, err
	}
	if src.route != dst.route {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "cannot move from %s to %s: moves stay within one of /workspace or /memory; use copy_file, then delete_file", src.route, dst.route)
	}
	if src.rel == "." {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "%s itself cannot be moved", src.route)
	}
	if err := w.rename(ctx, src.rel, dst.rel); err != nil {
		return nil, err
	}
	return textResult(fmt.Sprintf("Successfully moved %s to %s", src.vpath, dst.vpath)), nil
}

func copyFile(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[moveArgs](raw)
	if err != nil {
		return nil, err
	}
	src, dst, w, err := c.twoTargets(ctx, a)
	if err != nil {
		return nil, err
	}
	h, err := src.fs.open(ctx, src.rel)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	data, err := readBounded(h, src.vpath, c.s.limits.MaxReadBytes)
	if err != nil {
		return nil, err
	}
	if err := w.write(ctx, dst.rel, data); err != nil {
		c.info.path = dst.vpath
		return nil, err
	}
	c.info.bytes = int64(len(data))
	return textResult(fmt.Sprintf("Successfully copied %s to %s", src.vpath, dst.vpath)), nil
}

func endTurn(ctx context.Context, c *call, _ json.RawMessage) (*mcp.CallToolResult, error) {
	ws, err := (&wsFS{c: c}).ws(ctx)
	if err != nil {
		return nil, err
	}
	res, err := ws.EndTurn(ctx)
	if err != nil {
		return nil, err
	}
	if err := ws.BeginTurn(ctx); err != nil {
		return nil, err
	}
	if res == nil {
		return textResult("turn ended; no snapshot was needed"), nil
	}
	return textResult(fmt.Sprintf("turn ended; snapshot version %d published (%d files, %d bytes)", res.Version, res.Files, res.Bytes)), nil
}
