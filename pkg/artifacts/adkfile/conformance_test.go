package adkfile_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
)

// versionDir is the directory ADK's layout gives a version, computed from
// the layout's description (not from the driver): in the apps/ tree
// ROOT/apps/{app}/users/{user}/[sessions/{session}/]artifacts/{name}/versions/{N},
// in the users/ tree the same without apps/{app}; a user-scope name
// without its "user:".
func versionDir(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, version int64) string {
	t.Helper()
	var s *adkfile.Store
	if !st.As(&s) {
		t.Fatalf("store is not an *adkfile.Store")
	}
	dir := s.Root()
	if s.Variant() == adkfile.VariantApps {
		dir = filepath.Join(dir, "apps", scope.App)
	}
	dir = filepath.Join(dir, "users", scope.User)
	if scope.Kind == artifacts.KindSession {
		dir = filepath.Join(dir, "sessions", scope.Session)
	}
	name = strings.TrimPrefix(name, "user:")
	return filepath.Join(dir, "artifacts", filepath.FromSlash(name), "versions", strconv.FormatInt(version, 10))
}

// conformanceHarness runs the suite on stores of one variant: new stores
// in fresh directories, of variant, with the store app app.
func conformanceHarness(variant adkfile.Variant, app string) artifactstest.Harness {
	newStore := func(t *testing.T, limit int64) artifacts.Driver {
		root := t.TempDir()
		// A users/ store is one whose root holds users/ (ADK JS writes
		// it on its first save): make it so, as Open detects it.
		if variant == adkfile.VariantUsers {
			if err := os.Mkdir(filepath.Join(root, "users"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return open(t, root, adkfile.Options{App: app, MaxArtifactBytes: limit})
	}
	return artifactstest.Harness{
		New: func(t *testing.T) artifacts.Driver { return newStore(t, 0) },
		NewWithLimit: func(t *testing.T, limit int64) artifacts.Driver {
			return newStore(t, limit)
		},
		// The layout keeps no digest or size (UncheckedPayloads): the
		// suite skips CorruptPayload for that fact, and never calls this.
		CorruptPayload: func(t *testing.T, _ *artifacts.Store, scope artifacts.Scope, name string, v int64) {
			t.Fatalf("CorruptPayload(%s, %q, %d) called for a layout that declares UncheckedPayloads", scope, name, v)
		},
		// Break metadata.json: what ADK reads a version's record from.
		CorruptRecord: func(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, v int64) {
			t.Helper()
			p := filepath.Join(versionDir(t, st, scope, name, v), "metadata.json")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b[:len(b)/2], 0o644); err != nil {
				t.Fatal(err)
			}
		},
		SkipSlow: testing.Short(),
	}
}

// TestConformance runs the conformance suite on ADK Python's apps/ tree
// of the layout, and its quick subtests (artifactstest.QuickSubtests) on
// ADK JS's users/ tree, whose one app is the store app;
// TestConformanceUsers (integration tier) runs the whole suite on the
// users/ tree.
func TestConformance(t *testing.T) {
	t.Run("apps", func(t *testing.T) {
		artifactstest.Run(t, conformanceHarness(adkfile.VariantApps, ""))
	})
	t.Run("users", func(t *testing.T) {
		h := conformanceHarness(adkfile.VariantUsers, "store-app")
		h.Subtests = artifactstest.QuickSubtests
		artifactstest.Run(t, h)
	})
}
