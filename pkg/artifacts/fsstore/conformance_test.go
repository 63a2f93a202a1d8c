package fsstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

func openFS(t *testing.T, opts fsstore.Options) artifacts.Driver {
	t.Helper()
	s, err := fsstore.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// versionPath is the path of a version file of the store's layout.
func versionPath(t *testing.T, s *artifacts.Store, scope artifacts.Scope, name string, version int64, suffix string) string {
	t.Helper()
	var fs *fsstore.Store
	if !s.As(&fs) {
		t.Fatalf("store is a %T, not an *fsstore.Store", s)
	}
	return filepath.Join(fs.NameDir(scope, name), fsstore.VersionFile(version, suffix))
}

func fsHarness(opts fsstore.Options) artifactstest.Harness {
	return artifactstest.Harness{
		New: func(t *testing.T) artifacts.Driver { return openFS(t, opts) },
		NewWithLimit: func(t *testing.T, maxArtifactBytes int64) artifacts.Driver {
			o := opts
			o.MaxArtifactBytes = maxArtifactBytes
			return openFS(t, o)
		},
		// Flip one bit in the middle of v-N.data.
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
		// Overwrite v-N.meta with bytes that are not a record.
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
	}
}

func TestConformance(t *testing.T) {
	artifactstest.Run(t, fsHarness(fsstore.Options{}))
}
