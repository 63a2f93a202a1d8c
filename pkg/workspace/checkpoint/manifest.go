package checkpoint

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// Format is the manifest format this package writes and the only one it
// reads.
const Format = 1

// The entry types of a manifest.
const (
	TypeFile = "file"
	TypeDir  = "dir"
)

// The blob compressions of a manifest.
const (
	CompressionNone = "none"
	CompressionZstd = "zstd"
)

// Ref names one published version of a manifest or pack artifact.
type Ref struct {
	Name    string `json:"name"`
	Version int64  `json:"version"`
}

// String formats the reference as NAME@VERSION.
func (r Ref) String() string { return fmt.Sprintf("%s@%d", r.Name, r.Version) }

// Manifest is one snapshot of a tree: format 1, documented field by field
// in docs/layout.md ("Incremental snapshot format (format 1)").
type Manifest struct {
	// Format is always Format.
	Format int `json:"format"`
	// Seq is the parent's Seq plus one; 1 for a first snapshot.
	Seq int64 `json:"seq"`
	// Parent is the manifest this one was made from, nil for none.
	Parent *Ref `json:"parent,omitempty"`
	// Created is when the snapshot's walk of the tree began.
	Created time.Time `json:"created"`
	// Turn is the caller's label of the snapshot (an agent's turn), if any.
	Turn string `json:"turn,omitempty"`
	// Entries lists every directory and regular file of the tree, a
	// directory before anything in it.
	Entries []Entry `json:"entries"`
	// Omitted lists the entries left out: symbolic links and special files.
	Omitted []Omission `json:"omitted,omitempty"`
	// Blobs is the blob table the entries index into.
	Blobs []Blob `json:"blobs"`
	// Packs is the pack table the blobs index into.
	Packs []Pack `json:"packs"`
	// Totals sums the snapshot up.
	Totals Totals `json:"totals"`
}

// Entry is one path of a manifest.
type Entry struct {
	// Path is slash separated, relative, and passes zipsafe.CheckName.
	Path string `json:"path"`
	// Type is TypeFile or TypeDir.
	Type string `json:"type"`
	// Mode holds the permission bits found (0o777 at most); only the
	// executable bits are restored and compared.
	Mode uint32 `json:"mode"`
	// Size is the file's length in bytes (0 for a directory).
	Size int64 `json:"size,omitempty"`
	// MTime is the file's modification time in nanoseconds since the Unix
	// epoch (0 for a directory).
	MTime int64 `json:"mtime,omitempty"`
	// Blobs are indexes into Manifest.Blobs whose plain contents, in
	// order, are the file's contents.
	Blobs []int `json:"blobs,omitempty"`
}

// Omission is an entry a snapshot left out.
type Omission struct {
	// Path is the slash-separated path of the entry.
	Path string `json:"path"`
	// Kind is what it is ("symlink", "fifo", ...).
	Kind string `json:"kind"`
}

// Blob is one stored piece of content: a whole small file or one chunk.
type Blob struct {
	// ID is the lowercase hex SHA-256 of the plain content.
	ID string `json:"id"`
	// Pack is an index into Manifest.Packs.
	Pack int `json:"pack"`
	// Offset and Length locate the stored bytes in the pack.
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
	// Size is the plain content's length.
	Size int64 `json:"size"`
	// Compression is CompressionNone or CompressionZstd.
	Compression string `json:"compression"`
}

// Pack is one pack artifact version the blobs are stored in.
type Pack struct {
	Ref
	// Size is the pack's payload length.
	Size int64 `json:"size"`
	// SHA256 is the lowercase hex SHA-256 of the pack's payload.
	SHA256 string `json:"sha256"`
}

// Totals sums a manifest up.
type Totals struct {
	Files int   `json:"files"`
	Dirs  int   `json:"dirs"`
	Bytes int64 `json:"bytes"`
	Blobs int   `json:"blobs"`
	Packs int   `json:"packs"`
	// AddedBytes is the size of the packs this snapshot stored.
	AddedBytes int64 `json:"added_bytes"`
	// DeadBytes is the bytes of the referenced packs that no blob of this
	// manifest uses.
	DeadBytes int64 `json:"dead_bytes"`
}

