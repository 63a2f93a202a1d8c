package zipsafe

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"path"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/flate"
)

// How Write spreads compression over the cores while keeping memory flat.
const (
	// bufferedMax is the size up to which a file is read and compressed
	// into memory by a worker, in parallel with other files; larger files
	// stream through the writer.
	bufferedMax = 2 << 20
	// budgetBytes bounds the memory that read and compressed files waiting
	// for their turn may hold at once.
	budgetBytes = 16 << 20
	// window bounds the entries (and so the open files) between the walk
	// and the writer; they are handed over in batches of up to batchSize,
	// so that many small files cost few goroutine wake-ups.
	window    = 64
	batchSize = 16
	// inlineMax is the size up to which the walk reads and compresses a
	// file itself: handing it to a worker would cost more than the work.
	inlineMax = 8 << 10
	// probeBytes is how much of a streamed file is compressed on trial to
	// decide whether it is worth compressing at all.
	probeBytes = 64 << 10
)

// storedExts are file name extensions of formats that are already
// compressed: Write stores them without trying Deflate.
var storedExts = map[string]bool{
	".7z": true, ".avif": true, ".br": true, ".bz2": true, ".docx": true,
	".flac": true, ".gif": true, ".gz": true, ".heic": true, ".jar": true,
	".jpeg": true, ".jpg": true, ".lz4": true, ".m4a": true, ".mkv": true,
	".mov": true, ".mp3": true, ".mp4": true, ".ogg": true, ".opus": true,
	".parquet": true, ".pdf": true, ".png": true, ".pptx": true, ".rar": true,
	".tgz": true, ".webm": true, ".webp": true, ".whl": true, ".xlsx": true,
	".xz": true, ".zip": true, ".zst": true,
}

// storedByName reports whether the file's name says its content is already
// compressed.
func storedByName(rel string) bool {
	ext := path.Ext(rel)
	if len(ext) < 2 || len(ext) > 8 {
		return false
	}
	return storedExts[strings.ToLower(ext)]
}

// worthStoring reports whether compressed bytes of out for in raw bytes
// save too little (under 1/32) to be worth inflating again.
func worthStoring(in, out int) bool { return out >= in-in/32 }

type entryKind uint8

const (
	kindDir      entryKind = iota
	kindBuffered           // read and compressed into memory by a worker
	kindStream             // read and compressed by the writer as it goes
	kindFail               // the walk stopped here with err
)

// entry is one archive entry on its way from the walk to the writer.
type entry struct {
	kind entryKind
	rel  string
	hdr  *zip.FileHeader
	f    *srcFile
	size int64 // as the walk saw it
	err  error // kindFail
	need int64 // bytes of the budget held

	// Set by the worker of a kindBuffered entry before it closes done.
	done chan struct{}
	raw  *[]byte       // the file's bytes
	comp *bytes.Buffer // their Deflate form; nil when the entry is stored
	crc  uint32
	grew bool  // the file grew past its size while read: stream it
	rerr error // reading failed
}

var (
	rawPool  = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}
	compPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}
)

// budget is a count of bytes that the walk takes (in archive order) and
// the writer gives back (in the same order), so it never deadlocks.
type budget struct {
	mu      sync.Mutex
	cond    sync.Cond
	free    int64
	stopped bool
}

func (b *budget) acquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n && !b.stopped {
		b.cond.Wait()
	}
	if b.stopped {
		return false
	}
	b.free -= n
	return true
}

// tryAcquire takes n if it is free now.
func (b *budget) tryAcquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.free < n || b.stopped {
		return false
	}
	b.free -= n
	return true
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *budget) stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

// closedDone is the done channel of entries the walk compresses itself.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// errStopped tells the walk that the writer failed; the writer's error is
// the one Write returns.
var errStopped = errors.New("zipsafe: stopped")

