package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/restic/chunker"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// The content-defined chunking of files: restic's chunker with a fixed
// polynomial, so boundaries are the same in every run and process.
const (
	// Polynomial is the chunker's irreducible polynomial.
	Polynomial = chunker.Pol(0x3DA3358B4DC173)
	// chunkMin and chunkMax bound a chunk; about 1 MiB on average. A file
	// shorter than chunkMin is one blob.
	chunkMin = chunker.MinSize
	chunkMax = chunker.MaxSize
	// tinyBlob and tinyRun: when a file ends in tinyRun or more blobs of
	// less than tinyBlob bytes each (the work of many small appends),
	// they are read again and stored as one.
	tinyBlob = 32 << 10
	tinyRun  = 32
)

// SnapshotOptions configure one snapshot.
type SnapshotOptions struct {
	// Turn labels the snapshot (an agent's turn); optional.
	Turn string
	// Exclude, if set, leaves out an entry (and all below a directory)
	// without listing it as an omission: the caller's own files.
	Exclude func(rel string, d fs.DirEntry) bool
	// Progress, if set, is called after each file with the running number
	// of files and bytes seen.
	Progress func(files int, bytes int64)
}

// Result describes a snapshot.
type Result struct {
	// Ref is the published manifest; when Unchanged, the latest one, which
	// already holds the tree.
	Ref Ref
	// Record is the store's record of the manifest.
	Record artifacts.Record
	// Manifest is the manifest published (or the latest one).
	Manifest *Manifest
	// Unchanged is true when nothing was written.
	Unchanged bool
	// ReadFiles counts the files read; the others' blobs were taken from
	// the parent without reading them.
	ReadFiles int
	// AddedBytes is the bytes of the packs stored.
	AddedBytes int64
	// Packs lists the packs stored.
	Packs []Ref
	// Compacted counts the older packs whose live blobs were copied into
	// this snapshot's packs.
	Compacted int
	// Removed lists the manifests and packs retention deleted, after
	// those Options.MaxStoredBytes made room by deleting first.
	Removed []Ref
}

// Snapshot publishes a manifest of the tree under root, with every file's
// content stored in packs (see the package documentation). Its parent is
// the latest manifest. A file whose size, modification time and
// executable bit equal its parent entry's (and whose time is not within
// Options.RacyWindow of the parent's creation) keeps its blobs without
// being read; a blob the parent already has is not stored again. When
// the tree is the parent's, nothing is written and the result says
// Unchanged.
//
// Publication checks the parent: when another writer published a
// manifest on the same parent (or after it) first, the manifest is
// deleted again and the error is CodeConflict; the packs stored stay
// for repair to collect. After publishing, manifests beyond
// Options.MaxSnapshots are deleted with the packs only they used.
func (c *Checkpoints) Snapshot(ctx context.Context, root *os.Root, opts SnapshotOptions) (Result, error) {
	const op = "checkpoint snapshot"
	start := c.opts.Now()
	ls, err := listGens(ctx, c.opts.Store, c.opts.Scope, ManifestName, kindManifest)
	if err != nil {
		return Result{}, err
	}
	var parent *Manifest
	var parentL *listed
	if len(ls) > 0 {
		parentL = &ls[len(ls)-1]
		if parent, err = c.Load(ctx, parentL.Ref); err != nil {
			return Result{}, err
		}
	}
	b, err := c.newBuilder(parent, opts)
	if err != nil {
		return Result{}, err
	}
	defer b.release()
	if b.w.budget, err = c.newBudget(ctx, ls, parent); err != nil {
		return Result{}, err
	}
	if err := b.walk(ctx, root); err != nil {
		return Result{}, b.withdraw(ctx, err)
	}
	if parent != nil && b.same(parent) {
		return Result{Ref: parentL.Ref, Record: parentL.rec, Manifest: parent, Unchanged: true, ReadFiles: b.read}, nil
	}
	compacted, err := b.compact(ctx)
	if err != nil {
		return Result{}, b.withdraw(ctx, err)
	}
	if err := b.w.flush(ctx); err != nil {
		return Result{}, b.withdraw(ctx, err)
	}
	m := b.manifest(start, opts.Turn)
	var parentRef string
	gen := 1
	var last int64 = -1
	if parentL != nil {
		r := parentL.Ref
		m.Parent, m.Seq = &r, parent.Seq+1
		parentRef = r.String()
		gen, last = parentL.gen, parentL.Version
	}
	if c.full(last) {
		gen++
	}
	payload, err := m.Encode()
	if err != nil {
		return Result{}, artifacts.Errorf(artifacts.CodeUnknown, op, err, "encode manifest")
	}
	if err := b.w.budget.admit(ctx, b.w, int64(len(payload)), true); err != nil {
		return Result{}, b.withdraw(ctx, err)
	}
	rec, _, err := c.putGen(ctx, ManifestName, &gen, payload, artifacts.PutOptions{
		MIMEType: ManifestMIMEType,
		Metadata: artifacts.Metadata{MetaKind: kindManifest, MetaParent: parentRef, MetaSeq: strconv.FormatInt(m.Seq, 10)},
	})
	if err != nil {
		return Result{}, err
	}
	res := Result{Ref: Ref{rec.Name, rec.Version}, Record: rec, Manifest: m, ReadFiles: b.read, AddedBytes: b.w.added, Compacted: compacted}
	for _, p := range b.w.published {
		res.Packs = append(res.Packs, p.Ref)
	}
	after, err := c.checkParent(ctx, res.Ref, parentRef)
	if err != nil {
		return Result{}, err
	}
	res.Removed, err = c.retain(ctx, after, m)
	res.Removed = append(b.w.budget.removed(), res.Removed...)
	return res, err
}

