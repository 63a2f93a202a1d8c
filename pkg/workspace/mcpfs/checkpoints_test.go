package mcpfs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/workspace"
)

// TestCheckpointTools: list_checkpoints and restore_checkpoint over
// incremental end-of-turn snapshots, with their failure paths: no
// checkpoint yet, a bad or unknown number, unsaved work without force.
func TestCheckpointTools(t *testing.T) {
	e := newEnv(t, func(o *envOpts) {
		o.ws.Policy = workspace.SnapshotAtEndOfTurn
		o.ws.SnapshotFormat = workspace.FormatIncremental
		o.server.Tools = []string{"write_file", "read_text_file", "end_turn", "list_checkpoints", "restore_checkpoint"}
	})
	if msg := e.mustFail("list_checkpoints", nil, "NOT_FOUND"); !strings.Contains(msg, "no checkpoint") {
		t.Errorf("list_checkpoints without any: %q", msg)
	}
	e.mustFail("restore_checkpoint", map[string]any{"checkpoint": 1}, "NOT_FOUND")

	e.mustOK("write_file", map[string]any{"path": "a.txt", "content": "one"})
	e.mustOK("end_turn", nil)
	e.mustOK("write_file", map[string]any{"path": "a.txt", "content": "two!"})
	e.mustOK("write_file", map[string]any{"path": "b.txt", "content": "new"})
	e.mustOK("end_turn", nil)

	var rows []checkpointRow
	if err := json.Unmarshal([]byte(e.mustOK("list_checkpoints", nil)), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Checkpoint != 1 || rows[1].Checkpoint != 2 {
		t.Fatalf("rows %+v, want checkpoints 1 and 2", rows)
	}
	if r := rows[1]; r.Files != 2 || r.Added != 1 || r.Changed != 1 || r.Removed != 0 {
		t.Errorf("checkpoint 2 %+v, want 2 files, 1 added, 1 changed", r)
	}

	// Unsaved work: refused, nothing changed.
	e.mustOK("write_file", map[string]any{"path": "c.txt", "content": "unsaved"})
	tests := []struct {
		name string
		args map[string]any
		code string
	}{
		{"unsaved work", map[string]any{"checkpoint": 1}, "WOULD_OVERWRITE"},
		{"unknown", map[string]any{"checkpoint": 9, "force": true}, "NOT_FOUND"},
		{"zero", map[string]any{"checkpoint": 0}, "INVALID_ARGUMENT"},
		{"fraction", map[string]any{"checkpoint": 1.5}, "INVALID_ARGUMENT"},
		{"missing", map[string]any{}, "INVALID_ARGUMENT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.mustFail("restore_checkpoint", tt.args, tt.code)
			if got := e.mustOK("read_text_file", map[string]any{"path": "c.txt"}); got != "unsaved" {
				t.Errorf("c.txt %q after a refused restore", got)
			}
		})
	}

	if got := e.mustOK("restore_checkpoint", map[string]any{"checkpoint": 1, "force": true}); !strings.Contains(got, "restored checkpoint 1") {
		t.Errorf("restore %q", got)
	}
	if got := e.mustOK("read_text_file", map[string]any{"path": "a.txt"}); got != "one" {
		t.Errorf("a.txt %q after restoring checkpoint 1, want one", got)
	}
	e.mustFail("read_text_file", map[string]any{"path": "b.txt"}, "NOT_FOUND")
	e.mustFail("read_text_file", map[string]any{"path": "c.txt"}, "NOT_FOUND")
}
