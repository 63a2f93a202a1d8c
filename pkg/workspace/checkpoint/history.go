package checkpoint

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"
)

// The kinds of a Change.
const (
	Added    = "added"
	Modified = "modified"
	Removed  = "removed"
)

// Change is one path that differs between two trees.
type Change struct {
	Path string `json:"path"`
	// Kind is Added, Modified or Removed.
	Kind string `json:"kind"`
	// Type is the entry's type (TypeFile or TypeDir) in the newer tree,
	// or in the older one when Removed.
	Type string `json:"type"`
	// OldSize and NewSize are the file's sizes before and after (0 when
	// absent or a directory).
	OldSize int64 `json:"old_size"`
	NewSize int64 `json:"new_size"`
}

// view is a tree's entries by path with their blob ids.
type view map[string]entry

func manifestView(m *Manifest) view {
	v := view{}
	if m == nil {
		return v
	}
	for _, e := range m.Entries {
		ids := make([]string, len(e.Blobs))
		for i, bi := range e.Blobs {
			ids[i] = m.Blobs[bi].ID
		}
		v[e.Path] = entry{Entry: e, ids: ids}
	}
	return v
}

// diffViews returns the changes from a to b, by path. A file is modified
// when its content (its blobs), its type or its executable bit differ.
func diffViews(a, b view) []Change {
	var out []Change
	for p, eb := range b {
		ea, ok := a[p]
		switch {
		case !ok:
			out = append(out, Change{Path: p, Kind: Added, Type: eb.Type, NewSize: eb.Size})
		case ea.Type != eb.Type || execBit(ea.Mode) != execBit(eb.Mode) || !slices.Equal(ea.ids, eb.ids):
			out = append(out, Change{Path: p, Kind: Modified, Type: eb.Type, OldSize: ea.Size, NewSize: eb.Size})
		}
	}
	for p, ea := range a {
		if _, ok := b[p]; !ok {
			out = append(out, Change{Path: p, Kind: Removed, Type: ea.Type, OldSize: ea.Size})
		}
	}
	slices.SortFunc(out, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// Diff returns the changes from manifest a (nil: an empty tree) to b.
func Diff(a, b *Manifest) []Change { return diffViews(manifestView(a), manifestView(b)) }

// DiffTree returns the changes from manifest m (nil: an empty tree) to
// the tree under root, with what opts.Exclude leaves out left out. A file
// whose size, time and executable bit are m's is taken as unchanged, as
// Snapshot takes it; others are read and chunked (nothing is stored) to
// compare their content.
func (c *Checkpoints) DiffTree(ctx context.Context, m *Manifest, root *os.Root, opts SnapshotOptions) ([]Change, error) {
	b, err := c.newBuilder(m, opts)
	if err != nil {
		return nil, err
	}
	defer b.release()
	b.dry = true
	if err := b.walk(ctx, root); err != nil {
		return nil, err
	}
	v := view{}
	for _, e := range b.entries {
		v[e.Path] = e
	}
	return diffViews(manifestView(m), v), nil
}

// HistoryRow is one manifest of History.
type HistoryRow struct {
	Ref     Ref       `json:"ref"`
	Seq     int64     `json:"seq"`
	Parent  *Ref      `json:"parent,omitempty"`
	Created time.Time `json:"created"`
	Turn    string    `json:"turn,omitempty"`
	// Files and Bytes are the tree's.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Added, Changed and Removed count the paths (files and directories)
	// that differ from the previous manifest listed (all added for the
	// first one).
	Added   int `json:"added"`
	Changed int `json:"changed"`
	Removed int `json:"removed"`
	// AddedBytes is the bytes of the packs the snapshot stored.
	AddedBytes int64 `json:"added_bytes"`
}

// History returns one row per manifest, oldest first. Every manifest is
// read (at most Options.MaxSnapshots of them, plus any a crashed writer
// left).
func (c *Checkpoints) History(ctx context.Context) ([]HistoryRow, error) {
	refs, err := c.List(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]HistoryRow, 0, len(refs))
	var prev view
	for _, ref := range refs {
		m, err := c.Load(ctx, ref)
		if err != nil {
			return nil, err
		}
		cur := manifestView(m)
		row := HistoryRow{Ref: ref, Seq: m.Seq, Parent: m.Parent, Created: m.Created, Turn: m.Turn, Files: m.Totals.Files, Bytes: m.Totals.Bytes, AddedBytes: m.Totals.AddedBytes}
		for _, ch := range diffViews(prev, cur) {
			switch ch.Kind {
			case Added:
				row.Added++
			case Modified:
				row.Changed++
			case Removed:
				row.Removed++
			}
		}
		rows = append(rows, row)
		prev = cur
	}
	return rows, nil
}

// Usage is what a session's checkpoints hold in the store.
type Usage struct {
	// Manifests and Packs count the published versions.
	Manifests int `json:"manifests"`
	Packs     int `json:"packs"`
	// ManifestBytes and PackBytes are their payload bytes; StoredBytes
	// their sum.
	ManifestBytes int64 `json:"manifest_bytes"`
	PackBytes     int64 `json:"pack_bytes"`
	StoredBytes   int64 `json:"stored_bytes"`
	// LiveBytes is the pack bytes the latest manifest uses; DeadBytes the
	// rest of PackBytes: what older checkpoints alone use, the unused
	// parts of packs, and packs no manifest names (a crashed or refused
	// writer's, until repair removes them).
	LiveBytes int64 `json:"live_bytes"`
	DeadBytes int64 `json:"dead_bytes"`
}

// Usage reports what the scope's checkpoints hold, reading the latest
// manifest and the records of the rest.
func (c *Checkpoints) Usage(ctx context.Context) (Usage, error) {
	var u Usage
	ms, err := listGens(ctx, c.opts.Store, c.opts.Scope, ManifestName, kindManifest)
	if err != nil {
		return u, err
	}
	ps, err := listGens(ctx, c.opts.Store, c.opts.Scope, PackName, kindPack)
	if err != nil {
		return u, err
	}
	u.Manifests, u.Packs = len(ms), len(ps)
	for _, l := range ms {
		u.ManifestBytes += l.rec.Size
	}
	for _, l := range ps {
		u.PackBytes += l.rec.Size
	}
	u.StoredBytes = u.ManifestBytes + u.PackBytes
	if len(ms) > 0 {
		m, err := c.Load(ctx, ms[len(ms)-1].Ref)
		if err != nil {
			return u, err
		}
		for _, b := range m.Blobs {
			u.LiveBytes += b.Length
		}
	}
	u.DeadBytes = u.PackBytes - u.LiveBytes
	return u, nil
}
