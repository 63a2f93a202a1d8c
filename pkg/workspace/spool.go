package workspace

import (
	"context"
	"errors"
	"io"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// zipEntryBound bounds the bytes a zip archive adds per entry: a local
// header, a data descriptor and a central directory header (with Zip64
// and time extras), each local and central header holding the name (at
// most zipsafe.MaxPathBytes).
const zipEntryBound = 2*zipsafe.MaxPathBytes + 512

// zipBound bounds the size of the archive of a tree scanned as sc: the
// file bytes, Deflate's worst-case growth of incompressible data (a few
// bytes per block, well below 1/256), the entries' headers and the end
// records.
func zipBound(sc treeScan) int64 {
	return sc.Bytes + sc.Bytes/256 + int64(sc.Files+sc.Dirs)*zipEntryBound + 64<<10
}

// errSpoolFull stops an archive that has grown past the largest payload.
var errSpoolFull = errors.New("archive larger than the limit")

// capWriter writes to w until more than max bytes were written in all,
// then fails with errSpoolFull.
type capWriter struct {
	w   io.Writer
	n   int64
	max int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.max {
		return 0, errSpoolFull
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// putSpooled archives with write into a temporary file in the scratch root
// (locked while it exists and removed before returning, so that a sweep
// tells it from a crashed snapshot's debris), and puts it only when it is
// at most limit bytes. A larger archive is refused with CodeTooLarge as
// soon as it passes the limit, before Put reserves a version number:
// layouts never give a reserved number back.
func (m *Manager) putSpooled(ctx context.Context, scope artifacts.Scope, write func(io.Writer) (zipsafe.WriteStats, error), limit int64) (zipsafe.WriteStats, artifacts.Record, error) {
	const op = "workspace snapshot"
	var rec artifacts.Record
	f, name, err := m.createArchive(DirName(scope.App, scope.User, scope.Session))
	if err != nil {
		return zipsafe.WriteStats{}, rec, osError(op, &scope, name, err)
	}
	defer func() {
		m.root.Remove(name)
		f.Close()
	}()
	st, err := write(&capWriter{w: f, max: limit})
	if errors.Is(err, errSpoolFull) {
		caps := m.opts.Store.Capabilities()
		return st, rec, artifacts.Errorf(artifacts.CodeTooLarge, op, nil,
			"the workspace's snapshot would be more than %d bytes, the largest payload of the %s layout; no version was used: store it in the incremental format (--snapshot-format incremental), which has no such limit, or remove files from the workspace",
			limit, caps.Layout).With(scope, SnapshotName, artifacts.NoVersion)
	}
	if err != nil {
		return st, rec, zipError(op, scope, err)
	}
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return st, rec, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return st, rec, osError(op, &scope, name, err)
	}
	rec, err = m.opts.Store.Put(ctx, scope, SnapshotName, onlyReader{f}, artifacts.PutOptions{MIMEType: SnapshotMIMEType})
	return st, rec, err
}
