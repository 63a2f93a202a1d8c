package cmd_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// (TestEveryCommandHelp in root_test.go runs --help on every command and
// checks its EXIT STATUS section; the tests here check the help's content.)

// documented calls fn for every command of a fresh tree that --help and the
// docs show: not hidden, not deprecated, the help command excluded.
func documented(fn func(c *cobra.Command)) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		fn(c)
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				walk(s)
			}
		}
	}
	walk(docsRoot())
}

// isLeaf reports whether c does something of its own rather than only
// grouping subcommands.
func isLeaf(c *cobra.Command) bool { return c.Runnable() && !c.HasSubCommands() }

// TestHelpTexts wants a one-line summary and a longer description on every
// command, and examples on every leaf command that run it. The failure
// lists every command that lacks one.
func TestHelpTexts(t *testing.T) {
	var missing []string
	documented(func(c *cobra.Command) {
		var lacks []string
		if strings.TrimSpace(c.Short) == "" || strings.Contains(strings.TrimSpace(c.Short), "\n") {
			lacks = append(lacks, "a one-line Short")
		}
		if strings.TrimSpace(c.Long) == "" {
			lacks = append(lacks, "Long")
		}
		if isLeaf(c) {
			self := false
			for _, line := range exampleLines(c.Example) {
				if strings.HasPrefix(line+" ", c.CommandPath()+" ") {
					self = true
				}
			}
			if !self {
				lacks = append(lacks, "an Example line starting with "+fmt.Sprintf("%q", c.CommandPath()))
			}
		}
		if len(lacks) > 0 {
			missing = append(missing, c.CommandPath()+": lacks "+strings.Join(lacks, ", "))
		}
	})
	if len(missing) > 0 {
		t.Errorf("%d commands lack help text:\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
}

// TestHelpExamplesParse parses every example line that starts with
// "agentstore " as the command line it is: the command must exist, and its
// flags, positional arguments, required flags and flag groups must be
// accepted. Nothing is run.
func TestHelpExamplesParse(t *testing.T) {
	n := 0
	documented(func(c *cobra.Command) {
		for _, line := range exampleLines(c.Example) {
			n++
			if err := parseExample(line); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
			}
		}
	})
	if n == 0 {
		t.Fatal("no example lines found")
	}
}

// exampleLines returns the command lines of an Example text that start
// with "agentstore ", with backslash-newline continuations joined.
func exampleLines(example string) []string {
	var out []string
	joined := strings.ReplaceAll(example, "\\\n", " ")
	for line := range strings.Lines(joined) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "agentstore ") {
			out = append(out, line)
		}
	}
	return out
}

// parseExample resolves line against a fresh command tree and parses its
// flags and arguments without running it.
func parseExample(line string) error {
	words, err := shellWords(line)
	if err != nil {
		return err
	}
	if len(words) == 0 || words[0] != "agentstore" {
		return fmt.Errorf("does not start with agentstore: %q", words)
	}
	root := docsRoot()
	c, rest, err := root.Find(words[1:])
	if err != nil {
		return err
	}
	if err := c.ParseFlags(rest); err != nil {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	}
	args := c.Flags().Args()
	if c.HasSubCommands() && len(args) > 0 {
		return fmt.Errorf("%s has no subcommand %q", c.CommandPath(), args[0])
	}
	if !c.Runnable() {
		return fmt.Errorf("%s does nothing by itself", c.CommandPath())
	}
	if err := c.ValidateArgs(args); err != nil {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	}
	if err := c.ValidateRequiredFlags(); err != nil {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	}
	if err := c.ValidateFlagGroups(); err != nil {
		return fmt.Errorf("%s: %w", c.CommandPath(), err)
	}
	return nil
}

// shellWords splits a POSIX shell command line into words, as sh would
// before expansion: single quotes keep everything literally, double quotes
// keep everything but a backslash before $ ` " \ or newline, a backslash
// outside quotes keeps the next character. The command ends at an unquoted
// | ; & < > or a # starting a word; a redirection's file descriptor
// number ("2>") is dropped. $(...) and $VAR are kept as written.
func shellWords(line string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
		quoted bool // the current word has a quoted or escaped part
	)
	end := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord, quoted = false, false
	}
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t' || r == '\n':
			end()
		case r == '\'':
			j := slices.Index(rs[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(string(rs[i+1 : i+1+j]))
			i += j + 1
			inWord, quoted = true, true
		case r == '"':
			i++
			for ; i < len(rs) && rs[i] != '"'; i++ {
				if rs[i] == '\\' && i+1 < len(rs) && strings.ContainsRune("$`\"\\\n", rs[i+1]) {
					i++
				}
				cur.WriteRune(rs[i])
			}
			if i >= len(rs) {
				return nil, errors.New("unterminated double quote")
			}
			inWord, quoted = true, true
		case r == '\\':
			if i+1 >= len(rs) {
				return nil, errors.New("backslash at the end")
			}
			i++
			cur.WriteRune(rs[i])
			inWord, quoted = true, true
		case strings.ContainsRune("|;&<>", r):
			s := cur.String()
			if inWord && !quoted && (r == '<' || r == '>') && strings.Trim(s, "0123456789") == "" {
				inWord = false // "2>": the number is the redirection's
			}
			end()
			return words, nil
		case r == '#' && !inWord:
			return words, nil
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	end()
	return words, nil
}

func TestHelpShellWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{`agentstore fs repair --dry-run`, []string{"agentstore", "fs", "repair", "--dry-run"}, false},
		{`a  'b c'  "d e" f\ g`, []string{"a", "b c", "d e", "f g"}, false},
		{`a --user '用户-a' --session 'sessão/ü 1'`, []string{"a", "--user", "用户-a", "--session", "sessão/ü 1"}, false},
		{`a "x\"y\\z\q" 'it''s'`, []string{"a", `x"y\z\q`, "its"}, false},
		{`a --confirm "$(jq -r .plan_id plan.json)"`, []string{"a", "--confirm", "$(jq -r .plan_id plan.json)"}, false},
		{`a -o json > plan.json`, []string{"a", "-o", "json"}, false},
		{`a -o json 2>/dev/null`, []string{"a", "-o", "json"}, false},
		{`a b|jq .`, []string{"a", "b"}, false},
		{`a b; echo $?`, []string{"a", "b"}, false},
		{`a '' "" # comment`, []string{"a", "", ""}, false},
		{`a b#c`, []string{"a", "b#c"}, false},
		{`a '2'>x`, []string{"a", "2"}, false},
		{`a 'open`, nil, true},
		{`a "open`, nil, true},
		{`a \`, nil, true},
	}
	for _, tt := range tests {
		got, err := shellWords(tt.in)
		if (err != nil) != tt.err || !tt.err && !slices.Equal(got, tt.want) {
			t.Errorf("shellWords(%q) = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestHelpExampleParserCatchesMistakes makes sure parseExample is not
// trivially satisfied.
func TestHelpExampleParserCatchesMistakes(t *testing.T) {
	for _, bad := range []string{
		"agentstore fs repair --no-such-flag",
		"agentstore version extra-argument",
		"agentstore artifacts lsit",
		"agentstore bogus",
		"agentstore fs repair --grace",
	} {
		if err := parseExample(bad); err == nil {
			t.Errorf("parseExample(%q) accepted it", bad)
		}
	}
	if err := parseExample("agentstore --store gs://b -o json version"); err != nil {
		t.Errorf("a correct line: %v", err)
	}
}