// packer writes the entries the walk sends, in the order sent, while
// workers read and compress files ahead of the writer.
type packer struct {
	zw     *zip.Writer
	lim    Limits
	opts   WriteOptions
	method uint16
	level  int

	order    chan []*entry // walk -> writer, archive order, in batches
	work     chan *entry   // walk -> workers
	quit     chan struct{}
	quitOnce sync.Once
	budget   budget
	workers  sync.WaitGroup
	written  chan struct{} // closed when the writer returned

	// Owned by the walk: the batch being filled and a compressor for the
	// files it compresses itself.
	pending []*entry
	inline  *flate.Writer

	// Owned by the writer goroutine.
	stats WriteStats
	err   error
	buf   []byte
	head  []byte
	probe *flate.Writer
}

func newPacker(zw *zip.Writer, lim Limits, opts WriteOptions, method uint16, level int) *packer {
	p := &packer{
		zw: zw, lim: lim, opts: opts, method: method, level: level,
		order:   make(chan []*entry, window/batchSize),
		work:    make(chan *entry, window),
		quit:    make(chan struct{}),
		written: make(chan struct{}),
		buf:     make([]byte, 256<<10),
	}
	p.budget.cond.L = &p.budget.mu
	p.budget.free = budgetBytes
	return p
}

// start starts the writer and, when entries are compressed, one worker
// per core.
func (p *packer) start() {
	if p.method == zip.Deflate {
		for range runtime.GOMAXPROCS(0) {
			p.workers.Add(1)
			go p.worker()
		}
	}
	go func() {
		defer close(p.written)
		p.writeAll()
	}()
}

func (p *packer) stop() {
	p.quitOnce.Do(func() {
		close(p.quit)
		p.budget.stop()
	})
}

func (p *packer) stopped() bool {
	select {
	case <-p.quit:
		return true
	default:
		return false
	}
}

// send hands e to the writer (and a buffered entry to a worker, unless it
// is small enough for the walk to compress at once). It returns
// errStopped, having closed every file not handed over, when the writer
// has failed.
func (p *packer) send(e *entry) error {
	inline := e.kind == kindBuffered && e.size <= inlineMax
	if e.kind == kindBuffered {
		e.need = 2*e.size + 4<<10
		e.done = closedDone // compressed below, before anyone waits
		if !inline {
			e.done = make(chan struct{})
		}
		if !p.budget.tryAcquire(e.need) {
			// The writer gives the budget back only for entries it has.
			if err := p.flush(); err != nil {
				e.f.Close()
				return err
			}
			if !p.budget.acquire(e.need) {
				e.f.Close()
				p.drop()
				return errStopped
			}
		}
	}
	p.pending = append(p.pending, e)
	switch {
	case inline:
		if !p.stopped() {
			p.inline = p.compress(e, p.inline)
		}
	case e.kind == kindBuffered:
		p.work <- e // workers take every entry sent until work is closed
	}
	if len(p.pending) >= batchSize {
		return p.flush()
	}
	return nil
}

// flush hands the pending entries to the writer.
func (p *packer) flush() error {
	if len(p.pending) == 0 {
		return nil
	}
	select {
	case p.order <- p.pending:
		p.pending = make([]*entry, 0, batchSize)
		return nil
	case <-p.quit:
		p.drop()
		return errStopped
	}
}

// drop closes the files of the pending entries once no worker reads them.
func (p *packer) drop() {
	for _, e := range p.pending {
		if e.done != nil {
			<-e.done
		}
		if e.f != nil {
			e.f.Close()
		}
	}
	p.pending = nil
}

// fail ends the archive at this point of the walk with err.
func (p *packer) fail(err error) {
	p.pending = append(p.pending, &entry{kind: kindFail, err: err})
	p.flush()
}

// finish hands over what is pending, waits for the writer and the
// workers and returns the writer's stats and first error.
func (p *packer) finish() (WriteStats, error) {
	p.flush()
	close(p.order)
	close(p.work)
	<-p.written
	p.workers.Wait()
	for _, fw := range []*flate.Writer{p.probe, p.inline} {
		if fw != nil {
			flatePools[p.level-flate.HuffmanOnly].Put(fw)
		}
	}
	return p.stats, p.err
}

func (p *packer) worker() {
	defer p.workers.Done()
	var fw *flate.Writer
	for e := range p.work {
		if !p.stopped() {
			fw = p.compress(e, fw)
		}
		close(e.done)
	}
	if fw != nil {
		flatePools[p.level-flate.HuffmanOnly].Put(fw)
	}
}