// checkParent lists the manifests after ours was published and refuses
// ours (deleting it) unless the manifest just before it is its parent
// and no other manifest names the same parent. Of two writers on one
// parent at most one passes: each lists after publishing, so the later
// of the two to publish sees the other.
func (c *Checkpoints) checkParent(ctx context.Context, ours Ref, parent string) ([]listed, error) {
	const op = "checkpoint publish"
	// A listing taken while another writer withdraws its manifest may
	// miss ours (a name whose versions change under a listing can read
	// as empty); ours was published, so a listing without it is read
	// again, a bounded number of times.
	var ls []listed
	i := -1
	for range 3 {
		var err error
		if ls, err = listGens(ctx, c.opts.Store, c.opts.Scope, ManifestName, kindManifest); err != nil {
			return nil, err
		}
		if i = slices.IndexFunc(ls, func(l listed) bool { return l.Ref == ours }); i >= 0 {
			break
		}
	}
	var why string
	switch {
	case i < 0:
		why = "the manifest just published is not listed"
	case i == 0 && parent != "":
		why = fmt.Sprintf("its parent %s is gone", parent)
	case i > 0 && ls[i-1].Ref.String() != parent:
		why = fmt.Sprintf("%s was published after its parent %q", ls[i-1].Ref, parent)
	default:
		for j, l := range ls {
			if j != i && l.parent == parent {
				why = fmt.Sprintf("%s was published on the same parent %q", l.Ref, parent)
				break
			}
		}
	}
	if why == "" {
		return ls, nil
	}
	// Withdrawn whether or not the listing showed it: a refused manifest
	// left in place would be a checkpoint no writer reported.
	if _, err := c.opts.Store.Delete(ctx, c.opts.Scope, ours.Name, artifacts.Selector{Kind: artifacts.SelectVersion, Version: ours.Version}); err != nil && !artifacts.IsNotFound(err) {
		return nil, artifacts.Errorf(artifacts.CodeConflict, op, err, "another writer published on the same parent (%s), and withdrawing this manifest failed", why).With(c.opts.Scope, ours.Name, ours.Version)
	}
	return nil, artifacts.Errorf(artifacts.CodeConflict, op, nil, "another writer published first: %s; this snapshot was withdrawn, take a new one", why).With(c.opts.Scope, ours.Name, ours.Version)
}

// builder collects a snapshot's entries.
type builder struct {
	c       *Checkpoints
	opts    SnapshotOptions
	parent  *Manifest
	pentry  map[string]*Entry
	known   map[string]*loc // by blob id: the parent's and the new blobs
	slots   []*packSlot     // the parent's packs, by index
	w       *packWriter
	entries []entry
	omitted []Omission
	read    int
	files   int
	bytes   int64
	ck      *chunker.Chunker
	buf     []byte
	bufp    *[]byte
	usedSet map[string]bool
	// dry: nothing is stored (DiffTree).
	dry bool
}

