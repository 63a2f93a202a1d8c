package mcpfs

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// refMatchSegs is the matcher glob.go had before the state-set one: it
// tries every split at every "**", exponential in the number of "**".
// The fuzz test holds the new matcher to its answers on small inputs.
func refMatchSegs(segs, names []string) bool {
	for len(segs) > 0 {
		if segs[0] == "**" {
			for len(segs) > 1 && segs[1] == "**" {
				segs = segs[1:]
			}
			if len(segs) == 1 {
				return true
			}
			for i := 0; i <= len(names); i++ {
				if refMatchSegs(segs[1:], names[i:]) {
					return true
				}
			}
			return false
		}
		if len(names) == 0 {
			return false
		}
		if ok, _ := path.Match(segs[0], names[0]); !ok {
			return false
		}
		segs, names = segs[1:], names[1:]
	}
	return len(names) == 0
}

// refMatch is glob.match with refMatchSegs, on the same alternatives.
func refMatch(g glob, rel string) bool {
	names := strings.Split(rel, "/")
	for _, segs := range g.alts {
		if refMatchSegs(segs, names) {
			return true
		}
	}
	return false
}

// pairs is "**/a/" repeated n times then "b": the pattern that took the
// recursive matcher seconds per path in a chain of directories named a.
func pairs(n int) string { return strings.Repeat("**/a/", n) + "b" }

// chain is n segments "a", then tail when not empty.
func chain(n int, tail string) string {
	segs := make([]string, n, n+1)
	for i := range segs {
		segs[i] = "a"
	}
	if tail != "" {
		segs = append(segs, tail)
	}
	return strings.Join(segs, "/")
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"*.csv", "a.csv", true},
		{"*.csv", "d/a.csv", false},
		{"**/*.csv", "a.csv", true},
		{"**/*.csv", "d/e/a.csv", true},
		{"d/**", "d/e/a.csv", true},
		{"d/**", "e/a.csv", false},
		{"*.{csv,md}", "a.md", true},
		{"*.{csv,md}", "a.txt", false},
		{".*", ".hidden", true},
		{"a?c", "abc", true},
		{"[ab]*", "cat", false},
		{"**", "x/y/z", true},
		{"**/node_modules/**", "a/node_modules/b/c", true},
		{"**", "", true},
		{"**", "a", true},
		{"**/**/x", "x", true},
		{"**/**/x", "a/b/x", true},
		{"a/**", "a", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"a/**/b/**", "a/b", true},
		{"**/b/**/c", "b/c/c", true},
		{"**/b/**/c", "c/b", false},
		{"*/*", "a", false},
		{"*/*", "a/b", true},
		{"*/*", "a/b/c", false},
		{"./x/*", "x/y", true},
		{"x/", "x", false},
		{"x/", "x/", true},
		{"{a,b}/**/c", "b/z/c", true},
		{"{a,b}/**/c", "z/b/c", false},
		{"[^a]*", "bar", true},
		{"[^a]*", "abc", false},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{pairs(12), chain(30, "b"), true},
		{pairs(12), chain(30, ""), false},
		{pairs(12), chain(11, "b"), false},
		{pairs(12), chain(12, "b"), true},
		{pairs(40), chain(60, "c"), false},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatalf("compile %q: %v", tt.pattern, err)
		}
		if got := g.match(tt.path); got != tt.want {
			t.Errorf("%q matches %q = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
		// The reference agrees where it answers quickly.
		if strings.Count(tt.pattern, "**") <= 3 {
			if got := refMatch(g, tt.path); got != tt.want {
				t.Errorf("reference: %q matches %q = %v, want %v", tt.pattern, tt.path, got, tt.want)
			}
		}
	}
}

func TestGlobLimits(t *testing.T) {
	tests := []struct {
		name, pattern, want string
	}{
		{"too long", strings.Repeat("a", maxPatternBytes+1), "more than the 4096-byte limit"},
		{"alternatives too large", strings.Repeat("{"+strings.Repeat("a", 200)+",b}", 8), "more than 65536 bytes of alternatives"},
		{"bad class", "[a", "is not a valid glob"},
		{"bad class in alternative", "{x,[a}", "is not a valid glob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compileGlob(tt.pattern)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
	if n := len(expandBraces(strings.Repeat("{a,b}", 20), maxBraceAlternatives)); n != maxBraceAlternatives {
		t.Errorf("brace expansion gave %d alternatives", n)
	}
	if _, err := compileGlob(strings.Repeat("a", maxPatternBytes)); err != nil {
		t.Errorf("a pattern of exactly the limit: %v", err)
	}
	// Exclude patterns share one budget.
	many := make([]string, 0, 40)
	for i := range cap(many) {
		many = append(many, fmt.Sprintf("%04d%s", i, strings.Repeat("x", 2000)))
	}
	if _, err := compileExcludes(many, false); err == nil || !strings.Contains(err.Error(), "exclude patterns to more than") {
		t.Errorf("40 exclude patterns of 2 KB: error %v", err)
	}
	if _, err := compileExcludes(many[:10], false); err != nil {
		t.Errorf("10 exclude patterns of 2 KB: %v", err)
	}
}

// TestGlobChain: the 12-pair pattern over a chain of 30 directories named
// a, as search_files' pattern, and eight alternatives of a 15-pair one as
// directory_tree's excludePatterns, answer with the right result. The
// recursive matcher took seconds a path for the first and minutes for
// the second: the hang guard fails it.
func TestGlobChain(t *testing.T) {
	e := newEnv(t, nil)
	e.wsFile(filepath.Join(chain(30, "b")), "bottom\n")
	e.wsFile("b", "top\n") // matches no pattern of 12 pairs
	search, code := answerWithin(t, e, "search_files", map[string]any{"path": "/workspace", "pattern": pairs(12)})
	if code != "" {
		t.Fatalf("search_files: %s", search)
	}
	eight := "{" + strings.Repeat(pairs(15)+",", 7) + pairs(15) + "}"
	tree, code := answerWithin(t, e, "directory_tree", map[string]any{"path": "/workspace", "excludePatterns": []string{eight}})
	if code != "" {
		t.Fatalf("directory_tree: %s", tree)
	}
	if want := "/workspace/" + chain(30, "b"); search != want {
		t.Errorf("search_files: %q, want %q", search, want)
	}
	if strings.Count(tree, `"name": "b"`) != 1 || strings.Count(tree, `"name": "a"`) != 30 {
		t.Errorf("directory_tree did not exclude exactly the bottom b: %s", tree)
	}
}

// FuzzGlob: the state-set matcher answers as the recursive one did.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"**/*.csv", "a/b.csv"}, {"a/**/b/**/c", "a/b/b/c/c"}, {"**/a/**/a/b", "a/a/a/b"},
		{"{a,b}/*", "b/x"}, {"*/**/?", "x/y"}, {"**/**", ""}, {"./**/x", "x"}, {"[a-c]*/**", "c/d/e"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, rel string) {
		if len(pattern) > 40 || len(rel) > 40 || strings.Count(pattern, "**") > 6 {
			t.Skip()
		}
		g, err := compileGlob(pattern)
		if err != nil {
			return
		}
		if got, want := g.match(rel), refMatch(g, rel); got != want {
			t.Errorf("%q matches %q = %v, the reference says %v", pattern, rel, got, want)
		}
	})
}
