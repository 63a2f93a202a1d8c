package artifacts_test

import (
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// TestErrorVersion: an error names the version it concerns, version 0
// included (a real version where a layout numbers from 0), and names none
// when given NoVersion, Latest or no version at all.
func TestErrorVersion(t *testing.T) {
	scope := artifacts.Scope{Kind: artifacts.KindSession, App: "a", User: "u", Session: "s"}
	base := func() *artifacts.Error {
		return artifacts.Errorf(artifacts.CodeNotFound, "get", nil, "no such version")
	}
	tests := []struct {
		name string
		err  *artifacts.Error
		want string
		ver  int64
	}{
		{"no version given", base(), "artifacts: get: no such version", artifacts.NoVersion},
		{"version 0", base().With(scope, "x", 0), `artifacts: get session("a","u","s") name "x" v0: no such version`, 0},
		{"version 7", base().With(scope, "x", 7), `artifacts: get session("a","u","s") name "x" v7: no such version`, 7},
		{"NoVersion", base().With(scope, "x", artifacts.NoVersion), `artifacts: get session("a","u","s") name "x": no such version`, artifacts.NoVersion},
		{"Latest", base().With(scope, "x", artifacts.Latest), `artifacts: get session("a","u","s") name "x": no such version`, artifacts.NoVersion},
		{"a later With without a version keeps it", base().With(scope, "x", 0).With(scope, "", artifacts.NoVersion), `artifacts: get session("a","u","s") name "x" v0: no such version`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if tt.err.Version != tt.ver {
				t.Errorf("Version = %d, want %d", tt.err.Version, tt.ver)
			}
		})
	}
}

// TestSelectorErrorVersion: only a version selector names a version in
// errors; the zero Version of the other kinds is not version 0.
func TestSelectorErrorVersion(t *testing.T) {
	tests := []struct {
		sel  artifacts.Selector
		want int64
	}{
		{artifacts.Selector{Kind: artifacts.SelectVersion, Version: 0}, 0},
		{artifacts.Selector{Kind: artifacts.SelectVersion, Version: 3}, 3},
		{artifacts.Selector{Kind: artifacts.SelectLatest}, artifacts.NoVersion},
		{artifacts.Selector{Kind: artifacts.SelectAll}, artifacts.NoVersion},
	}
	for _, tt := range tests {
		if got := tt.sel.ErrorVersion(); got != tt.want {
			t.Errorf("%+v.ErrorVersion() = %d, want %d", tt.sel, got, tt.want)
		}
	}
}
