//go:build integration

package cmd

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScriptsIntegration runs every script of testdata/script that
// TestScripts does not (the smoke scripts run in the default tier): with
// both, go test -tags integration ./cmd runs each script once.
func TestScriptsIntegration(t *testing.T) {
	all, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		if !slices.Contains(smokeScripts, strings.TrimSuffix(filepath.Base(f), ".txtar")) {
			files = append(files, f)
		}
	}
	runScripts(t, files)
}
