package quota

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// The layout generator of the tests and the benchmark. It writes the v1
// filesystem layout directly, as a put would leave it (slot files, empty
// reservations, payloads and records encoded with
// artifacts.EncodeRecordCompressed), but without a single fsync: a put
// syncs every file and directory it creates, which would make a 100,000
// version store take minutes to build.

// layout writes below one store root.
type layout struct {
	tb        testing.TB
	root      string
	scopeSlot int
}

func newLayout(tb testing.TB, root string) *layout {
	tb.Helper()
	if err := os.MkdirAll(filepath.Join(root, fsstore.LayoutDir, fsstore.ScopesDir), 0o700); err != nil {
		tb.Fatal(err)
	}
	return &layout{tb: tb, root: root}
}

func (l *layout) write(path string, b []byte) {
	if err := os.WriteFile(path, b, 0o600); err != nil {
		l.tb.Fatal(err)
	}
}

func (l *layout) mkdir(path string) {
	if err := os.MkdirAll(path, 0o700); err != nil {
		l.tb.Fatal(err)
	}
}

// scopeSlots takes scope slots up to k without directories (scopes whose
// every put failed, or that another writer is about to create).
func (l *layout) scopeSlots(k int) {
	for ; l.scopeSlot < k; l.scopeSlot++ {
		var fake [32]byte
		fake[0], fake[1] = byte(l.scopeSlot>>8), byte(l.scopeSlot)
		l.write(filepath.Join(l.root, fsstore.LayoutDir, fsstore.ScopesDir, fsstore.SlotFile(fsstore.ScopeSlotPrefix, l.scopeSlot+1)), []byte(hex.EncodeToString(fake[:])))
	}
}

// scope takes a slot and makes the scope's directory.
type scopeLayout struct {
	l        *layout
	scope    artifacts.Scope
	dir      string // .../<scope hash>/names
	nameSlot int
}

func (l *layout) scope(s artifacts.Scope) *scopeLayout {
	l.scopeSlot++
	scopes := filepath.Join(l.root, fsstore.LayoutDir, fsstore.ScopesDir)
	l.write(filepath.Join(scopes, fsstore.SlotFile(fsstore.ScopeSlotPrefix, l.scopeSlot)), []byte(s.Hash()))
	dir := filepath.Join(scopes, s.Hash(), fsstore.NamesDir)
	l.mkdir(dir)
	return &scopeLayout{l: l, scope: s, dir: dir}
}

// nameSlots takes name slots up to k without directories.
func (s *scopeLayout) nameSlots(k int) {
	for ; s.nameSlot < k; s.nameSlot++ {
		s.l.write(filepath.Join(s.dir, fsstore.SlotFile(fsstore.NameSlotPrefix, s.nameSlot+1)), []byte(artifacts.NameHash("slot-"+strconv.Itoa(s.nameSlot))))
	}
}

// name writes a name with versions 1..published published (payload
// "<name> v<N>") and reservations up to reserved (>= published).
func (s *scopeLayout) name(name string, published, reserved int) {
	s.nameSlot++
	s.l.write(filepath.Join(s.dir, fsstore.SlotFile(fsstore.NameSlotPrefix, s.nameSlot)), []byte(artifacts.NameHash(name)))
	dir := filepath.Join(s.dir, artifacts.NameHash(name))
	s.l.mkdir(dir)
	for v := 1; v <= max(published, reserved); v++ {
		s.l.write(filepath.Join(dir, fsstore.VersionFile(int64(v), "reserve")), nil)
		if v > published {
			continue
		}
		payload := []byte(fmt.Sprintf("%s v%d", name, v))
		sum := sha256.Sum256(payload)
		rec, err := artifacts.EncodeRecordCompressed(artifacts.Record{
			Scope: s.scope, Name: name, Version: int64(v), MIMEType: artifacts.DefaultMIMEType,
			Digest: hex.EncodeToString(sum[:]), Size: int64(len(payload)), CreatedAt: 1_700_000_000_000 + int64(v),
		})
		if err != nil {
			s.l.tb.Fatal(err)
		}
		s.l.write(filepath.Join(dir, fsstore.VersionFile(int64(v), "data")), payload)
		s.l.write(filepath.Join(dir, fsstore.VersionFile(int64(v), "meta")), rec)
	}
}

// genBench writes scopes session scopes of names names with versions
// versions each.
func genBench(tb testing.TB, root string, scopes, names, versions int) {
	l := newLayout(tb, root)
	for i := range scopes {
		s := l.scope(artifacts.SessionScope("bench", fmt.Sprintf("u%04d", i/10), fmt.Sprintf("s%d", i%10)))
		for j := range names {
			s.name(fmt.Sprintf("out/file-%02d.txt", j), versions, versions)
		}
	}
}
