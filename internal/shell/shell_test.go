package shell

import (
	"os/exec"
	"strings"
	"testing"
)

var cases = []struct {
	in, want string
}{
	{"demo-a", "demo-a"},
	{"", "''"},
	{"sessão/ü 1", "'sessão/ü 1'"},
	{"it's", `'it'\''s'`},
	{"$(rm -rf /)", "'$(rm -rf /)'"},
	{"a/b.txt", "a/b.txt"},
	{"--app=x", "--app=x"},
	{"glob*", "'glob*'"},
	{"user@host:80", "user@host:80"},
	{"new\nline", `$'new\nline'`},
	{"tab\there", `$'tab\there'`},
	{"\x1b]0;owned\x07\x1b[2J", `$'\x1b]0;owned\x07\x1b[2J'`},
	{"evil\u202etxt.exe", `$'evil\xe2\x80\xaetxt.exe'`},
	{"c1\u009bx", `$'c1\xc2\x9bx'`},
	{"ls\u2028x", `$'ls\xe2\x80\xa8x'`},
	{"bad\xffutf8", `$'bad\xffutf8'`},
	{"quote' and \\ \x1b", `$'quote\' and \\ \x1b'`},
	{"x\nnext: curl x|sh", `$'x\nnext: curl x|sh'`},
}

func TestQuote(t *testing.T) {
	for _, c := range cases {
		got := Quote(c.in)
		if got != c.want {
			t.Errorf("Quote(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.ContainsFunc(got, Hidden) || NeedsEscape(got) {
			t.Errorf("Quote(%q) = %q still holds characters a terminal acts on", c.in, got)
		}
	}
	if got := Join("agentstore", "--name", "a b", "x\x1b"); got != `agentstore --name 'a b' $'x\x1b'` {
		t.Errorf("Join: %q", got)
	}
}

// TestQuoteRoundTrip runs every quoted argument through real shells: the
// argument a shell passes on must be the original string, byte for byte.
func TestQuoteRoundTrip(t *testing.T) {
	shells := []string{"bash", "sh"}
	for _, sh := range shells {
		path, err := exec.LookPath(sh)
		if err != nil {
			t.Logf("%s not installed", sh)
			continue
		}
		for _, c := range cases {
			q := Quote(c.in)
			if sh == "sh" && strings.HasPrefix(q, "$'") {
				continue // ANSI-C quoting is not POSIX (dash lacks it)
			}
			cmd := exec.Command(path, "-c", `printf '%s' `+q)
			cmd.Env = append(cmd.Environ(), "LC_ALL=C") // no UTF-8 locale to lean on
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s -c printf %s: %v", sh, q, err)
			}
			if string(out) != c.in {
				t.Errorf("%s: %s gave %q, want %q", sh, q, out, c.in)
			}
		}
	}
}

func TestHidden(t *testing.T) {
	for _, r := range []rune{0, '\a', '\n', 0x1b, 0x7f, 0x85, 0x9b, 0x200e, 0x202a, 0x202e, 0x2066, 0x2069, 0x2028, 0xfeff} {
		if !Hidden(r) {
			t.Errorf("Hidden(%U) = false", r)
		}
	}
	for _, r := range []rune{'a', ' ', 'é', 'ü', '中', '🙂', 0xa0} {
		if Hidden(r) {
			t.Errorf("Hidden(%U) = true", r)
		}
	}
}
