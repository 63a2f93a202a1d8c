//go:build !unix

package zipsafe

import (
	"io/fs"
	"os"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
)

// listDir lists the open directory d.
func listDir(d *os.File) ([]fs.DirEntry, error) { return d.ReadDir(-1) }

// srcDir is an open directory of the tree whose files the walk opens.
type srcDir struct{ root *os.Root }

func newSrcDir(root *os.Root, _ *os.File) srcDir { return srcDir{root: root} }

// srcFile is a file of the tree being read.
type srcFile = os.File

// srcStat is what Write needs of an opened file's status.
type srcStat struct {
	regular bool
	mode    fs.FileMode
	perm    fs.FileMode
	size    int64
	mtime   time.Time
}

// open opens name in the directory without following a symbolic link.
func (s srcDir) open(name string) (*srcFile, srcStat, error) {
	f, err := s.root.OpenFile(name, os.O_RDONLY|osutil.OpenNoFollow, 0)
	if err != nil {
		return nil, srcStat{}, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, srcStat{}, err
	}
	return f, srcStat{regular: fi.Mode().IsRegular(), mode: fi.Mode().Type(), perm: fi.Mode().Perm(), size: fi.Size(), mtime: fi.ModTime()}, nil
}

func isSymlinkErr(error) bool { return false }
