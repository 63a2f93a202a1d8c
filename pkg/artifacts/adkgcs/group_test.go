package adkgcs

import (
	"slices"
	"testing"
)

// TestGroup: group sorts a scope's objects, given in listing order (by
// object name), into names in bytewise order with versions ascending by
// number, and shadows the stripped user-scope form when both forms hold a
// name; the names' objects are parts of its input, capped so that growing
// one cannot overwrite the next.
func TestGroup(t *testing.T) {
	type name struct {
		name     string
		versions []int64
		shadowed []int64
	}
	tests := []struct {
		name    string
		objects []string // relative object names, in listing order
		want    []name
	}{
		{"none", nil, []name{}},
		{"versions in number order, not name order",
			[]string{"a/u/s/f/1", "a/u/s/f/10", "a/u/s/f/2"},
			[]name{{"f", []int64{1, 2, 10}, nil}}},
		{"a name's versions interleaved with another name's",
			[]string{"a/u/s/d/0", "a/u/s/d/0abc/1", "a/u/s/d/1", "a/u/s/d/file.txt/1", "a/u/s/e/1"},
			[]name{{"d", []int64{0, 1}, nil}, {"d/0abc", []int64{1}, nil}, {"d/file.txt", []int64{1}, nil}, {"e", []int64{1}, nil}}},
		{"user name in both forms: the stripped one is shadowed",
			[]string{"a/u/user/f/1", "a/u/user/f/3", "a/u/user/g/1", "a/u/user/user:f/2", "a/u/user/user:f/1"},
			[]name{{"user:f", []int64{1, 2}, []int64{1, 3}}, {"user:g", []int64{1}, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []object
			for _, rel := range tt.objects {
				p, err := parseObject(rel)
				if err != nil {
					t.Fatalf("parseObject(%q): %v", rel, err)
				}
				objs = append(objs, object{p: p, name: rel})
			}
			got := []name{}
			names := group(objs)
			for _, nv := range names {
				n := name{name: nv.name}
				for _, o := range nv.objects {
					if o.p.name != nv.name || o.p.form != formKept && len(nv.shadowed) > 0 {
						t.Errorf("%s: object %s (form %d) among its versions", nv.name, o.name, o.p.form)
					}
					n.versions = append(n.versions, o.p.version)
				}
				for _, o := range nv.shadowed {
					n.shadowed = append(n.shadowed, o.p.version)
				}
				got = append(got, n)
			}
			if !slices.EqualFunc(got, tt.want, func(a, b name) bool {
				return a.name == b.name && slices.Equal(a.versions, b.versions) && slices.Equal(a.shadowed, b.shadowed)
			}) {
				t.Errorf("group = %+v, want %+v", got, tt.want)
			}
			// Growing one name's versions leaves the next name's alone.
			if len(names) > 1 {
				next := names[1].objects[0]
				_ = append(names[0].objects, object{name: "grown"})
				if names[1].objects[0].name != next.name {
					t.Errorf("appending to %s's versions overwrote %s's", names[0].name, names[1].name)
				}
			}
		})
	}
}
