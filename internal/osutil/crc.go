package osutil

import (
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
)

// FileCRC returns the CRC-32 (IEEE, as zip archives record it) of the
// regular file name of dir, opened without following a symbolic link and
// without blocking on a FIFO; the file opened must be the one fi
// describes. buf is the copy buffer.
func FileCRC(dir *os.Root, name string, fi fs.FileInfo, buf []byte) (uint32, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY|OpenNoFollow|OpenNonBlock, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !os.SameFile(st, fi) {
		return 0, errors.New(name + " was replaced while being read")
	}
	h := crc32.NewIEEE()
	if _, err := io.CopyBuffer(h, onlyReader{f}, buf); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// onlyReader hides WriterTo so io.CopyBuffer uses the buffer given.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
