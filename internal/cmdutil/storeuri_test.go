package cmdutil

import (
	"strings"
	"testing"
)

func TestParseStoreURI(t *testing.T) {
	u, err := ParseStoreURI("gs://my-bucket")
	// A bare bucket stays bare: the layout decides where its store lives
	// (the Erlang layout under adk-artifacts/v1, Google ADK's at the root).
	if err != nil || u.Scheme != SchemeGCS || u.String() != "gs://my-bucket" {
		t.Fatalf("ParseStoreURI(gs://my-bucket) = %+v, %v", u, err)
	}
	for _, in := range []string{"", "s3://bucket/x", "gs://ab"} {
		_, err := ParseStoreURI(in)
		if ExitCode(err) != ExitUsage {
			t.Errorf("ParseStoreURI(%q) error %v exits %d, want 2", in, err, ExitCode(err))
		}
		if err != nil && (strings.HasPrefix(err.Error(), "artifacts:") || !strings.HasPrefix(err.Error(), "invalid store")) {
			t.Errorf("ParseStoreURI(%q) error %q: want the plain message", in, err)
		}
	}
}