// compress reads e's file whole and deflates it (unless by name or by
// result it is better stored). It returns the flate.Writer for reuse.
func (p *packer) compress(e *entry, fw *flate.Writer) *flate.Writer {
	e.raw = rawPool.Get().(*[]byte)
	buf := *e.raw
	if int64(cap(buf)) < e.size+1 {
		buf = make([]byte, e.size+1)
	}
	buf = buf[:e.size+1]
	*e.raw = buf
	n, err := io.ReadFull(e.f, buf)
	switch {
	case err == nil:
		e.grew = true
		return fw
	case err != io.EOF && err != io.ErrUnexpectedEOF:
		e.rerr = err
		return fw
	}
	data := buf[:n]
	*e.raw = data
	e.crc = crc32.ChecksumIEEE(data)
	if n == 0 || storedByName(e.rel) {
		return fw
	}
	out := compPool.Get().(*bytes.Buffer)
	out.Reset()
	if fw == nil {
		var err error
		if fw, _, err = newFlate(out, p.level); err != nil {
			e.rerr = err
			compPool.Put(out)
			return nil
		}
	} else {
		fw.Reset(out)
	}
	if _, err := fw.Write(data); err != nil {
		e.rerr = err
	} else if err := fw.Close(); err != nil {
		e.rerr = err
	}
	if e.rerr != nil || worthStoring(n, out.Len()) {
		compPool.Put(out)
		return fw
	}
	e.comp = out
	return fw
}

// writeAll writes the entries in order until the first error, then drains.
func (p *packer) writeAll() {
	for batch := range p.order {
		for _, e := range batch {
			if p.err == nil {
				if err := p.write(e); err != nil {
					p.err = err
					p.stop()
				}
			} else if e.kind == kindBuffered {
				<-e.done
			}
			p.release(e)
		}
	}
}

// release closes e's file and gives back its buffers and budget.
func (p *packer) release(e *entry) {
	if e.f != nil {
		e.f.Close()
	}
	if e.raw != nil {
		if cap(*e.raw) <= bufferedMax+1 {
			rawPool.Put(e.raw)
		}
		e.raw = nil
	}
	if e.comp != nil {
		compPool.Put(e.comp)
		e.comp = nil
	}
	if e.need > 0 {
		p.budget.release(e.need)
	}
}

func (p *packer) write(e *entry) error {
	switch e.kind {
	case kindFail:
		return e.err
	case kindDir:
		if _, err := p.zw.CreateHeader(e.hdr); err != nil {
			return wrapErr(CodeIO, e.rel, err)
		}
		p.stats.Dirs++
		return nil
	case kindBuffered:
		<-e.done
		if e.rerr != nil {
			return wrapErr(CodeIO, e.rel, e.rerr)
		}
		if !e.grew {
			return p.writeRaw(e)
		}
		if _, err := e.f.Seek(0, io.SeekStart); err != nil {
			return wrapErr(CodeIO, e.rel, err)
		}
	}
	return p.stream(e)
}

// fileDone counts a written file.
func (p *packer) fileDone() {
	p.stats.Files++
	if p.opts.Progress != nil {
		p.opts.Progress(p.stats.Files, p.stats.Bytes)
	}
}

// tooLarge checks the running total after n more bytes.
func (p *packer) tooLarge(e *entry, n int64) error {
	if p.lim.MaxBytes > 0 && p.stats.Bytes+n > p.lim.MaxBytes {
		return newErr(CodeTooLarge, e.rel, "more than %d bytes in total (Limits.MaxBytes)", p.lim.MaxBytes)
	}
	return nil
}

// writeRaw writes a buffered entry, compressed or stored, as it is.
func (p *packer) writeRaw(e *entry) error {
	raw := *e.raw
	n := int64(len(raw))
	if err := p.tooLarge(e, n); err != nil {
		return err
	}
	data, h := raw, e.hdr
	h.Method = zip.Store
	if e.comp != nil {
		data, h.Method = e.comp.Bytes(), zip.Deflate
	}
	h.CRC32 = e.crc
	h.UncompressedSize64, h.CompressedSize64 = uint64(n), uint64(len(data))
	prepareRaw(h)
	zf, err := p.zw.CreateRaw(h)
	if err != nil {
		return wrapErr(CodeIO, e.rel, err)
	}
	if _, err := zf.Write(data); err != nil {
		return wrapErr(CodeIO, e.rel, err)
	}
	p.stats.Bytes += n
	p.fileDone()
	return nil
}

