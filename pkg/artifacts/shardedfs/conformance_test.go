package shardedfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/shardedfs"
)

func openSharded(t *testing.T, opts shardedfs.Options) *shardedfs.Store {
	t.Helper()
	s, err := shardedfs.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// versionPath is the path of a version file: in the scope's shard, the
// v1 layout of one store.
func versionPath(t *testing.T, s *artifacts.Store, scope artifacts.Scope, name string, version int64, suffix string) string {
	t.Helper()
	var st *shardedfs.Store
	if !s.As(&st) {
		t.Fatalf("store is a %T", s)
	}
	return filepath.Join(st.ShardRoot(scope), fsstore.LayoutDir, fsstore.ScopesDir, scope.Hash(), fsstore.NamesDir, artifacts.NameHash(name), fsstore.VersionFile(version, suffix))
}

func TestConformance(t *testing.T) {
	artifactstest.Run(t, artifactstest.Harness{
		New: func(t *testing.T) artifacts.Driver { return openSharded(t, shardedfs.Options{}) },
		NewWithLimit: func(t *testing.T, maxArtifactBytes int64) artifacts.Driver {
			return openSharded(t, shardedfs.Options{MaxArtifactBytes: maxArtifactBytes})
		},
		CorruptPayload: func(t *testing.T, s *artifacts.Store, scope artifacts.Scope, name string, version int64) {
			t.Helper()
			p := versionPath(t, s, scope, name, version, "data")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) == 0 {
				t.Fatalf("%s is empty: nothing to flip", p)
			}
			b[len(b)/2] ^= 0x01
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		CorruptRecord: func(t *testing.T, s *artifacts.Store, scope artifacts.Scope, name string, version int64) {
			t.Helper()
			p := versionPath(t, s, scope, name, version, "meta")
			if _, err := os.Stat(p); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("this is not an ETF record\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		SkipSlow: testing.Short(),
	})
}
