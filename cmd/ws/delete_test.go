package wscmd

import (
	"strings"
	"testing"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/sweep"
)

// TestNextDeleteCommandNumberReuse checks that the printed confirmation of
// a --with-artifacts plan carries --allow-number-reuse exactly when the
// plan deletes a number the layout hands out again: without it the line
// would exit 4 when run as printed.
func TestNextDeleteCommandNumberReuse(t *testing.T) {
	u, err := cmdutil.ParseStoreURI("/srv/store")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &cmdutil.Config{Scratch: "/srv/scratch"}
	scope := artifacts.SessionScope("app", "user", "s1")
	reused := int64(0)
	for _, tc := range []struct {
		name      string
		opts      DeleteOptions
		artifacts []sweep.SessionArtifact
		want      bool
	}{
		{"no reuse", DeleteOptions{WithArtifacts: true}, []sweep.SessionArtifact{{Name: "a"}}, false},
		{"reuse in the plan", DeleteOptions{WithArtifacts: true}, []sweep.SessionArtifact{{Name: "a"}, {Name: "b", ReusedNumber: &reused}}, true},
		{"asked for when planning", DeleteOptions{WithArtifacts: true, AllowNumberReuse: true}, nil, true},
		{"discard", DeleteOptions{Discard: true}, []sweep.SessionArtifact{{Name: "b", ReusedNumber: &reused}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := &sweep.SessionPlan{PlanID: "p1"}
			plan.Artifacts = tc.artifacts
			got := nextDeleteCommand(cfg, u, &tc.opts, scope, plan)
			if has := strings.Contains(got, " --allow-number-reuse"); has != tc.want {
				t.Errorf("nextDeleteCommand = %q; --allow-number-reuse present %v, want %v", got, has, tc.want)
			}
			if !strings.HasSuffix(got, "--confirm p1") {
				t.Errorf("nextDeleteCommand = %q; want it to end with --confirm p1", got)
			}
		})
	}
}
