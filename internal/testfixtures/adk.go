package testfixtures

import (
	"embed"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

//go:embed all:google-adk-file-js
var adkFiles embed.FS

// ADKFileJS is the name of the fixture written by ADK JS 2.0.0's
// FileArtifactService: store/ (a users/ tree, no apps/) and
// store-interrupted/ (the same saves plus one killed mid-write).
const ADKFileJS = "google-adk-file-js"

// CopyADKFileStore copies the ADK JS file fixture's store/ into dst
// (which must not exist or be empty) and returns dst. Directories are
// made 0755 and files 0644, as ADK JS makes them under a usual umask.
func CopyADKFileStore(dst string) (string, error) {
	return dst, copyADK(ADKFileJS+"/store", dst)
}

// CopyADKFileInterrupted copies the fixture's store-interrupted/ into dst
// and returns dst.
func CopyADKFileInterrupted(dst string) (string, error) {
	return dst, copyADK(ADKFileJS+"/store-interrupted", dst)
}

// ADKFileExpected returns the fixture's expected.tsv ("expected.tsv") or
// expected-interrupted.tsv, as the library listed it: one line per
// version, fields layout, app, user, session, name, version, size,
// SHA-256, MIME type, custom metadata keys.
func ADKFileExpected(file string) (string, error) {
	b, err := adkFiles.ReadFile(path.Join(ADKFileJS, file))
	return string(b), err
}

func copyADK(src, dst string) error {
	return fs.WalkDir(adkFiles, src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, src), "/")
		target := filepath.Join(dst, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := adkFiles.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
