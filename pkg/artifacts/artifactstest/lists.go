package artifactstest

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// pageLimits are the limits every listing is paged with; 0 is the default
// (min(100, max)) and -1 stands for the store's maximum.
var pageLimits = []int{1, 7, 100, -1, 0}

// effective returns the page size a limit means.
func effective(limit, max int) int {
	switch limit {
	case -1:
		return max
	case 0:
		return min(artifacts.DefaultPageLimit, max)
	}
	return limit
}

func testListNamesPaging(t *testing.T, s *suite) {
	st := s.newStore(t)
	const n = 250
	want := make([]string, n)
	versions := map[string]int{}
	for i := range want {
		want[i] = fmt.Sprintf("page/name-%03d", (i*37)%n) // put out of order
		k := 1
		if i%50 == 0 {
			k = 2
		}
		for range k {
			put(t, st, s.session, want[i], data(3, uint64(i)), artifacts.PutOptions{})
		}
		versions[want[i]] = k
	}
	slices.Sort(want)
	max := st.Capabilities().MaxPageLimit
	for _, limit := range pageLimits {
		size := effective(limit, max)
		t.Run(fmt.Sprintf("limit %d", size), func(t *testing.T) {
			var got []string
			cursor := ""
			for page := 0; ; page++ {
				l := limit
				if l == -1 {
					l = max
				}
				p, err := st.ListNames(t.Context(), s.session, artifacts.ListOptions{Limit: l, Cursor: cursor})
				if err != nil {
					t.Fatalf("page %d (cursor %q): %v", page, cursor, err)
				}
				rest := n - len(got)
				if len(p.Items) != min(size, rest) {
					t.Fatalf("page %d (cursor %q) has %d items, want %d", page, cursor, len(p.Items), min(size, rest))
				}
				for _, e := range p.Items {
					got = append(got, e.Name)
					if e.Versions != versions[e.Name] || e.Latest.Name != e.Name || e.Latest.Scope != s.session || e.Latest.Version != s.v(versions[e.Name]) {
						t.Errorf("entry %q: versions %d, latest %+v; want %d versions", e.Name, e.Versions, withoutMD(e.Latest), versions[e.Name])
					}
				}
				if rest <= size {
					if p.NextCursor != "" {
						t.Fatalf("last page (cursor %q) has next cursor %q, want none", cursor, p.NextCursor)
					}
					break
				}
				if p.NextCursor != p.Items[len(p.Items)-1].Name {
					t.Fatalf("page %d next cursor %q, want the page's last name %q", page, p.NextCursor, p.Items[len(p.Items)-1].Name)
				}
				cursor = p.NextCursor
			}
			if !slices.Equal(got, want) {
				t.Errorf("paging with limit %d visited %d names, want each of %d exactly once in order", size, len(got), n)
			}
		})
	}
	t.Run("invalid limits", func(t *testing.T) {
		for _, l := range []int{max + 1, -1, -100, math.MinInt, math.MaxInt} {
			_, err := st.ListNames(t.Context(), s.session, artifacts.ListOptions{Limit: l})
			wantCode(t, err, artifacts.CodeInvalidArgument, "ListNames(limit %d)", l)
		}
	})
}

func testListVersionsPaging(t *testing.T, s *suite) {
	st := s.newStore(t)
	const n = 150
	recs := putN(t, st, s.app, "paged", n, 7)
	max := st.Capabilities().MaxPageLimit
	pageAll := func(t *testing.T, limit int, want []int64) {
		t.Helper()
		size := effective(limit, max)
		var got []int64
		cursor := ""
		for page := 0; ; page++ {
			l := limit
			if l == -1 {
				l = max
			}
			p, err := st.ListVersions(t.Context(), s.app, "paged", artifacts.ListOptions{Limit: l, Cursor: cursor})
			if err != nil {
				t.Fatalf("page %d (cursor %q): %v", page, cursor, err)
			}
			rest := len(want) - len(got)
			if len(p.Items) != min(size, rest) {
				t.Fatalf("page %d (cursor %q) has %d items, want %d", page, cursor, len(p.Items), min(size, rest))
			}
			for _, r := range p.Items {
				got = append(got, r.Version)
				sameRecord(t, r, recs[r.Version-s.v(1)], "ListVersions item v%d", r.Version)
			}
			if rest <= size {
				if p.NextCursor != "" {
					t.Fatalf("last page (cursor %q) has next cursor %q, want none", cursor, p.NextCursor)
				}
				break
			}
			if last := strconv.FormatInt(p.Items[len(p.Items)-1].Version, 10); p.NextCursor != last {
				t.Fatalf("page %d next cursor %q, want the page's last version %q", page, p.NextCursor, last)
			}
			cursor = p.NextCursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("paging with limit %d visited %v, want %v", size, got, want)
		}
	}
	all := s.vs(ordinals(n)...)
	for _, limit := range pageLimits {
		t.Run(fmt.Sprintf("limit %d", effective(limit, max)), func(t *testing.T) { pageAll(t, limit, all) })
	}
	t.Run("invalid limits", func(t *testing.T) {
		for _, l := range []int{max + 1, -1, math.MinInt, math.MaxInt} {
			_, err := st.ListVersions(t.Context(), s.app, "paged", artifacts.ListOptions{Limit: l})
			wantCode(t, err, artifacts.CodeInvalidArgument, "ListVersions(limit %d)", l)
		}
	})
	t.Run("with gaps", func(t *testing.T) {
		var left []int64
		for i, v := range all {
			if o := i + 1; o%10 == 0 || o == 1 {
				deleteOK(t, st, s.app, "paged", artifacts.Selector{Kind: artifacts.SelectVersion, Version: v}, recs[i])
				continue
			}
			left = append(left, v)
		}
		for _, limit := range []int{1, 7, 0} {
			pageAll(t, limit, left)
		}
	})
}

