// Package gen writes a large, valid filesystem store directly in the v1
// layout (slots, reservations, payloads and records, no fsync), for
// benchmarks of repair and verify.
package gen

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// Options shape the generated store.
type Options struct {
	// Files is the number of files to write in name directories (three per
	// version: reserve, data, meta), rounded down to whole versions.
	Files int
	// PayloadBytes is the size of every payload.
	PayloadBytes int
	// Scopes is the number of scopes (default 100).
	Scopes int
	// VersionsPerName is the number of versions of every name (default 10).
	VersionsPerName int
	// Workers write name directories in parallel (default 8).
	Workers int
}

// Stats describe what was written.
type Stats struct {
	Files        int   // files in name directories
	Versions     int   // published versions
	NameDirs     int   // name directories
	PayloadBytes int64 // bytes of all payloads
}

// Generate writes a store into root (created if missing).
func Generate(root string, opts Options) (Stats, error) {
	if opts.Scopes <= 0 {
		opts.Scopes = 100
	}
	if opts.VersionsPerName <= 0 {
		opts.VersionsPerName = 10
	}
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	versions := opts.Files / 3
	names := (versions + opts.VersionsPerName - 1) / opts.VersionsPerName
	perScope := (names + opts.Scopes - 1) / opts.Scopes
	scopes := filepath.Join(root, fsstore.LayoutDir, fsstore.ScopesDir)
	if err := os.MkdirAll(scopes, 0o700); err != nil {
		return Stats{}, err
	}
	type job struct{ scope, name, count int }
	jobs := make(chan job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	var st Stats
	for range opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				n, err := writeName(scopes, j.scope, j.name, j.count, opts.PayloadBytes)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				st.Files += 3 * j.count
				st.Versions += j.count
				st.NameDirs++
				st.PayloadBytes += n
				mu.Unlock()
			}
		}()
	}
	left := versions
	for s := 0; s < opts.Scopes && left > 0; s++ {
		scope := benchScope(s)
		sdir := filepath.Join(scopes, scope.Hash())
		if err := os.MkdirAll(filepath.Join(sdir, fsstore.NamesDir), 0o700); err != nil {
			close(jobs)
			wg.Wait()
			return st, err
		}
		if err := os.WriteFile(filepath.Join(scopes, fsstore.SlotFile(fsstore.ScopeSlotPrefix, s+1)), []byte(scope.Hash()), 0o600); err != nil {
			close(jobs)
			wg.Wait()
			return st, err
		}
		for n := 0; n < perScope && left > 0; n++ {
			c := min(opts.VersionsPerName, left)
			left -= c
			jobs <- job{scope: s, name: n, count: c}
		}
	}
	close(jobs)
	wg.Wait()
	return st, firstErr
}

func benchScope(s int) artifacts.Scope {
	return artifacts.SessionScope("bench", fmt.Sprintf("user-%d", s%10), fmt.Sprintf("session-%d", s))
}

func writeName(scopes string, s, n, count, size int) (int64, error) {
	scope := benchScope(s)
	name := fmt.Sprintf("reports/file-%06d.bin", n)
	names := filepath.Join(scopes, scope.Hash(), fsstore.NamesDir)
	dir := filepath.Join(names, artifacts.NameHash(name))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(names, fsstore.SlotFile(fsstore.NameSlotPrefix, n+1)), []byte(artifacts.NameHash(name)), 0o600); err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewPCG(uint64(s), uint64(n)))
	payload := make([]byte, size)
	var total int64
	for v := int64(1); v <= int64(count); v++ {
		for i := 0; i+8 <= len(payload); i += 8 {
			binary.LittleEndian.PutUint64(payload[i:], rng.Uint64())
		}
		rec := artifacts.Record{Scope: scope, Name: name, Version: v, MIMEType: "application/octet-stream",
			Size: int64(size), Digest: digest(payload), CreatedAt: 1_700_000_000_000 + v, Metadata: artifacts.Metadata{}}
		meta, err := artifacts.EncodeRecord(rec)
		if err != nil {
			return total, err
		}
		for _, f := range []struct {
			suffix string
			b      []byte
		}{{"reserve", nil}, {"data", payload}, {"meta", meta}} {
			if err := os.WriteFile(filepath.Join(dir, fsstore.VersionFile(v, f.suffix)), f.b, 0o600); err != nil {
				return total, err
			}
		}
		total += int64(size)
	}
	return total, nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return artifacts.DigestHex(s[:])
}
