package cmdutil

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
)

// TestStoreName checks the table line and the JSON fields of each kind of
// --store value, that the URI printed parses back to the same location,
// and the "no store" form.
func TestStoreName(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	sty := output.NewStyles(ios) // colour off: plain text
	for _, tc := range []struct {
		name     string
		n        StoreName
		wantLine string
		wantJSON string
	}{
		{"file", StoreName{URI: "file:///var/lib/agents/store", Layout: "erlang-fs"},
			"Store file:///var/lib/agents/store (erlang-fs)",
			`{"store":"file:///var/lib/agents/store","layout":"erlang-fs"}`},
		{"gcs prefix", StoreName{URI: "gs://bucket/adk-artifacts/v1", Layout: "erlang-gcs"},
			"Store gs://bucket/adk-artifacts/v1 (erlang-gcs)",
			`{"store":"gs://bucket/adk-artifacts/v1","layout":"erlang-gcs"}`},
		{"gcs bare bucket and first version", StoreName{URI: "gs://bucket?first_version=1", Layout: "google-adk-gcs"},
			"Store gs://bucket?first_version=1 (google-adk-gcs)",
			`{"store":"gs://bucket?first_version=1","layout":"google-adk-gcs"}`},
		{"path needing escapes", StoreName{URI: "gs://bucket/a\x1b[31mb", Layout: "erlang-gcs"},
			`Store gs://bucket/a\x1b[31mb (erlang-gcs)`,
			`{"store":"gs://bucket/a\u001b[31mb","layout":"erlang-gcs"}`},
		{"no store", StoreName{}, "No artifact store", `{"store":null,"layout":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.n.Line(sty); got != tc.wantLine {
				t.Errorf("Line = %q, want %q", got, tc.wantLine)
			}
			b, err := json.Marshal(tc.n.JSON())
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.wantJSON {
				t.Errorf("JSON = %s, want %s", b, tc.wantJSON)
			}
			if tc.n.None() != (tc.n.URI == "") {
				t.Errorf("None = %v", tc.n.None())
			}
		})
	}
}

// TestNameStore checks that NameStore names the location as --store takes
// it back (parsing the URI gives the same location) with the store's
// layout, and that a nil store is no store.
func TestNameStore(t *testing.T) {
	root := filepath.Join(t.TempDir(), "dir with space")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := fsstore.Open(root, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(d)
	for _, arg := range []string{root, "file://" + filepath.ToSlash(root), "gs://bucket-a/p/q", "gs://bucket-a", "gs://bucket-a?first_version=0"} {
		u, err := ParseStoreURI(arg)
		if err != nil {
			t.Fatal(err)
		}
		n := NameStore(u, st)
		if n.Layout != "erlang-fs" {
			t.Errorf("%s: layout %q", arg, n.Layout)
		}
		back, err := ParseStoreURI(n.URI)
		if err != nil || back != u {
			t.Errorf("%s: URI %q parses back to %+v (%v), want %+v", arg, n.URI, back, err, u)
		}
	}
	if n := NameStore(StoreURI{Scheme: SchemeFile, Root: root}, nil); !n.None() {
		t.Errorf("nil store named %+v", n)
	}
}

// TestStoreJSONEmbedded checks that an output struct embedding StoreJSON
// first prints store and layout as its leading top-level fields.
func TestStoreJSONEmbedded(t *testing.T) {
	out := struct {
		StoreJSON
		Items []int `json:"items"`
	}{StoreJSON: StoreName{URI: "gs://b", Layout: "erlang-gcs"}.JSON(), Items: []int{}}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"store":"gs://b","layout":"erlang-gcs","items":[]}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func ExampleStoreName() {
	u, _ := ParseStoreURI("gs://my-bucket/adk-artifacts/v1")
	n := StoreName{URI: u.String(), Layout: "erlang-gcs"}
	ios, _, _, _ := iostreams.Test()
	fmt.Println(n.Line(output.NewStyles(ios)))
	b, _ := json.Marshal(n.JSON())
	fmt.Println(string(b))
	fmt.Println(StoreName{}.Line(output.NewStyles(ios)))
	// Output:
	// Store gs://my-bucket/adk-artifacts/v1 (erlang-gcs)
	// {"store":"gs://my-bucket/adk-artifacts/v1","layout":"erlang-gcs"}
	// No artifact store
}