// Limits on what a manifest may describe beyond zipsafe.Limits.
const (
	// MaxBlobBytes is the largest plain blob: the chunker's maximum chunk.
	MaxBlobBytes = 8 << 20
	// MaxManifestBytes bounds a manifest's decompressed JSON.
	MaxManifestBytes = 256 << 20
)

// Encode returns the manifest as zstd-compressed JSON.
func (m *Manifest) Encode() ([]byte, error) {
	js, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return manifestEncoder().EncodeAll(js, nil), nil
}

// Decode parses and checks a manifest payload (zstd-compressed JSON) as
// hostile: an unknown format, a path zipsafe.CheckName refuses, a
// duplicate or a path whose parent directory is missing or is a file,
// counts or sizes past lim (zero fields: zipsafe's defaults), blob and
// pack indexes out of range, a blob past its pack's end, a file whose
// blobs do not add up to its size: all are CodeCorrupt.
func Decode(b []byte, lim zipsafe.Limits) (*Manifest, error) {
	dec, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxManifestBytes))
	if err != nil {
		return nil, corrupt("%v", err)
	}
	defer dec.Close()
	js, err := io.ReadAll(io.LimitReader(dec, MaxManifestBytes+1))
	if err != nil {
		return nil, corrupt("decompress: %v", err)
	}
	if len(js) > MaxManifestBytes {
		return nil, corrupt("more than %d bytes decompressed", MaxManifestBytes)
	}
	var m Manifest
	d := json.NewDecoder(bytes.NewReader(js))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		return nil, corrupt("decode: %v", err)
	}
	if d.More() {
		return nil, corrupt("trailing data after the manifest")
	}
	if err := m.Check(lim); err != nil {
		return nil, err
	}
	return &m, nil
}

func corrupt(format string, args ...any) error {
	return artifacts.Errorf(artifacts.CodeCorrupt, "decode manifest", nil, format, args...)
}

