//go:build unix

package mcpfs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// stdinPair returns the two ends of a blocking Unix socket pair, as the
// TypeScript SDK's stdio client (libuv) gives a spawned server's stdin.
func stdinPair(t testing.TB) (r, w *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "stdin-writer")
}

// blockingPipe returns the two ends of a pipe in blocking mode, as a
// shell pipeline gives a process's stdin (os.Pipe's are non-blocking).
func blockingPipe(t testing.TB) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
}

// nonblocking reports whether f's open file is in non-blocking mode.
func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var ferr error
	if err := rc.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || ferr != nil {
		t.Fatal(err, ferr)
	}
	return flags&unix.O_NONBLOCK != 0
}

// TestPollable: a blocking pipe or socket is read non-blocking through a
// duplicate while served and is blocking again afterwards, readable as
// before; what is pollable already, a regular file, a terminal-less
// reader are left as they are.
func TestPollable(t *testing.T) {
	for _, c := range []struct {
		name    string
		open    func(t *testing.T) (r io.Reader, w io.Writer, f *os.File)
		changed bool // a duplicate is read
		nbAfter bool // non-blocking after restore (as before)
	}{
		{"blocking socket pair", func(t *testing.T) (io.Reader, io.Writer, *os.File) {
			r, w := stdinPair(t)
			t.Cleanup(func() { r.Close(); w.Close() })
			return r, w, r
		}, true, false},
		{"blocking pipe", func(t *testing.T) (io.Reader, io.Writer, *os.File) {
			r, w := blockingPipe(t)
			t.Cleanup(func() { r.Close(); w.Close() })
			return r, w, r
		}, true, false},
		{"os.Pipe, pollable already", func(t *testing.T) (io.Reader, io.Writer, *os.File) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close(); w.Close() })
			return r, w, r
		}, false, true},
		{"regular file", func(t *testing.T) (io.Reader, io.Writer, *os.File) {
			f, err := os.OpenFile(filepath.Join(t.TempDir(), "in"), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f, nil, f
		}, false, false},
		{"not a file", func(t *testing.T) (io.Reader, io.Writer, *os.File) {
			return strings.NewReader("line\n"), nil, nil
		}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, w, f := c.open(t)
			got, restore := pollable(r)
			if changed := got != r; changed != c.changed {
				t.Fatalf("a duplicate is read: %v, want %v", changed, c.changed)
			}
			if c.changed {
				if !nonblocking(t, f) {
					t.Error("not non-blocking while served")
				}
				// The duplicate reads what is written to the other end.
				if _, err := io.WriteString(w, "served\n"); err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 7)
				if _, err := io.ReadFull(got, buf); err != nil || string(buf) != "served\n" {
					t.Fatalf("read %q, %v", buf, err)
				}
			}
			restore()
			if f != nil && nonblocking(t, f) != c.nbAfter {
				t.Errorf("non-blocking after restore: %v, want %v", !c.nbAfter, c.nbAfter)
			}
			if w != nil {
				// The original is open and reads on after restore.
				if _, err := io.WriteString(w, "after\n"); err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 6)
				if _, err := io.ReadFull(f, buf); err != nil || string(buf) != "after\n" {
					t.Fatalf("original after restore: read %q, %v", buf, err)
				}
			}
		})
	}
}

// TestStdioBlockingInput: ServeStdio over a blocking pipe (a shell
// pipeline's stdin) serves calls, ends at the end of the input, and
// leaves the pipe blocking as it found it.
func TestStdioBlockingInput(t *testing.T) {
	e := newEnv(t, nil)
	e.wsFile("keep.txt", "kept")
	inR, inW := blockingPipe(t)
	defer inR.Close()
	var out bytes.Buffer
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := e.srv.ServeStdio(context.Background(), e.scope, inR, outW)
		outW.Close()
		done <- err
	}()
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"keep.txt"}}}`)
	// Read the two responses, then end the input.
	br := bufio.NewReader(outR)
	for range 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(line)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if !strings.Contains(out.String(), `"id":1,"result":{"content":[{"type":"text","text":"kept"}]`) {
		t.Errorf("output:\n%s", out.String())
	}
	if nonblocking(t, inR) {
		t.Error("stdin left non-blocking")
	}
}
