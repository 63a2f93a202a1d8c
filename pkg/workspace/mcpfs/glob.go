package mcpfs

import (
	"path"
	"strings"
)

// glob is a compiled glob pattern over slash-separated relative paths, in
// the dialect the reference server's clients use (minimatch with dot
// files matched): "*", "?" and "[...]" within one segment, "**" as a whole
// segment for any number of segments, and "{a,b}" alternatives.
type glob struct {
	alts [][]string // each alternative split into segments
}

// maxBraceAlternatives bounds brace expansion.
const maxBraceAlternatives = 256

// compileGlob checks and compiles a pattern.
func compileGlob(pattern string) (glob, bool) {
	var g glob
	for _, alt := range expandBraces(pattern, maxBraceAlternatives) {
		segs := strings.Split(strings.TrimPrefix(alt, "./"), "/")
		for _, s := range segs {
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return glob{}, false
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, len(g.alts) > 0
}

// match reports whether the relative path rel matches.
func (g glob) match(rel string) bool {
	names := strings.Split(rel, "/")
	for _, segs := range g.alts {
		if matchSegs(segs, names) {
			return true
		}
	}
	return false
}

func matchSegs(segs, names []string) bool {
	for len(segs) > 0 {
		if segs[0] == "**" {
			// Collapse repeated "**", then try every split.
			for len(segs) > 1 && segs[1] == "**" {
				segs = segs[1:]
			}
			if len(segs) == 1 {
				return true
			}
			for i := 0; i <= len(names); i++ {
				if matchSegs(segs[1:], names[i:]) {
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

func compileExcludes(patterns []string, anywhere bool) (excluder, string) {
	var ex excluder
	for _, p := range patterns {
		if p == "" {
			continue
		}
		forms := []string{p}
		if anywhere && !strings.Contains(p, "/") {
			forms = append(forms, "**/"+p, "**/"+p+"/**")
		}
		for _, f := range forms {
			g, ok := compileGlob(f)
			if !ok {
				return nil, p
			}
			ex = append(ex, g)
		}
	}
	return ex, ""
}

func (ex excluder) excluded(rel string) bool {
	for _, g := range ex {
		if g.match(rel) {
			return true
		}
	}
	return false
}
