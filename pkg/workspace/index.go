package workspace

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// IndexName is the file name of the index record at the top of every
// session directory. The confined API refuses it (see IsReserved).
const IndexName = ReservedPrefix + "index"

// ReservedPrefix begins the names the manager and the sweep give their own
// files: the index record, temporary files, and the scratch root's lock,
// tombstones and hydration files. Inside a workspace only the index and
// the temporary files of the index and of writes, at the top, are the
// manager's (IsReserved); any other name, also one beginning with
// ReservedPrefix, belongs to the agent and is listed like any other.
const ReservedPrefix = ".agentstore-"

// writeTempKind names the temporary files of confined writes (tempName).
const writeTempKind = "tmp"

// IsReserved reports whether name, one path component, is a name the
// manager keeps at the top of a workspace directory: IndexName, a
// temporary file of the index (IndexName + "-" + 16 lowercase hex
// digits) or of a write (ReservedPrefix + "tmp-" + 16 lowercase hex
// digits; writes are staged at the top and renamed into place). At the
// top, and only there, listings hide these names, snapshots and quota
// counts leave them out, and the confined API refuses them. The index's
// names are refused as a component at every depth too (a symbolic link
// to the top, "self/.agentstore-index" with self -> ., would otherwise
// reach the index), but one found below the top, restored from an
// archive or put there behind the API, is an ordinary entry, listed and
// snapshotted. Nothing else is reserved: every other name, also one
// beginning with ReservedPrefix, is the agent's at every depth.
func IsReserved(name string) bool { return reservedName(name, true) }

// isIndexName reports whether name is IndexName or a temporary file of
// the index, the names refused at every depth.
func isIndexName(name string) bool { return reservedName(name, false) }

// isReservedBytes is IsReserved for a name held in a byte slice.
func isReservedBytes(name []byte) bool { return reservedName(name, true) }

