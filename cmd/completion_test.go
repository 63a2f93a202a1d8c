//go:build integration

package cmd_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildAgentstore returns the directory of an agentstore binary, for a
// PATH through which the completion scripts call "agentstore __complete":
// the copy of this test binary that testscript.Main (see TestMain) puts
// first on PATH, which runs Main as agentstore. No go build: that took
// minutes of a loaded machine.
func buildAgentstore(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("agentstore")
	if err != nil {
		t.Fatalf("no agentstore on PATH (TestMain puts it there): %v", err)
	}
	return filepath.Dir(bin)
}

// shellEnv is an environment for a shell running the completion scripts:
// the built binary first on PATH, and no agentstore settings.
func shellEnv(t *testing.T, bin string) []string {
	home := t.TempDir()
	env := []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"XDG_DATA_HOME=" + home,
		"LANG=C.UTF-8",
	}
	if os.Getenv("GORACE") == "" {
		// Under -race the test binary standing in for agentstore would
		// sleep a second at every exit; races are still reported.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AGENTSTORE_") || strings.HasPrefix(kv, "PATH=") ||
			strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_") || strings.HasPrefix(kv, "BASH_COMP") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// completionCase is a command line being completed: the words so far (the
// last one the word under the cursor, "" after a space) and completions
// that must be offered.
type completionCase struct {
	words []string
	want  []string
}

var completionCases = []completionCase{
	{[]string{"agentstore", "ar"}, []string{"artifacts"}},
	{[]string{"agentstore", ""}, []string{"artifacts", "fs", "version", "completion"}},
	{[]string{"agentstore", "fs", "re"}, []string{"repair"}},
	{[]string{"agentstore", "--output", ""}, []string{"table", "json"}},
	{[]string{"agentstore", "quota", "report", "--output", ""}, []string{"table", "json", "wide", "prometheus"}},
	{[]string{"agentstore", "--log-format", ""}, []string{"text", "json"}},
	{[]string{"agentstore", "version", "--store", "g"}, []string{"gs://"}},
}

// shellQuote quotes s for bash and zsh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runShell runs script with the shell and returns its stdout.
func runShell(t *testing.T, env []string, shell string, args ...string) string {
	t.Helper()
	c := exec.Command(shell, args...)
	c.Env = env
	c.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", shell, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// checkOffered fails unless every wanted completion is among the lines of
// out (a line being a completion, possibly followed by a description).
func checkOffered(t *testing.T, words []string, out string, want []string) {
	t.Helper()
	var got []string
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if f := strings.Fields(line); len(f) > 0 {
			got = append(got, f[0])
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("completing %q: %q not offered; got %q", words, w, got)
		}
	}
}

// TestCompletionBash sources the committed bash script in a real bash and
// completes command lines through its completion function, which calls the
// built binary's __complete command.
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	script := filepath.Join(repoRoot(t), "completions", "agentstore.bash")
	env := shellEnv(t, buildAgentstore(t))
	// Without the bash-completion package, the script's fallback needs
	// _get_comp_words_by_ref; this minimal one splits at spaces only, as
	// COMP_WORDS does here.
	const getWords = `
if [[ -r /usr/share/bash-completion/bash_completion ]]; then
  source /usr/share/bash-completion/bash_completion
fi
if ! declare -F _get_comp_words_by_ref >/dev/null; then
  _get_comp_words_by_ref() {
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  }
fi
`
	for _, tc := range completionCases {
		var quoted []string
		for _, w := range tc.words {
			quoted = append(quoted, shellQuote(w))
		}
		prog := getWords + "source " + shellQuote(script) + `
complete -p agentstore >/dev/null || { echo "no completion registered for agentstore" >&2; exit 1; }
COMP_WORDS=(` + strings.Join(quoted, " ") + `)
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
COMP_TYPE=9
__start_agentstore
printf '%s\n' "${COMPREPLY[@]}"
`
		out := runShell(t, env, bash, "--norc", "--noprofile", "-c", prog)
		checkOffered(t, tc.words, out, tc.want)
	}
}

// TestCompletionZsh loads the committed zsh script in a real zsh after
// compinit and runs its completion function _agentstore with the words of
// a command line, which calls the built binary's __complete command.
// Outside a completion widget zsh refuses compadd and _describe, so the
// test replaces those two with functions that print what they are given.
func TestCompletionZsh(t *testing.T) {
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("zsh is not installed: CI must exercise the zsh completion script (.ci/run installs it)")
		}
		t.Skip("zsh is not installed on this machine (apt-get install zsh); the zsh completion script is not exercised")
	}
	script := filepath.Join(repoRoot(t), "completions", "agentstore.zsh")
	env := shellEnv(t, buildAgentstore(t))
	// One zsh for every case (compinit is slow): each case's output
	// follows a marker line.
	prog := `autoload -U compinit && compinit -u -D
source ` + shellQuote(script) + `
[[ ${_comps[agentstore]} == _agentstore ]] || { print -u2 "compdef did not register _agentstore"; exit 1 }
_describe() {
  local c
  for c in "${completions[@]}"; do
    c=${c//\\:/$'\x01'}   # an escaped colon is part of the completion
    c=${c%%:*}              # the rest is the description
    print -r -- "${c//$'\x01'/:}"
  done
  return 0
}
compadd() { local a; for a in "$@"; do [[ $a == -* ]] || print -r -- "$a"; done; return 0 }
`
	const marker = "=== case "
	for i, tc := range completionCases {
		var quoted []string
		for _, w := range tc.words {
			quoted = append(quoted, shellQuote(w))
		}
		prog += fmt.Sprintf("print -r -- '%s%d'\nwords=(%s)\nCURRENT=${#words}\n_agentstore\n", marker, i, strings.Join(quoted, " "))
	}
	out := runShell(t, env, zsh, "-f", "-c", prog)
	parts := strings.Split(out, marker)
	if len(parts) != len(completionCases)+1 {
		t.Fatalf("zsh printed %d case markers, want %d:\n%s", len(parts)-1, len(completionCases), out)
	}
	for i, tc := range completionCases {
		_, body, _ := strings.Cut(parts[i+1], "\n")
		checkOffered(t, tc.words, body, tc.want)
	}
}