// stream writes a file through the zip.Writer as it reads it. A file that
// is to be deflated is first tried on its head: if that does not shrink,
// or its name says it is compressed, it is stored.
func (p *packer) stream(e *entry) error {
	var src io.Reader = e.f
	remaining := int64(-1)
	if p.lim.MaxBytes > 0 {
		remaining = p.lim.MaxBytes - p.stats.Bytes
		src = io.LimitReader(e.f, remaining+1)
	}
	if e.hdr.Method == zip.Deflate {
		if p.head == nil {
			p.head = make([]byte, probeBytes)
		}
		k, err := io.ReadFull(src, p.head)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return wrapErr(CodeIO, e.rel, err)
		}
		head := p.head[:k]
		if storedByName(e.rel) || p.incompressible(head) {
			e.hdr.Method = zip.Store
		}
		src = io.MultiReader(bytes.NewReader(head), src)
	}
	zf, err := p.zw.CreateHeader(e.hdr)
	if err != nil {
		return wrapErr(CodeIO, e.rel, err)
	}
	n, err := io.CopyBuffer(zf, onlyReader{src}, p.buf)
	p.stats.Bytes += n
	if err != nil {
		return wrapErr(CodeIO, e.rel, err)
	}
	if remaining >= 0 && n > remaining {
		return newErr(CodeTooLarge, e.rel, "more than %d bytes in total (Limits.MaxBytes)", p.lim.MaxBytes)
	}
	p.fileDone()
	return nil
}

// countWriter counts and drops what is written to it.
type countWriter struct{ n int }

func (c *countWriter) Write(b []byte) (int, error) { c.n += len(b); return len(b), nil }

// incompressible deflates head on trial and reports whether it did not
// shrink enough to be worth it.
func (p *packer) incompressible(head []byte) bool {
	if len(head) < 4<<10 {
		return false
	}
	var c countWriter
	if p.probe == nil {
		fw, _, err := newFlate(&c, p.level)
		if err != nil {
			return false
		}
		p.probe = fw
	} else {
		p.probe.Reset(&c)
	}
	if _, err := p.probe.Write(head); err != nil {
		return false
	}
	if err := p.probe.Close(); err != nil {
		return false
	}
	return worthStoring(len(head), c.n)
}

// prepareRaw fills in what zip.Writer.CreateHeader would for an entry
// written with CreateRaw: versions, the UTF-8 flag and the modification
// time (MS-DOS fields and the extended timestamp Info-ZIP writes).
func prepareRaw(h *zip.FileHeader) {
	h.CreatorVersion = h.CreatorVersion&0xff00 | 20
	h.ReaderVersion = 20
	for i := 0; i < len(h.Name); i++ {
		if h.Name[i] >= utf8.RuneSelf {
			h.Flags |= 0x800
			break
		}
	}
	if h.Modified.IsZero() {
		return
	}
	//lint:ignore SA1019 CreateRaw writes the legacy fields as given; CreateHeader fills them from Modified the same way.
	h.ModifiedDate, h.ModifiedTime = msDosTime(h.Modified)
	var ext [9]byte
	binary.LittleEndian.PutUint16(ext[0:], 0x5455) // extended timestamp
	binary.LittleEndian.PutUint16(ext[2:], 5)
	ext[4] = 1 // modification time only
	binary.LittleEndian.PutUint32(ext[5:], uint32(h.Modified.Unix()))
	h.Extra = append(h.Extra, ext[:]...)
}

// msDosTime encodes t in its own time zone as an MS-DOS date and time
// (years before 1980 as 1980).
func msDosTime(t time.Time) (date, tod uint16) {
	year := max(t.Year(), 1980)
	date = uint16(t.Day() + int(t.Month())<<5 + (year-1980)<<9)
	tod = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
	return date, tod
}
