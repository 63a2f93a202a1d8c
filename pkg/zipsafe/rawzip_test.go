package zipsafe

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
)

// rawEntry describes one zip entry byte for byte, so tests can craft
// archives that archive/zip refuses to write (lying sizes, bad CRCs,
// overlapping entries, arbitrary modes, methods and flags).
type rawEntry struct {
	name    string
	method  uint16
	flags   uint16
	crc     uint32
	csize   uint32
	usize   uint32
	data    []byte // bytes following the local header
	mode    uint32 // Unix mode including the type bits; stored in ExternalAttrs>>16
	creator uint16 // "version made by"; zero means Unix, spec 3.0
}

// rawFile returns a consistent entry for content: Deflate (level 9) when
// deflate is set, else Store.
func rawFile(name string, content []byte, mode uint32, deflate bool) rawEntry {
	e := rawEntry{name: name, mode: mode, crc: crc32.ChecksumIEEE(content), usize: uint32(len(content))}
	if deflate {
		var b bytes.Buffer
		fw, _ := flate.NewWriter(&b, flate.BestCompression)
		fw.Write(content)
		fw.Close()
		e.method, e.data = 8, b.Bytes()
	} else {
		e.data = content
	}
	e.csize = uint32(len(e.data))
	return e
}

func rawDir(name string) rawEntry { return rawEntry{name: name, mode: 0o040755} }

func (e rawEntry) localHeader() []byte {
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	le(uint32(0x04034b50))
	le(uint16(20))
	le(e.flags)
	le(e.method)
	le(uint16(0))      // mod time
	le(uint16(0x5b21)) // mod date (2025-09-01)
	le(e.crc)
	le(e.csize)
	le(e.usize)
	le(uint16(len(e.name)))
	le(uint16(0))
	b.WriteString(e.name)
	b.Write(e.data)
	return b.Bytes()
}

// rawZip assembles local headers, then a central directory and its end record.
type rawZip struct {
	body bytes.Buffer
	cd   bytes.Buffer
	n    int
}

// add writes e's local header and data and a central directory record for it.
func (z *rawZip) add(e rawEntry) uint32 {
	off := uint32(z.body.Len())
	z.body.Write(e.localHeader())
	z.central(e, off)
	return off
}

// central adds a central directory record for e pointing at off.
func (z *rawZip) central(e rawEntry, off uint32) {
	b := &z.cd
	le := func(v any) { binary.Write(b, binary.LittleEndian, v) }
	creator := e.creator
	if creator == 0 {
		creator = 3<<8 | 30
	}
	le(uint32(0x02014b50))
	le(creator)
	le(uint16(20))
	le(e.flags)
	le(e.method)
	le(uint16(0))
	le(uint16(0x5b21))
	le(e.crc)
	le(e.csize)
	le(e.usize)
	le(uint16(len(e.name)))
	le(uint16(0)) // extra
	le(uint16(0)) // comment
	le(uint16(0)) // disk
	le(uint16(0)) // internal attrs
	le(e.mode << 16)
	le(off)
	b.WriteString(e.name)
	z.n++
}

func (z *rawZip) bytes() []byte {
	var b bytes.Buffer
	b.Write(z.body.Bytes())
	cdOff := uint32(b.Len())
	b.Write(z.cd.Bytes())
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	le(uint32(0x06054b50))
	le(uint16(0))
	le(uint16(0))
	le(uint16(z.n))
	le(uint16(z.n))
	le(uint32(z.cd.Len()))
	le(cdOff)
	le(uint16(0))
	return b.Bytes()
}

func buildZip(entries ...rawEntry) []byte {
	var z rawZip
	for _, e := range entries {
		z.add(e)
	}
	return z.bytes()
}