// orderNames are names whose bytewise order differs from other orders:
// case, punctuation around '/', multi-byte UTF-8, and deep paths.
var orderNames = []string{
	"b", "a", "A", "Z", "_", "~tilde", "a b", "a-b", "a.b", "a_b", "a0", "ab",
	"a/b", "a/b/c", "a/c", "a/b-c", "a/b/c/d/e/f", "a.b/c",
	"é", "e", "f", "ä", "ß", "日本語", "日本", "😀", "\u00a0nbsp", "\U0010FFFF",
	"z", "z/a", "Ω", "ǅ",
}

func testListNamesOrder(t *testing.T, s *suite) {
	st := s.newStore(t)
	var names []string
	for i, n := range orderNames {
		n = s.n(s.user, n)
		names = append(names, n)
		put(t, st, s.user, n, data(5, uint64(i)), artifacts.PutOptions{})
	}
	want := slices.Clone(names)
	slices.Sort(want) // Go compares strings bytewise
	for _, limit := range []int{1, 3, 0} {
		var got []string
		for _, e := range allNames(t, st, s.user, limit) {
			got = append(got, e.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("ListNames(limit %d) order\n got  %q\n want %q", limit, got, want)
		}
	}
	for i, n := range names {
		mustGet(t, st, s.user, n, s.v(1), data(5, uint64(i)))
	}
}

func testCursors(t *testing.T, s *suite) {
	st := s.newStore(t)
	for _, n := range []string{"a", "c", "e"} {
		putN(t, st, s.app, n, 3, 1)
	}
	ctx := t.Context()
	t.Run("names", func(t *testing.T) {
		for _, tc := range []struct {
			cursor string
			want   []string
		}{
			{"", []string{"a", "c", "e"}},
			{"a", []string{"c", "e"}},
			{"b", []string{"c", "e"}},
			{"0", []string{"a", "c", "e"}},
			{"a/b", []string{"c", "e"}},
			{"e", nil},
			{"\U0010FFFF", nil},
		} {
			p, err := st.ListNames(ctx, s.app, artifacts.ListOptions{Cursor: tc.cursor})
			if err != nil {
				t.Errorf("ListNames(cursor %q): %v", tc.cursor, err)
				continue
			}
			var got []string
			for _, e := range p.Items {
				got = append(got, e.Name)
			}
			if !slices.Equal(got, tc.want) || p.NextCursor != "" {
				t.Errorf("ListNames(cursor %q) = %q next %q, want %q and no next cursor", tc.cursor, got, p.NextCursor, tc.want)
			}
		}
		for _, c := range []string{"a//b", "/a", "a\x00", "\xff", ".."} {
			_, err := st.ListNames(ctx, s.app, artifacts.ListOptions{Cursor: c})
			wantCode(t, err, artifacts.CodeInvalidArgument, "ListNames(cursor %q)", c)
		}
	})
	t.Run("paged", func(t *testing.T) {
		cur := func(o int) string { return strconv.FormatInt(s.v(o), 10) }
		cases := []struct {
			cursor string
			want   []int64
		}{
			{"", s.vs(1, 2, 3)},
			{cur(1), s.vs(2, 3)},
			{cur(2), s.vs(3)},
			{cur(3), nil},
			{"1000", nil},
		}
		if s.v(1) > 0 {
			cases = append(cases, struct {
				cursor string
				want   []int64
			}{cur(0), s.vs(1, 2, 3)})
		}
		for _, tc := range cases {
			p, err := st.ListVersions(ctx, s.app, "c", artifacts.ListOptions{Cursor: tc.cursor})
			if err != nil {
				t.Errorf("ListVersions(cursor %q): %v", tc.cursor, err)
				continue
			}
			var got []int64
			for _, r := range p.Items {
				got = append(got, r.Version)
			}
			if !slices.Equal(got, tc.want) || p.NextCursor != "" {
				t.Errorf("ListVersions(cursor %q) = %v next %q, want %v and no next cursor", tc.cursor, got, p.NextCursor, tc.want)
			}
		}
		for _, c := range []string{"x", "-1", "1.5", " 1", "0x1", "99999999999999999999"} {
			_, err := st.ListVersions(ctx, s.app, "c", artifacts.ListOptions{Cursor: c})
			wantCode(t, err, artifacts.CodeInvalidArgument, "ListVersions(cursor %q)", c)
		}
	})
}
