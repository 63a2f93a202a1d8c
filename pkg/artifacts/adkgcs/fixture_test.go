package adkgcs_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkgcs"
)

func sortStrings(s []string) []string { slices.Sort(s); return s }

// TestFixtures reads the buckets adk-go and ADK JS wrote, at the bucket's
// root and below a prefix, and checks that agentstore lists exactly the
// versions the library listed (expected.tsv), with their sizes, SHA-256 of
// the bytes read back, MIME types and metadata keys, that the bucket's
// first version is detected, and that nothing is reported foreign.
func TestFixtures(t *testing.T) {
	tests := []struct {
		fixture, label string
		first          int64
	}{
		{testfixtures.ADKGCSGo, "adk-go-gcs", 1},
		{testfixtures.ADKGCSJS, "adk-js-gcs", 0},
	}
	for _, tt := range tests {
		for _, root := range []string{"", "some/prefix/"} {
			t.Run(tt.fixture+"/root="+root, func(t *testing.T) {
				t.Parallel()
				srv := newEmulator(t)
				loadFixture(t, srv, tt.fixture, root)
				d := openStore(t, newClient(t, srv), root, adkgcs.Options{})
				st := artifacts.NewStore(d)
				if got := st.Capabilities().FirstVersion; got != tt.first {
					t.Errorf("detected first version %d, want %d", got, tt.first)
				}
				want, err := testfixtures.ADKExpected(tt.fixture)
				if err != nil {
					t.Fatal(err)
				}
				var wantLines []string
				for _, f := range want {
					wantLines = append(wantLines, strings.Join(f, "\t"))
				}
				got := listAll(t, st, tt.label)
				slices.Sort(wantLines)
				slices.Sort(got)
				if !slices.Equal(got, wantLines) {
					t.Errorf("listing differs from expected.tsv:\n got  %d lines\n%s\n want %d lines\n%s", len(got), strings.Join(got, "\n"), len(wantLines), strings.Join(wantLines, "\n"))
				}
			})
		}
	}
}

// listAll lists every version of every name of every scope through the
// portable Store, reading each back, as expected.tsv lines.
func listAll(t *testing.T, st *artifacts.Store, label string) []string {
	t.Helper()
	var lines []string
	err := st.Walk(t.Context(), func(u artifacts.ScopeUsage) error {
		if !u.Known {
			for _, n := range u.Names {
				t.Errorf("foreign object in a library's own bucket: %+v", n.Problems)
			}
			return nil
		}
		page, err := st.ListNames(t.Context(), u.Scope, artifacts.ListOptions{Limit: 1000})
		if err != nil {
			t.Fatalf("ListNames(%s): %v", u.Scope, err)
		}
		if len(page.Items) != len(u.Names) {
			t.Errorf("ListNames(%s) has %d names, Walk %d", u.Scope, len(page.Items), len(u.Names))
		}
		for _, e := range page.Items {
			vp, err := st.ListVersions(t.Context(), u.Scope, e.Name, artifacts.ListOptions{Limit: 1000})
			if err != nil {
				t.Fatalf("ListVersions(%s, %q): %v", u.Scope, e.Name, err)
			}
			if e.Versions != len(vp.Items) || e.Latest.Version != vp.Items[len(vp.Items)-1].Version {
				t.Errorf("%s %q: ListNames says %d versions, latest v%d; ListVersions %d", u.Scope, e.Name, e.Versions, e.Latest.Version, len(vp.Items))
			}
			for _, rec := range vp.Items {
				r, err := st.Get(t.Context(), u.Scope, e.Name, rec.Version)
				if err != nil {
					t.Fatalf("Get(%s, %q, v%d): %v", u.Scope, e.Name, rec.Version, err)
				}
				h := sha256.New()
				n, err := io.Copy(h, r)
				r.Close()
				if err != nil || n != rec.Size {
					t.Fatalf("reading %s %q v%d: %d bytes, %v; record says %d", u.Scope, e.Name, rec.Version, n, err, rec.Size)
				}
				lines = append(lines, strings.Join([]string{label, rec.Scope.App, rec.Scope.User, rec.Scope.Session, rec.Name,
					strconv.FormatInt(rec.Version, 10), strconv.FormatInt(rec.Size, 10), hex.EncodeToString(h.Sum(nil)), rec.MIMEType, joinKeys(rec.Metadata)}, "\t"))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}