func reservedName[S string | []byte](name S, temps bool) bool {
	if string(name) == IndexName {
		return true
	}
	var rest S
	switch p1, p2 := IndexName+"-", ReservedPrefix+writeTempKind+"-"; {
	case len(name) == len(p1)+16 && string(name[:len(p1)]) == p1:
		rest = name[len(p1):]
	case temps && len(name) == len(p2)+16 && string(name[:len(p2)]) == p2:
		rest = name[len(p2):]
	default:
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// IndexFormat is the value of Index.Format written by this package.
const IndexFormat = "agentstore-workspace-index/1"

// maxIndexBytes bounds the size of an index record read from disk.
const maxIndexBytes = 64 << 10

// dirNameTag separates the hash input of DirName from that of
// LegacyDirName, so that no scope's directory name can be another's.
const dirNameTag = "agentstore-workspace/2\x00"

// DirName returns the directory name of a session's workspace: the first 32
// lowercase hex characters of SHA-256 over "agentstore-workspace/2" + NUL +
// app + NUL + user + NUL + session. The app is part of the name, so a
// directory belongs to one app: an index naming another app does not hash
// to the directory it lies in and is refused (DecodeIndex).
func DirName(app, user, session string) string {
	sum := sha256.Sum256([]byte(dirNameTag + app + "\x00" + user + "\x00" + session))
	return hex.EncodeToString(sum[:16])
}

// LegacyDirName returns the directory name earlier versions gave a
// session's workspace: the first 32 hex characters of SHA-256 over user +
// NUL + session, without the app. Nothing binds the app of such a
// directory to its name (its index says it, and the agent working in the
// directory can rewrite the index), so the manager never takes the app from
// it: see Manager.Migrate.
func LegacyDirName(user, session string) string {
	sum := sha256.Sum256([]byte(user + "\x00" + session))
	return hex.EncodeToString(sum[:16])
}

// ErrUnboundApp is wrapped by the error DecodeIndex (and ReadIndex) return
// for an index that lies in the LegacyDirName directory of its user and
// session: the index is well formed, but nothing binds its app to the
// directory. The index is returned with the error, for reports and for
// Manager.Migrate, which confirms the app with the store; it must never be
// used to pick a scope on its own.
var ErrUnboundApp = errors.New("the directory is named by user and session only (a name from before app-bound names), so nothing binds the app its index names")

// IsDirName reports whether name has the form of a DirName (or a
// LegacyDirName): 32 lowercase hex characters.
func IsDirName(name string) bool {
	if len(name) != 32 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Index is the record the manager keeps in every session directory. Only
// the manager writes it (temporary file, fsync, rename, fsync of the
// directory).
type Index struct {
	// Format is IndexFormat.
	Format string `json:"format"`
	// App, User and Session name the session scope.
	App     string `json:"app"`
	User    string `json:"user"`
	Session string `json:"session"`
	// Created is when the directory was first set up on this scratch root.
	Created time.Time `json:"created"`
	// LastAccess is when the manager last served the session.
	LastAccess time.Time `json:"last_access"`
	// SnapshotVersion is the snapshot this directory was last hydrated from
	// or published as (see Snapshotted: 0 is a version in layouts that
	// number from 0).
	SnapshotVersion int64 `json:"snapshot_version,omitempty"`
	// SnapshotDigest is the SHA-256 of that version's archive, in layouts
	// that store one.
	SnapshotDigest string `json:"snapshot_digest,omitempty"`
	// SnapshotToken is the store's binding of that version's bytes (see
	// artifacts.Record.Token), in layouts that keep one.
	SnapshotToken string `json:"snapshot_token,omitempty"`
	// SnapshotName is the artifact of that version when it is not
	// SnapshotName (a zip): the manifest name of an incremental snapshot
	// (FormatIncremental; a generation of checkpoint.ManifestName).
	SnapshotName string `json:"snapshot_name,omitempty"`
	// TreeState is the state of the tree (a hash of every entry's path,
	// type, size, inode and times; no content) when it was known to equal
	// SnapshotVersion: right after a hydration, or a snapshot during which
	// it did not change. Empty when unknown. An equal state later means
	// the tree is still that version's.
	TreeState string `json:"tree_state,omitempty"`
}

// Snapshotted reports whether the index names a snapshot: every layout
// gives a published version a digest, a token or a number above 0.
func (ix Index) Snapshotted() bool {
	return ix.SnapshotVersion > 0 || ix.SnapshotDigest != "" || ix.SnapshotToken != ""
}

// IsSnapshot reports whether rec is the snapshot the index names: the same
// version, digest and token.
func (ix Index) IsSnapshot(rec artifacts.Record) bool {
	return ix.Snapshotted() && rec.Name == ix.snapshotName() && rec.Version == ix.SnapshotVersion && rec.Digest == ix.SnapshotDigest && rec.Token == ix.SnapshotToken
}

// snapshotName is the artifact of the snapshot the index names.
func (ix Index) snapshotName() string {
	if ix.SnapshotName == "" {
		return SnapshotName
	}
	return ix.SnapshotName
}

// SnapshotFormat is the format of the snapshot the index names.
func (ix Index) SnapshotFormat() SnapshotFormat {
	if ix.SnapshotName == "" {
		return FormatZip
	}
	return FormatIncremental
}

// setSnapshot records rec as the directory's snapshot; the tree state is
// unknown until the caller sets it.
func (ix *Index) setSnapshot(rec artifacts.Record) {
	ix.SnapshotVersion, ix.SnapshotDigest, ix.SnapshotToken, ix.TreeState = rec.Version, rec.Digest, rec.Token, ""
	ix.SnapshotName = ""
	if rec.Name != SnapshotName {
		ix.SnapshotName = rec.Name
	}
}

// Scope returns the session scope the index names.
func (ix Index) Scope() artifacts.Scope {
	return artifacts.SessionScope(ix.App, ix.User, ix.Session)
}

// DecodeIndex decodes and checks an index record found in directory dir
// (a DirName): the format must be IndexFormat, the scope must be valid, and
// DirName(App, User, Session) must equal dir. A record that fails any check
// must never be used to pick a scope. A record that lies in the
// LegacyDirName of its user and session is returned with an error wrapping
// ErrUnboundApp.
func DecodeIndex(b []byte, dir string) (Index, error) {
	var ix Index
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&ix); err != nil {
		return Index{}, fmt.Errorf("index does not decode: %w", err)
	}
	if dec.More() {
		return Index{}, errors.New("index has trailing data")
	}
	if ix.Format != IndexFormat {
		return Index{}, fmt.Errorf("index format %q, want %q", ix.Format, IndexFormat)
	}
	if err := ix.Scope().Validate(); err != nil {
		return Index{}, fmt.Errorf("index scope: %w", err)
	}
	if got := DirName(ix.App, ix.User, ix.Session); got != dir {
		if LegacyDirName(ix.User, ix.Session) == dir {
			return ix, fmt.Errorf("index names app %q: %w", ix.App, ErrUnboundApp)
		}
		return Index{}, fmt.Errorf("index key hashes to %s, not to its directory %s", got, dir)
	}
	return ix, nil
}

// readIndex reads the index record at the top of root (see ReadIndex).
func readIndex(root *os.Root, dir string) (Index, error) {
	ix, _, err := ReadIndex(root, dir)
	return ix, err
}

// ReadIndex reads and decodes the index record at the top of root, the
// workspace directory dir opened as a root: a regular file (never a
// symbolic link, never waited on), opened as the very file examined, at
// most 64 KiB, whose key must hash to dir (see DecodeIndex, also for
// ErrUnboundApp). It returns the file's information too, so that a caller
// (the sweep) can tell later whether the index was rewritten.
func ReadIndex(root *os.Root, dir string) (Index, fs.FileInfo, error) {
	fi, err := root.Lstat(IndexName)
	if err != nil {
		return Index{}, nil, err
	}
	if !fi.Mode().IsRegular() {
		return Index{}, nil, fmt.Errorf("index is a %v, not a regular file", fi.Mode().Type())
	}
	f, err := root.OpenFile(IndexName, os.O_RDONLY|osutil.OpenNoFollow|osutil.OpenNonBlock, 0)
	if err != nil {
		return Index{}, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Index{}, nil, err
	}
	if !os.SameFile(fi, st) {
		return Index{}, nil, errors.New("index was replaced while being read")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxIndexBytes+1))
	if err != nil {
		return Index{}, nil, err
	}
	if len(b) > maxIndexBytes {
		return Index{}, nil, fmt.Errorf("index is larger than %d bytes", maxIndexBytes)
	}
	ix, err := DecodeIndex(b, dir)
	return ix, st, err
}

// writeIndex replaces the index record atomically: a temporary file created
// exclusively, written, fsynced, renamed over the index, then the directory
// fsynced.
func writeIndex(root *os.Root, ix Index) error {
	ix.Format = IndexFormat
	b, err := json.Marshal(ix)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	tmp := tempName("index")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, IndexName)
	}
	if err != nil {
		root.Remove(tmp)
		return err
	}
	return syncDir(root, ".")
}

// syncDir fsyncs a directory of root.
func syncDir(root *os.Root, name string) error {
	d, err := root.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// tempName returns a fresh reserved name for a temporary file.
func tempName(kind string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return ReservedPrefix + kind + "-" + hex.EncodeToString(b[:])
}

// isIndexFile reports whether fi is the very file of root's index record
// (the index itself, or a hard link to it).
func isIndexFile(root *os.Root, fi fs.FileInfo) bool {
	ix, err := root.Lstat(IndexName)
	return err == nil && os.SameFile(ix, fi)
}
