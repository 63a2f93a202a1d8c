package mcpfs

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines around each hunk.
const diffContext = 3

// maxDiffCells bounds the table of the line alignment; past it the
// changed middle of the file is shown as one replacement.
const maxDiffCells = 4 << 20

// op is one line of an edit script.
type op struct {
	kind byte // ' ', '-' or '+'
	line string
}

// unifiedDiff returns the unified diff of two texts in the format of the
// reference server's edit_file (an Index header, "original" and
// "modified" labels, hunks with three lines of context).
func unifiedDiff(oldText, newText, name string) string {
	a, b := splitLines(oldText), splitLines(newText)
	ops := align(a, b)
	var sb strings.Builder
	fmt.Fprintf(&sb, "Index: %s\n%s\n--- %s\toriginal\n+++ %s\tmodified\n", name, strings.Repeat("=", 67), name, name)
	// Line numbers (1-based) of the old and new file at each op.
	n := len(ops)
	oldAt, newAt := make([]int, n+1), make([]int, n+1)
	oldAt[0], newAt[0] = 1, 1
	for k, o := range ops {
		oldAt[k+1], newAt[k+1] = oldAt[k], newAt[k]
		if o.kind != '+' {
			oldAt[k+1]++
		}
		if o.kind != '-' {
			newAt[k+1]++
		}
	}
	for i := 0; i < n; {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		end := i
		for end < n {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			// Another change within twice the context joins this hunk.
			j := end
			for j < n && ops[j].kind == ' ' && j-end < 2*diffContext {
				j++
			}
			if j < n && ops[j].kind != ' ' {
				end = j
				continue
			}
			end = min(end+diffContext, n)
			break
		}
		oldCount, newCount := oldAt[end]-oldAt[start], newAt[end]-newAt[start]
		fmt.Fprintf(&sb, "@@ -%d,%d +%d,%d @@\n", hunkStart(oldAt[start], oldCount), oldCount, hunkStart(newAt[start], newCount), newCount)
		for _, o := range ops[start:end] {
			sb.WriteByte(o.kind)
			sb.WriteString(o.line)
			sb.WriteByte('\n')
		}
		i = end
	}
	return sb.String()
}

func hunkStart(line, count int) int {
	if count == 0 {
		return line - 1
	}
	return line
}

// splitLines splits text into lines; a missing final newline is marked
// the way unified diffs mark it.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if lines[len(lines)-1] == "" {
		return lines[:len(lines)-1]
	}
	lines[len(lines)-1] += "\n\\ No newline at end of file"
	return lines
}

// align returns an edit script from a to b: the common prefix and suffix,
// and a longest common subsequence of the middle when it is small enough.
func align(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for _, l := range a[:pre] {
		ops = append(ops, op{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if (len(ma)+1)*(len(mb)+1) <= maxDiffCells {
		ops = append(ops, lcsOps(ma, mb)...)
	} else {
		for _, l := range ma {
			ops = append(ops, op{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, op{'+', l})
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}

// lcsOps aligns a and b by a longest common subsequence, deletions before
// insertions within each change.
func lcsOps(a, b []string) []op {
	w := len(b) + 1
	t := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			} else {
				t[i*w+j] = max(t[(i+1)*w+j], t[i*w+j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i++
			j++
		case j >= len(b) || (i < len(a) && t[(i+1)*w+j] >= t[i*w+j+1]):
			ops = append(ops, op{'-', a[i]})
			i++
		default:
			ops = append(ops, op{'+', b[j]})
			j++
		}
	}
	return ops
}