// entry is an Entry whose blobs are ids.
type entry struct {
	Entry
	ids []string
}

func (c *Checkpoints) newBuilder(parent *Manifest, opts SnapshotOptions) (*builder, error) {
	b := &builder{c: c, opts: opts, parent: parent, pentry: map[string]*Entry{}, known: map[string]*loc{}}
	gen, last := 1, int64(-1)
	if parent != nil {
		for i := range parent.Entries {
			b.pentry[parent.Entries[i].Path] = &parent.Entries[i]
		}
		for _, p := range parent.Packs {
			b.slots = append(b.slots, &packSlot{Pack: p, published: true})
			if g, _ := ParseGen(p.Name, PackName); g > gen || (g == gen && p.Version > last) {
				gen, last = g, p.Version
			}
		}
		for _, bl := range parent.Blobs {
			if _, ok := b.known[bl.ID]; !ok {
				b.known[bl.ID] = &loc{id: bl.ID, pack: b.slots[bl.Pack], offset: bl.Offset, length: bl.Length, size: bl.Size, comp: bl.Compression}
			}
		}
	}
	b.w = newPackWriter(c, gen, last)
	return b, nil
}

// walk adds every entry below root, in lexical order per directory.
func (b *builder) walk(ctx context.Context, root *os.Root) error {
	const op = "checkpoint snapshot"
	lim := b.c.opts.Limits
	return fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return b.ioErr(op, rel, err)
		}
		if rel == "." {
			return nil
		}
		if b.opts.Exclude != nil && b.opts.Exclude(rel, d) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err := zipsafe.CheckName(rel, lim); err != nil {
			return artifacts.Errorf(artifacts.CodeCorrupt, op, err, "the tree holds a path no snapshot can hold").With(b.c.opts.Scope, "", artifacts.NoVersion)
		}
		t := d.Type()
		if !t.IsDir() && !t.IsRegular() {
			b.omitted = append(b.omitted, Omission{Path: rel, Kind: EntryKind(t)})
			return nil
		}
		if lim.MaxEntries >= 0 && len(b.entries)+len(b.omitted) >= lim.MaxEntries {
			return artifacts.Errorf(artifacts.CodeQuotaExceeded, op, nil, "the tree has more than %d entries", lim.MaxEntries).With(b.c.opts.Scope, "", artifacts.NoVersion)
		}
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return b.ioErr(op, rel, err)
		}
		if t.IsDir() {
			b.entries = append(b.entries, entry{Entry: Entry{Path: rel, Type: TypeDir, Mode: uint32(fi.Mode().Perm())}})
			return nil
		}
		e, err := b.file(ctx, root, rel, fi)
		if err != nil {
			return err
		}
		b.entries = append(b.entries, e)
		b.files++
		b.bytes += e.Size
		if lim.MaxBytes >= 0 && b.bytes > lim.MaxBytes {
			return artifacts.Errorf(artifacts.CodeQuotaExceeded, op, nil, "the tree holds more than %d bytes", lim.MaxBytes).With(b.c.opts.Scope, "", artifacts.NoVersion)
		}
		if b.opts.Progress != nil {
			b.opts.Progress(b.files, b.bytes)
		}
		return nil
	})
}

func (b *builder) ioErr(op, rel string, err error) error {
	var ae *artifacts.Error
	if errors.As(err, &ae) {
		return err
	}
	code := artifacts.CodeIO
	if errors.Is(err, fs.ErrPermission) {
		code = artifacts.CodePermission
	}
	return artifacts.Errorf(code, op, err, "%q", rel).With(b.c.opts.Scope, "", artifacts.NoVersion)
}

func execBit(m uint32) bool { return m&0o111 != 0 }

