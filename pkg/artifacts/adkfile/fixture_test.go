package adkfile_test

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
)

// fixtureLine is one line of the fixture's expected.tsv.
type fixtureLine struct {
	user, session, name string
	version             int64
	rest                string // size, digest, MIME type, metadata keys
}

func (l fixtureLine) String() string {
	return fmt.Sprintf("adk-js-file\t\t%s\t%s\t%s\t%d\t%s", l.user, l.session, l.name, l.version, l.rest)
}

// listFixture lists the store as the fixture's expected.tsv does, from
// Walk (names, versions, problems) and Get (size and SHA-256 of each
// payload, read back through the verified reader).
func listFixture(t *testing.T, st *adkfile.Store) string {
	t.Helper()
	var lines []fixtureLine
	err := st.Walk(t.Context(), func(u artifacts.ScopeUsage) error {
		if !u.Known {
			t.Errorf("foreign entries in the fixture: %+v", u.Names)
			return nil
		}
		for _, n := range u.Names {
			for _, rec := range n.Records {
				r, err := st.Get(t.Context(), rec.Scope, rec.Name, rec.Version)
				if err != nil {
					return err
				}
				h := sha256.New()
				_, err = io.Copy(h, r)
				r.Close()
				if err != nil {
					return err
				}
				lines = append(lines, fixtureLine{rec.Scope.User, rec.Scope.Session, rec.Name, rec.Version,
					fmt.Sprintf("%d\t%s\t%s\t%s", rec.Size, hex.EncodeToString(h.Sum(nil)), rec.MIMEType, strings.Join(rec.MetadataKeys(), ","))})
			}
			for _, p := range n.Problems {
				lines = append(lines, fixtureLine{u.Scope.User, u.Scope.Session, n.Name, p.Version, "\t\t\t"})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(lines, func(a, b fixtureLine) int {
		return cmp.Or(strings.Compare(a.user, b.user), strings.Compare(a.session, b.session), strings.Compare(a.name, b.name), cmp.Compare(a.version, b.version))
	})
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.String() + "\n")
	}
	return b.String()
}

// TestFixtureExpected reproduces the library's own listing of the stores
// ADK JS 2.0.0 wrote, line for line.
func TestFixtureExpected(t *testing.T) {
	for _, tc := range []struct {
		copy     func(string) (string, error)
		expected string
	}{
		{testfixtures.CopyADKFileStore, "expected.tsv"},
		{testfixtures.CopyADKFileInterrupted, "expected-interrupted.tsv"},
	} {
		t.Run(tc.expected, func(t *testing.T) {
			root, err := tc.copy(filepath.Join(t.TempDir(), "store"))
			if err != nil {
				t.Fatal(err)
			}
			st, err := adkfile.Open(root, adkfile.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if st.Variant() != adkfile.VariantUsers {
				t.Errorf("variant %v, want users/", st.Variant())
			}
			want, err := testfixtures.ADKFileExpected(tc.expected)
			if err != nil {
				t.Fatal(err)
			}
			if got := listFixture(t, st); got != want {
				t.Errorf("listing differs from %s:\n%s", tc.expected, diffLines(want, got))
			}
		})
	}
}

// diffLines shows the lines only in want (-) and only in got (+).
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
