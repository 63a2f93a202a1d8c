package artifactstest

import (
	"slices"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// BrokenPage is one listing that CheckBrokenPages makes and checks.
type BrokenPage struct {
	// Name names the subtest.
	Name string
	// Opts are the listing's options (IncludeBroken is set for it).
	Opts artifacts.ListOptions
	// Items are the healthy versions the page lists, in order.
	Items []int64
	// Broken maps each broken version the page reports to the text its
	// reason must match.
	Broken map[int64]string
	// Next is the page's cursor.
	Next string
}

// CheckBrokenPages lists the versions of name in scope once per page, with
// IncludeBroken, and checks the healthy versions, the cursor and that the
// page reports exactly the broken versions wanted, each with code
// corrupt_artifact and a reason for which match(reason, want) holds. each,
// when not nil, checks every broken version further.
func CheckBrokenPages(t *testing.T, st *artifacts.Store, scope artifacts.Scope, name string, match func(reason, want string) bool, pages []BrokenPage, each func(t *testing.T, b artifacts.BrokenVersion)) {
	t.Helper()
	for _, c := range pages {
		t.Run(c.Name, func(t *testing.T) {
			opts := c.Opts
			opts.IncludeBroken = true
			page, err := st.ListVersions(t.Context(), scope, name, opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range page.Items {
				got = append(got, r.Version)
			}
			if !slices.Equal(got, c.Items) || page.NextCursor != c.Next {
				t.Errorf("items %v next %q, want %v %q", got, page.NextCursor, c.Items, c.Next)
			}
			if len(page.Broken) != len(c.Broken) {
				t.Fatalf("broken %+v, want %v", page.Broken, c.Broken)
			}
			for _, b := range page.Broken {
				want, ok := c.Broken[b.Problem.Version]
				if !ok || !match(b.Problem.Reason, want) || b.Problem.Code != artifacts.CodeCorrupt {
					t.Errorf("broken v%d: %+v, want reason %q", b.Problem.Version, b.Problem, want)
				}
				if each != nil {
					each(t, b)
				}
			}
		})
	}
}