// Check reports, as CodeCorrupt, what Decode refuses in m.
func (m *Manifest) Check(lim zipsafe.Limits) error {
	lim = lim.Resolved()
	if m.Format != Format {
		return corrupt("unknown format %d (this version reads %d)", m.Format, Format)
	}
	if m.Seq < 1 {
		return corrupt("seq %d", m.Seq)
	}
	if m.Parent != nil && (m.Parent.Version < 0 || !isName(m.Parent.Name, ManifestName)) {
		return corrupt("parent %s is no manifest", m.Parent)
	}
	if (m.Parent == nil) != (m.Seq == 1) {
		return corrupt("seq %d with parent %v", m.Seq, m.Parent)
	}
	maxEntries := lim.MaxEntries
	if maxEntries < 0 {
		maxEntries = int(^uint(0) >> 1)
	}
	if len(m.Entries)+len(m.Omitted) > maxEntries {
		return corrupt("%d entries, more than %d", len(m.Entries)+len(m.Omitted), maxEntries)
	}
	// Each file has at most one blob below the chunker's minimum size:
	// its last. Packs hold at least one blob.
	maxBlobs := int64(len(m.Entries)) + lim.MaxBytes/chunkMin + 1
	if lim.MaxBytes < 0 {
		maxBlobs = int64(maxEntries) * 1024
	}
	if int64(len(m.Blobs)) > maxBlobs {
		return corrupt("%d blobs, more than %d", len(m.Blobs), maxBlobs)
	}
	if len(m.Packs) > len(m.Blobs) {
		return corrupt("%d packs for %d blobs", len(m.Packs), len(m.Blobs))
	}
	for i, p := range m.Packs {
		if !isName(p.Name, PackName) || p.Version < 0 || p.Size <= 0 || !isDigest(p.SHA256) {
			return corrupt("pack %d (%s, %d bytes, sha256 %q) is malformed", i, p.Ref, p.Size, p.SHA256)
		}
		for _, q := range m.Packs[:i] {
			if q.Ref == p.Ref {
				return corrupt("pack %s listed twice", p.Ref)
			}
		}
	}
	for i, b := range m.Blobs {
		switch {
		case !isDigest(b.ID):
			return corrupt("blob %d: id %q is not a SHA-256", i, b.ID)
		case b.Pack < 0 || b.Pack >= len(m.Packs):
			return corrupt("blob %d: pack %d of %d", i, b.Pack, len(m.Packs))
		case b.Size < 0 || b.Size > MaxBlobBytes:
			return corrupt("blob %d: size %d", i, b.Size)
		case b.Length <= 0 && b.Size > 0, b.Length < 0, b.Offset < 0:
			return corrupt("blob %d: offset %d, length %d", i, b.Offset, b.Length)
		case b.Offset > m.Packs[b.Pack].Size-b.Length:
			return corrupt("blob %d ends at %d, past its pack's end (%d bytes)", i, b.Offset+b.Length, m.Packs[b.Pack].Size)
		}
		switch b.Compression {
		case CompressionNone:
			if b.Length != b.Size {
				return corrupt("blob %d: stored plain in %d bytes for %d", i, b.Length, b.Size)
			}
		case CompressionZstd:
			if b.Length > b.Size {
				return corrupt("blob %d: compressed to %d bytes for %d", i, b.Length, b.Size)
			}
		default:
			return corrupt("blob %d: unknown compression %q", i, b.Compression)
		}
	}
	kinds := make(map[string]string, len(m.Entries))
	var files, dirs int
	var total int64
	for i, e := range m.Entries {
		if err := zipsafe.CheckName(e.Path, lim); err != nil || strings.HasSuffix(e.Path, "/") {
			return corrupt("entry %d: path %q: %v", i, e.Path, err)
		}
		if _, dup := kinds[e.Path]; dup {
			return corrupt("entry %d: path %q listed twice", i, e.Path)
		}
		if dir := path.Dir(e.Path); dir != "." && kinds[dir] != TypeDir {
			return corrupt("entry %d: path %q is not below a directory listed before it", i, e.Path)
		}
		if e.Mode > 0o777 {
			return corrupt("entry %d: mode %o", i, e.Mode)
		}
		kinds[e.Path] = e.Type
		switch e.Type {
		case TypeDir:
			dirs++
			if e.Size != 0 || len(e.Blobs) != 0 {
				return corrupt("entry %d: directory %q has content", i, e.Path)
			}
		case TypeFile:
			files++
			var n int64
			for _, bi := range e.Blobs {
				if bi < 0 || bi >= len(m.Blobs) {
					return corrupt("entry %d: blob %d of %d", i, bi, len(m.Blobs))
				}
				n += m.Blobs[bi].Size
			}
			if n != e.Size || e.Size < 0 {
				return corrupt("entry %d: %q is %d bytes, its blobs %d", i, e.Path, e.Size, n)
			}
			total += e.Size
			if lim.MaxBytes >= 0 && total > lim.MaxBytes {
				return corrupt("more than %d bytes of files", lim.MaxBytes)
			}
		default:
			return corrupt("entry %d: unknown type %q", i, e.Type)
		}
	}
	t := m.Totals
	if t.Files != files || t.Dirs != dirs || t.Bytes != total || t.Blobs != len(m.Blobs) || t.Packs != len(m.Packs) {
		return corrupt("totals %+v do not match the entries", t)
	}
	for i, o := range m.Omitted {
		if err := zipsafe.CheckName(o.Path, lim); err != nil {
			return corrupt("omission %d: path %q: %v", i, o.Path, err)
		}
	}
	return nil
}

func isDigest(s string) bool {
	if len(s) != 64 || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
