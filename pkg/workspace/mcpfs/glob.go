package mcpfs

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// glob is a compiled glob pattern over slash-separated relative paths, in
// the dialect the reference server's clients use (minimatch with dot
// files matched): "*", "?" and "[...]" within one segment, "**" as a whole
// segment for any number of segments, and "{a,b}" alternatives.
type glob struct {
	alts [][]string // each alternative split into segments
}

// The bounds of a glob: the pattern as given, its brace alternatives and
// their bytes together. Matching one path costs at most the path's
// segments times the expanded bytes, so these bound every match.
const (
	maxPatternBytes      = 4 << 10
	maxBraceAlternatives = 256
	maxGlobBytes         = 64 << 10
)

// compileGlob checks and compiles a pattern; the error says which bound
// or rule it broke.
func compileGlob(pattern string) (glob, error) {
	if len(pattern) > maxPatternBytes {
		return glob{}, fmt.Errorf("is %d bytes, more than the %d-byte limit of a pattern", len(pattern), maxPatternBytes)
	}
	var g glob
	total := 0
	for _, alt := range expandBraces(pattern, maxBraceAlternatives) {
		if total += len(alt); total > maxGlobBytes {
			return glob{}, fmt.Errorf("expands to more than %d bytes of alternatives; use fewer or shorter {a,b} alternatives", maxGlobBytes)
		}
		segs := strings.Split(strings.TrimPrefix(alt, "./"), "/")
		// Repeated "**" segments match what one does.
		segs = slices.CompactFunc(segs, func(a, b string) bool { return a == "**" && b == "**" })
		for _, s := range segs {
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return glob{}, errors.New("is not a valid glob")
			}
		}
		g.alts = append(g.alts, segs)
	}
	if len(g.alts) == 0 {
		return glob{}, errors.New("is not a valid glob")
	}
	return g, nil
}

// match reports whether the relative path rel matches.
func (g glob) match(rel string) bool {
	for _, segs := range g.alts {
		if matchSegs(segs, rel) {
			return true
		}
	}
	return false
}

// matchSegs matches one alternative's segments against a path as a set of
// states, one per pattern segment, advanced one path segment at a time
// (as a regular expression's NFA runs): each pattern segment is tried at
// most once per path segment, so a match costs the path's segments times
// the pattern's, whatever the number of "**".
func matchSegs(segs []string, rel string) bool {
	n := len(segs) + 1 // state len(segs): the whole pattern matched
	var a, b [32]bool  // the sets of a short pattern, on the stack
	cur, next := a[:], b[:]
	if n > len(a) {
		cur, next = make([]bool, n), make([]bool, n)
	}
	cur, next = cur[:n], next[:n]
	cur[0] = true
	closeStars(segs, cur)
	for {
		name, rest, more := strings.Cut(rel, "/")
		clear(next)
		live := false
		for i, on := range cur[:len(segs)] {
			if !on {
				continue
			}
			if segs[i] == "**" {
				next[i] = true // "**" takes this segment and stays
				live = true
			} else if ok, _ := path.Match(segs[i], name); ok {
				next[i+1] = true
				live = true
			}
		}
		if !live {
			return false
		}
		closeStars(segs, next)
		cur, next = next, cur
		if !more {
			return cur[len(segs)]
		}
		rel = rest
	}
}

// closeStars adds to set the states a "**" reaches by matching no
// segment: the state after each "**" state.
func closeStars(segs []string, set []bool) {
	for i, s := range segs {
		if set[i] && s == "**" {
			set[i+1] = true
		}
	}
}

// expandBraces expands "{a,b}" alternatives, at most limit results.
func expandBraces(p string, limit int) []string {
	open := strings.IndexByte(p, '{')
	if open < 0 {
		return []string{p}
	}
	depth := 0
	close := -1
	var commas []int
	for i := open; i < len(p) && close < 0; i++ {
		switch p[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				close = i
			}
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		}
	}
	if close < 0 || len(commas) == 0 {
		return []string{p}
	}
	var out []string
	start := open + 1
	for _, c := range append(commas, close) {
		for _, rest := range expandBraces(p[:open]+p[start:c]+p[close+1:], limit) {
			if len(out) >= limit {
				return out
			}
			out = append(out, rest)
		}
		start = c + 1
	}
	return out
}

// excluder decides directory_tree's and search_files' exclusions: a
// pattern excludes a path it matches, and (as the reference server's
// directory_tree does) a path that has a matching segment anywhere.
type excluder []glob

// compileExcludes compiles exclude patterns; together their alternatives
// may hold at most maxGlobBytes. The error names the pattern at fault.
func compileExcludes(patterns []string, anywhere bool) (excluder, error) {
	var ex excluder
	total := 0
	for _, p := range patterns {
		if p == "" {
			continue
		}
		forms := []string{p}
		if anywhere && !strings.Contains(p, "/") {
			forms = append(forms, "**/"+p, "**/"+p+"/**")
		}
		for _, f := range forms {
			g, err := compileGlob(f)
			if err != nil {
				return nil, badGlob("exclude pattern", p, err)
			}
			if total += g.size(); total > maxGlobBytes {
				return nil, badGlob("exclude pattern", p, fmt.Errorf("brings the exclude patterns to more than %d bytes of alternatives together", maxGlobBytes))
			}
			ex = append(ex, g)
		}
	}
	return ex, nil
}

// size is the bytes of the glob's alternatives.
func (g glob) size() int {
	n := 0
	for _, segs := range g.alts {
		for _, s := range segs {
			n += len(s) + 1
		}
	}
	return n
}

// badGlob is the INVALID_ARGUMENT error of a glob argument (what names
// the argument) that did not compile; a long pattern is quoted by its
// start only.
func badGlob(what, pattern string, err error) error {
	return artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "%s %s %v", what, quoteStart(pattern), err)
}

// quoteStart quotes a pattern for an error message, only its first 100
// bytes when it is longer.
func quoteStart(p string) string {
	const show = 100
	if len(p) <= show {
		return fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf("%q... (%d bytes)", p[:show], len(p))
}

func (ex excluder) excluded(rel string) bool {
	for _, g := range ex {
		if g.match(rel) {
			return true
		}
	}
	return false
}
