package cmd

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Script commands for google-adk-file stores:
//
//	adkfixture DIR [interrupted]   copy the ADK JS file fixture's store/ (or
//	                               store-interrupted/) into DIR
func init() {
	scriptCmds["adkfixture"] = cmdADKFixture
	scriptSetups = append(scriptSetups, func(env *testscript.Env) error {
		env.Setenv("AGENTSTORE_STORE_APP", "")
		return nil
	})
}

func cmdADKFixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 || (len(args) == 2 && args[1] != "interrupted") {
		ts.Fatalf("usage: adkfixture DIR [interrupted]")
	}
	copyFn := testfixtures.CopyADKFileStore
	if len(args) == 2 {
		copyFn = testfixtures.CopyADKFileInterrupted
	}
	_, err := copyFn(ts.MkAbs(args[0]))
	ts.Check(err)
}

// TestADKFileListingMatchesFixture lists, through the whole command line,
// the stores ADK JS 2.0.0 wrote, and reproduces the library's own listing
// (expected.tsv, expected-interrupted.tsv) line for line: every scope's
// names (artifacts list), their versions (artifacts versions), each
// payload's SHA-256 (artifacts get -O -), and the version ADK counts but
// cannot load (fs verify's corrupt item).
func TestADKFileListingMatchesFixture(t *testing.T) {
	for _, tc := range []struct {
		copy     func(string) (string, error)
		expected string
	}{
		{testfixtures.CopyADKFileStore, "expected.tsv"},
		{testfixtures.CopyADKFileInterrupted, "expected-interrupted.tsv"},
	} {
		t.Run(tc.expected, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("AGENTSTORE_STORE_APP", "")
			store, err := tc.copy(filepath.Join(t.TempDir(), "store"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := testfixtures.ADKFileExpected(tc.expected)
			if err != nil {
				t.Fatal(err)
			}
			type line struct {
				user, session, name string
				version             int64
				rest                string
			}
			var lines []line
			var all struct {
				Items []struct {
					Scope artifacts.Scope `json:"scope"`
				} `json:"items"`
			}
			// The store-wide listing warns about the broken version, once.
			code, out, errOut := runInProcess(t, "artifacts", "list", "--store", store, "-o", "json")
			if err := jsonUnmarshal(out, &all); code != 0 || err != nil {
				t.Fatalf("list: exit %d, %v", code, err)
			}
			if broken := strings.Contains(tc.expected, "interrupted"); broken != strings.Contains(errOut, "1 published version is broken") {
				t.Errorf("list stderr %q", errOut)
			}
			for _, it := range all.Items {
				s := it.Scope
				var names listJSON
				jsonRun(t, &names, append([]string{"artifacts", "list", "--store", store, "--all"}, scopeFlags(s)...)...)
				for _, n := range names.Items {
					var vs struct {
						Store      string          `json:"store"`
						Layout     string          `json:"layout"`
						Scope      artifacts.Scope `json:"scope"`
						Name       string          `json:"name"`
						NextCursor *string         `json:"next_cursor"`
						Items      []struct {
							Version      int64    `json:"version"`
							Size         int64    `json:"size"`
							Digest       string   `json:"digest"`
							MIMEType     string   `json:"mime_type"`
							CreatedAt    string   `json:"created_at"`
							CreatedAtMS  int64    `json:"created_at_ms"`
							MetadataKeys []string `json:"metadata_keys"`
							State        string   `json:"state"`
						} `json:"items"`
					}
					jsonRun(t, &vs, append([]string{"artifacts", "versions", "--store", store, "--name", n.Name, "--all"}, scopeFlags(s)...)...)
					for _, v := range vs.Items {
						code, out, errOut := runInProcess(t, append([]string{"artifacts", "get", "--store", store, "--name", n.Name, "--version", fmt.Sprint(v.Version), "-O", "-"}, scopeFlags(s)...)...)
						if code != 0 {
							t.Fatalf("get %s %q v%d: exit %d: %s", s, n.Name, v.Version, code, errOut)
						}
						sum := sha256.Sum256([]byte(out))
						lines = append(lines, line{s.User, s.Session, n.Name, v.Version,
							fmt.Sprintf("%d\t%s\t%s\t%s", v.Size, hex.EncodeToString(sum[:]), v.MIMEType, strings.Join(v.MetadataKeys, ","))})
					}
				}
			}
			var verify struct {
				CorruptItems []struct {
					Scope   *artifacts.Scope `json:"scope"`
					Name    string           `json:"name"`
					Version int64            `json:"version"`
				} `json:"corrupt_items"`
			}
			code, out, _ = runInProcess(t, "fs", "verify", "--store", store, "-o", "json")
			if err := jsonUnmarshal(out, &verify); err != nil || (code != 0) != (len(verify.CorruptItems) > 0) {
				t.Fatalf("verify: exit %d, %v: %s", code, err, out)
			}
			for _, c := range verify.CorruptItems {
				lines = append(lines, line{c.Scope.User, c.Scope.Session, c.Name, c.Version, "\t\t\t"})
			}
			slices.SortFunc(lines, func(a, b line) int {
				return cmp.Or(strings.Compare(a.user, b.user), strings.Compare(a.session, b.session), strings.Compare(a.name, b.name), cmp.Compare(a.version, b.version))
			})
			var b strings.Builder
			for _, l := range lines {
				fmt.Fprintf(&b, "adk-js-file\t\t%s\t%s\t%s\t%d\t%s\n", l.user, l.session, l.name, l.version, l.rest)
			}
			if got := b.String(); got != want {
				t.Errorf("the command line's listing differs from %s:\ngot:\n%s", tc.expected, got)
			}
		})
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