// file returns the entry of the regular file rel, reusing its parent
// entry's blobs when it did not change, reading it otherwise.
func (b *builder) file(ctx context.Context, root *os.Root, rel string, fi fs.FileInfo) (entry, error) {
	const op = "checkpoint snapshot"
	mode := uint32(fi.Mode().Perm())
	pe := b.pentry[rel]
	if pe != nil && pe.Type == TypeFile && pe.Size == fi.Size() && pe.MTime == fi.ModTime().UnixNano() &&
		execBit(pe.Mode) == execBit(mode) && pe.MTime < b.parent.Created.Add(-b.c.opts.RacyWindow).UnixNano() {
		ids := make([]string, len(pe.Blobs))
		for i, bi := range pe.Blobs {
			ids[i] = b.parent.Blobs[bi].ID
		}
		return entry{Entry: Entry{Path: rel, Type: TypeFile, Mode: pe.Mode, Size: pe.Size, MTime: pe.MTime}, ids: ids}, nil
	}
	f, err := root.Open(rel)
	if err != nil {
		return entry{}, b.ioErr(op, rel, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return entry{}, b.ioErr(op, rel, err)
	}
	if !st.Mode().IsRegular() {
		return entry{}, artifacts.Errorf(artifacts.CodeConflict, op, nil, "%q turned into a %s while the snapshot ran", rel, EntryKind(st.Mode())).With(b.c.opts.Scope, "", artifacts.NoVersion)
	}
	b.read++
	e := entry{Entry: Entry{Path: rel, Type: TypeFile, Mode: uint32(st.Mode().Perm()), MTime: st.ModTime().UnixNano()}}
	// The parent's blobs that are still the file's prefix are kept (an
	// append stores only what was appended), unless they end in a run of
	// tiny blobs, which is stored again as one.
	var off int64
	if pe != nil && pe.Type == TypeFile {
		for _, bi := range pe.Blobs {
			bl := b.parent.Blobs[bi]
			if bl.Size == 0 || off+bl.Size > st.Size() {
				break
			}
			buf := b.grow(bl.Size)
			if _, err := f.ReadAt(buf, off); err != nil {
				break
			}
			if sum := sha256.Sum256(buf); hex.EncodeToString(sum[:]) != bl.ID {
				break
			}
			e.ids = append(e.ids, bl.ID)
			off += bl.Size
		}
		tiny := 0
		for k := len(e.ids) - 1; k >= 0 && b.known[e.ids[k]].size < tinyBlob; k-- {
			tiny++
		}
		if tiny >= tinyRun {
			for _, id := range e.ids[len(e.ids)-tiny:] {
				off -= b.known[id].size
			}
			e.ids = e.ids[:len(e.ids)-tiny]
		}
	}
	e.Size = off
	if b.ck == nil {
		b.ck = chunker.NewWithBoundaries(nil, Polynomial, chunkMin, chunkMax)
	}
	b.ck.ResetWithBoundaries(io.NewSectionReader(f, off, 1<<62), Polynomial, chunkMin, chunkMax)
	for {
		ch, err := b.ck.Next(b.grow(chunkMax)[:0])
		if err == io.EOF {
			break
		}
		if err != nil {
			return entry{}, b.ioErr(op, rel, err)
		}
		sum := sha256.Sum256(ch.Data)
		id := hex.EncodeToString(sum[:])
		if _, ok := b.known[id]; !ok && !b.dry {
			l, err := b.w.add(ctx, id, ch.Data)
			if err != nil {
				return entry{}, err
			}
			b.known[id] = l
		}
		e.ids = append(e.ids, id)
		e.Size += int64(len(ch.Data))
	}
	return e, nil
}

func (b *builder) grow(n int64) []byte {
	if int64(cap(b.buf)) < n {
		if n <= chunkMax {
			// One chunk buffer per snapshot at a time, reused across
			// snapshots: making (and zeroing) 8 MiB each time costs more
			// than an incremental snapshot's own work.
			b.bufp = chunkBufs.Get().(*[]byte)
			b.buf = *b.bufp
		} else {
			b.buf = make([]byte, n)
		}
	}
	return b.buf[:n]
}

var chunkBufs = sync.Pool{New: func() any { b := make([]byte, chunkMax); return &b }}

// release gives the builder's pooled buffer back.
func (b *builder) release() {
	if b.bufp != nil {
		chunkBufs.Put(b.bufp)
		b.bufp, b.buf = nil, nil
	}
}

// same reports whether the tree walked is the parent's.
func (b *builder) same(p *Manifest) bool {
	if len(b.entries) != len(p.Entries) || !slices.Equal(b.omitted, p.Omitted) || b.w.cur != nil || len(b.w.published) > 0 {
		return false
	}
	for i, e := range b.entries {
		pe := p.Entries[i]
		if e.Path != pe.Path || e.Type != pe.Type || e.Mode != pe.Mode || e.Size != pe.Size || e.MTime != pe.MTime || len(e.ids) != len(pe.Blobs) {
			return false
		}
		for k, id := range e.ids {
			if p.Blobs[pe.Blobs[k]].ID != id {
				return false
			}
		}
	}
	return true
}

// live returns, per older pack, the stored bytes of the blobs the tree
// uses.
func (b *builder) live() map[*packSlot]int64 {
	live := map[*packSlot]int64{}
	seen := map[string]bool{}
	for _, e := range b.entries {
		for _, id := range e.ids {
			if !seen[id] {
				seen[id] = true
				l := b.known[id]
				live[l.pack] += l.length
			}
		}
	}
	return live
}

// compact copies the live blobs of the parent's packs whose live share
// fell below Options.CompactBelow into this snapshot's packs, so that the
// old packs drop out once the manifests that use them are deleted. It
// returns how many packs it emptied.
func (b *builder) compact(ctx context.Context) (int, error) {
	if b.c.opts.CompactBelow < 0 {
		return 0, nil
	}
	live := b.live()
	n := 0
	for _, slot := range b.slots {
		lv, used := live[slot]
		if !used || float64(lv) >= b.c.opts.CompactBelow*float64(slot.Size) || !b.w.budget.fits(b.w, lv) {
			continue
		}
		var blobs []Blob
		for id, l := range b.known {
			if l.pack == slot && b.usedID(id) {
				blobs = append(blobs, Blob{ID: id, Offset: l.offset, Length: l.length, Size: l.size, Compression: l.comp})
			}
		}
		_, err := b.c.readBlobs(ctx, slot.Pack, blobs, func(bl Blob, stored, _ []byte) error {
			l, err := b.w.addStored(ctx, bl.ID, stored, bl.Size, bl.Compression)
			if err == nil {
				b.known[bl.ID] = l
			}
			return err
		})
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (b *builder) usedID(id string) bool {
	if b.usedSet == nil {
		b.usedSet = map[string]bool{}
		for _, e := range b.entries {
			for _, x := range e.ids {
				b.usedSet[x] = true
			}
		}
	}
	return b.usedSet[id]
}

// manifest builds the manifest of the walked tree; every pack it names
// is published.
func (b *builder) manifest(created time.Time, turn string) *Manifest {
	m := &Manifest{Format: Format, Seq: 1, Created: created.UTC(), Turn: turn, Omitted: b.omitted}
	blobIx := map[string]int{}
	packIx := map[*packSlot]int{}
	packLive := map[int]int64{}
	for _, e := range b.entries {
		out := e.Entry
		for _, id := range e.ids {
			ix, ok := blobIx[id]
			if !ok {
				l := b.known[id]
				pi, ok := packIx[l.pack]
				if !ok {
					pi = len(m.Packs)
					packIx[l.pack] = pi
					m.Packs = append(m.Packs, l.pack.Pack)
				}
				ix = len(m.Blobs)
				blobIx[id] = ix
				m.Blobs = append(m.Blobs, Blob{ID: id, Pack: pi, Offset: l.offset, Length: l.length, Size: l.size, Compression: l.comp})
				packLive[pi] += l.length
			}
			out.Blobs = append(out.Blobs, ix)
		}
		m.Entries = append(m.Entries, out)
		if e.Type == TypeDir {
			m.Totals.Dirs++
		} else {
			m.Totals.Files++
			m.Totals.Bytes += e.Size
		}
	}
	m.Totals.Blobs, m.Totals.Packs, m.Totals.AddedBytes = len(m.Blobs), len(m.Packs), b.w.added
	for pi, p := range m.Packs {
		m.Totals.DeadBytes += p.Size - packLive[pi]
	}
	if m.Entries == nil {
		m.Entries = []Entry{}
	}
	if m.Blobs == nil {
		m.Blobs = []Blob{}
	}
	if m.Packs == nil {
		m.Packs = []Pack{}
	}
	return m
}
