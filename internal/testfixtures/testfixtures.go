// Package testfixtures holds, embedded, the stores written by the Erlang ADK
// library itself and the Cloud Storage objects written by Google ADK's
// GcsArtifactService (adk-go and ADK JS) (copied from the project's shared fixtures so that a fresh
// clone is self-contained), and copies them into temporary directories for
// tests. Tests never change the embedded originals.
package testfixtures

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

//go:embed all:erlang-adk-fs-v1 all:erlang-adk-gcs-v1 all:erlang-adk-fs-sharded-v1 all:google-adk-gcs-go all:google-adk-gcs-js
var files embed.FS

// FSStore is the name of the filesystem fixture.
const FSStore = "erlang-adk-fs-v1"

// ShardedFSStore is the name of the sharded filesystem fixture (Erlang
// ADK 0.10 durable_local: ROOT/scope-shards/<scope hash>/v1/...).
const ShardedFSStore = "erlang-adk-fs-sharded-v1"

// GCSObjects is the name of the Cloud Storage fixture.
const GCSObjects = "erlang-adk-gcs-v1"

// CopyFSStore copies the filesystem fixture's store into dst (which must
// not exist or be empty) and returns the store root, dst itself. Files are
// made 0600 and directories 0700, as the store would.
func CopyFSStore(dst string) (string, error) {
	return dst, copyTree(FSStore+"/store", dst)
}

// CopyShardedFSStore copies the sharded filesystem fixture's store (the
// directory holding scope-shards/) into dst, as CopyFSStore does.
func CopyShardedFSStore(dst string) (string, error) {
	return dst, copyTree(ShardedFSStore+"/store", dst)
}

func copyTree(src, dst string) error {
	return fs.WalkDir(files, src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, src), "/")
		target := filepath.Join(dst, filepath.FromSlash(rel))
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o600)
	})
}

// GCSObject is one object of the Cloud Storage fixture.
type GCSObject struct {
	Name string // object name, e.g. adk-artifacts/v1/s/<hash>/n/<hash>/v-…
	Data []byte
}

// GCSObjectsList returns every object of the Cloud Storage fixture.
func GCSObjectsList() ([]GCSObject, error) {
	var out []GCSObject
	root := GCSObjects + "/objects"
	err := fs.WalkDir(files, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		out = append(out, GCSObject{Name: strings.TrimPrefix(p, root+"/"), Data: b})
		return nil
	})
	return out, err
}

// Expected is one line of a fixture's expected.tsv: a published version as
// the Erlang library decoded it.
type Expected struct {
	ScopeHash, NameHash      string // filesystem fixture only
	Kind, App, User, Session string
	Name                     string
	Version                  int64
	Size                     int64
	Digest                   string
	MIMEType                 string
	CreatedAt                int64
	MetadataKeys             []string
}

// ExpectedFS returns the filesystem fixture's expected.tsv.
func ExpectedFS() ([]Expected, error) { return readExpected(FSStore, true) }

// ExpectedShardedFS returns the sharded filesystem fixture's expected.tsv.
func ExpectedShardedFS() ([]Expected, error) { return readExpected(ShardedFSStore, true) }

// ExpectedGCS returns the Cloud Storage fixture's expected.tsv.
func ExpectedGCS() ([]Expected, error) { return readExpected(GCSObjects, false) }

func readExpected(fixture string, hashes bool) ([]Expected, error) {
	b, err := files.ReadFile(path.Join(fixture, "expected.tsv"))
	if err != nil {
		return nil, err
	}
	var out []Expected
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if hashes {
			if len(f) < 2 {
				continue
			}
			f = f[2:]
		}
		if len(f) != 11 {
			continue
		}
		e := Expected{Kind: f[0], App: f[1], User: f[2], Session: f[3], Name: f[4], Digest: f[7], MIMEType: f[8]}
		if hashes {
			parts := strings.Split(sc.Text(), "\t")
			e.ScopeHash, e.NameHash = parts[0], parts[1]
		}
		e.Version, _ = strconv.ParseInt(f[5], 10, 64)
		e.Size, _ = strconv.ParseInt(f[6], 10, 64)
		e.CreatedAt, _ = strconv.ParseInt(f[9], 10, 64)
		if f[10] != "" {
			e.MetadataKeys = strings.Split(f[10], ",")
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// The Google ADK Cloud Storage fixtures: every object a real
// GcsArtifactService left in its bucket, with its Content-Type and
// metadata (objects.jsonl), and the library's own listing (expected.tsv).
const (
	ADKGCSGo = "google-adk-gcs-go" // adk-go 2.2.0, versions from 1
	ADKGCSJS = "google-adk-gcs-js" // ADK JS 2.0.0, versions from 0
)

// ADKObject is one object of a Google ADK Cloud Storage fixture.
type ADKObject struct {
	Name        string            `json:"name"`
	ContentType string            `json:"contentType"`
	Metadata    map[string]string `json:"metadata"`
	Size        string            `json:"size"`
	CRC32C      string            `json:"crc32c"`
	MD5Hash     string            `json:"md5Hash"`
	// Data is the object's bytes.
	Data []byte `json:"-"`
}

// ADKObjects returns the objects of fixture (ADKGCSGo or ADKGCSJS), sorted
// by name, with their bytes.
func ADKObjects(fixture string) ([]ADKObject, error) {
	b, err := files.ReadFile(fixture + "/objects.jsonl")
	if err != nil {
		return nil, err
	}
	var out []ADKObject
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var o ADKObject
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			return nil, fmt.Errorf("%s/objects.jsonl: %v", fixture, err)
		}
		// Go modules hold no file name with ":": the copy stores it as %3A.
		if o.Data, err = files.ReadFile(fixture + "/objects/" + strings.ReplaceAll(o.Name, ":", "%3A")); err != nil {
			return nil, err
		}
		if strconv.Itoa(len(o.Data)) != o.Size {
			return nil, fmt.Errorf("%s: object %s has %d bytes, objects.jsonl says %s", fixture, o.Name, len(o.Data), o.Size)
		}
		out = append(out, o)
	}
	return out, nil
}

// ADKExpected returns the lines of fixture's expected.tsv: layout, app,
// user, session (empty for user: names), name, version, size, SHA-256,
// MIME type, custom metadata keys (comma-separated), as the library
// listed them.
func ADKExpected(fixture string) ([][]string, error) {
	b, err := files.ReadFile(fixture + "/expected.tsv")
	if err != nil {
		return nil, err
	}
	var out [][]string
	for line := range strings.SplitSeq(strings.TrimRight(string(b), "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 10 {
			return nil, fmt.Errorf("%s/expected.tsv: line %q has %d fields, want 10", fixture, line, len(f))
		}
		out = append(out, f)
	}
	return out, nil
}
