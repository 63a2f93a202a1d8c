package mcpfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// sniffBytes is how much of a file binary detection looks at.
const sniffBytes = 8000

// textReader wraps a handle for line reading and refuses binary files: a
// NUL byte in the first sniffBytes.
func textReader(h handle, vpath string) (*bufio.Reader, error) {
	size := min(max(h.size()+1, 512), 64<<10)
	return sniffText(bufio.NewReaderSize(h, int(size)), vpath)
}

// sniffText is textReader over a reader already set up.
func sniffText(br *bufio.Reader, vpath string) (*bufio.Reader, error) {
	head, err := br.Peek(min(sniffBytes, br.Size()))
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "%s is a binary file; read it with read_media_file", vpath)
	}
	return br, nil
}

// window is what a windowed read returns.
type window struct {
	text      string
	truncated bool // stopped at the byte limit before the end
	more      bool // the count was reached before the end
	next      int  // 0-based line after the window
}

// readLines returns up to count lines (count < 0: all) after skipping
// offset lines, at most max bytes of them; the lines are joined with "\n"
// (line endings "\r\n" and "\n" dropped), as the reference server joins
// head and tail windows.
func readLines(br *bufio.Reader, offset, count int, max int64) (window, error) {
	var b strings.Builder
	line := 0
	taken := 0
	for count < 0 || taken < count {
		s, err := br.ReadSlice('\n')
		full := s
		for errors.Is(err, bufio.ErrBufferFull) {
			// A long line: keep reading it.
			if line >= offset {
				if int64(b.Len()+len(full)) > max {
					return window{text: b.String(), truncated: true, next: line}, nil
				}
				b.Write(full)
			}
			full, err = br.ReadSlice('\n')
		}
		if len(full) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return window{}, err
		}
		if line >= offset {
			t := bytes.TrimSuffix(bytes.TrimSuffix(full, []byte("\n")), []byte("\r"))
			extra := len(t)
			if taken > 0 {
				extra++
			}
			if int64(b.Len()+extra) > max && taken > 0 {
				return window{text: b.String(), truncated: true, next: line}, nil
			}
			if taken > 0 {
				b.WriteByte('\n')
			}
			b.Write(t)
			taken++
		}
		line++
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return window{}, err
		}
	}
	w := window{text: b.String(), next: line}
	if count >= 0 && taken == count {
		_, err := br.Peek(1)
		w.more = err == nil
	}
	return w, nil
}

// tailLines returns the last n lines of a file of size bytes joined with
// "\n", reading backwards from the end in blocks (8 KiB, doubling up to 1
// MiB), so that the cost is in the lines returned, not in the file's size.
// At most max bytes are read.
func tailLines(ra io.ReaderAt, size int64, n int, max int64) (string, error) {
	if n == 0 || size == 0 {
		return "", nil
	}
	tooLarge := func() error {
		return artifacts.Errorf(artifacts.CodeTooLarge, "mcp", nil, "the last %d lines are more than the %d-byte read limit", n, max)
	}
	block := int64(8 << 10)
	var buf []byte // the file's bytes from end on
	end := size
	var body []byte // the last n lines, without the final newline
	for {
		start := max64(end-block, 0)
		chunk := make([]byte, end-start, end-start+int64(len(buf)))
		if _, err := ra.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return "", err
		}
		buf = append(chunk, buf...)
		end = start
		// A final newline ends the last line; it does not start an empty one.
		all := bytes.TrimSuffix(buf, []byte("\n"))
		if i := nthLastIndex(all, '\n', n); i >= 0 {
			body = all[i+1:]
			break
		}
		if end == 0 {
			body = all // fewer than n lines in the whole file
			break
		}
		if int64(len(buf)) > max {
			return "", tooLarge()
		}
		block = min(block*2, 1<<20)
	}
	if int64(len(body)) > max {
		return "", tooLarge()
	}
	var b strings.Builder
	b.Grow(len(body))
	for i, line := range bytes.Split(body, []byte("\n")) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.Write(bytes.TrimSuffix(line, []byte("\r")))
	}
	return b.String(), nil
}

// nthLastIndex returns the index of the n-th last c in b, -1 when b holds
// fewer.
func nthLastIndex(b []byte, c byte, n int) int {
	for i := len(b); n > 0; n-- {
		i = bytes.LastIndexByte(b[:i], c)
		if i < 0 {
			return -1
		}
		if n == 1 {
			return i
		}
	}
	return -1
}

// sniffAt refuses a binary file (a NUL byte in its first sniffBytes), as
// textReader does, reading only those bytes.
func sniffAt(ra io.ReaderAt, size int64, vpath string) error {
	head := make([]byte, min(size, sniffBytes))
	n, err := ra.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if bytes.IndexByte(head[:n], 0) >= 0 {
		return artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "%s is a binary file; read it with read_media_file", vpath)
	}
	return nil
}

// tailStream is tailLines for a handle that cannot seek: it keeps the
// last n lines in a ring while reading through.
func tailStream(br *bufio.Reader, n int, max int64) (string, error) {
	if n == 0 {
		return "", nil
	}
	ring := make([]string, 0, n)
	for {
		s, err := br.ReadString('\n')
		if s != "" {
			if int64(len(s)) > max {
				return "", artifacts.Errorf(artifacts.CodeTooLarge, "mcp", nil, "a line is longer than the %d-byte read limit", max)
			}
			s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
			if len(ring) == n {
				copy(ring, ring[1:])
				ring = ring[:n-1]
			}
			ring = append(ring, s)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return "", err
		}
	}
	return strings.Join(ring, "\n"), nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// formatSize formats a byte count as the reference server does: bytes
// below 1 KiB as "N B", else two decimals of the largest binary unit.
func formatSize(n int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	if n <= 0 {
		return "0 B"
	}
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.2f %s", v, units[i])
}
