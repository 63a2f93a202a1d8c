package mcpfs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
)

// checkpointTools are the runtime-only tools over the session's
// incremental snapshots: listed only when named in Options.Tools, as
// end_turn is.
func checkpointTools() []*toolDef {
	list := def("list_checkpoints", "List Checkpoints",
		"For the agent runtime, not the model: the session's checkpoints (incremental snapshots), oldest first, as JSON: checkpoint number, manifest, created, turn, files, bytes, and the paths added, changed and removed since the previous one. NOT_FOUND when the session has none.",
		readOnly("List Checkpoints"), object(schema{}), listCheckpoints)
	restore := def("restore_checkpoint", "Restore Checkpoint",
		"For the agent runtime, not the model: replace /workspace with the tree of a checkpoint (its number in list_checkpoints), all or nothing. Refused with WOULD_OVERWRITE when the workspace holds work no snapshot has, unless force is true; NOT_FOUND for an unknown checkpoint.",
		writes("Restore Checkpoint", true, false), object(schema{
			"checkpoint": num("The checkpoint's number (list_checkpoints)"),
			"force":      schema{"type": "boolean", "description": "Overwrite work no snapshot holds"},
		}, "checkpoint"), restoreCheckpoint)
	list.hidden, restore.hidden = true, true
	return []*toolDef{list, restore}
}

// checkpointRow is one checkpoint of list_checkpoints.
type checkpointRow struct {
	Checkpoint int64     `json:"checkpoint"`
	Manifest   string    `json:"manifest"`
	Created    time.Time `json:"created"`
	Turn       string    `json:"turn,omitempty"`
	Files      int       `json:"files"`
	Bytes      int64     `json:"bytes"`
	Added      int       `json:"added"`
	Changed    int       `json:"changed"`
	Removed    int       `json:"removed"`
}

// sessionHistory returns the open workspace and its checkpoints, oldest
// first; CodeNotFound when there are none.
func (c *call) sessionHistory(ctx context.Context) (*workspace.Workspace, []checkpoint.HistoryRow, error) {
	ws, err := (&wsFS{c: c}).ws(ctx)
	if err != nil {
		return nil, nil, err
	}
	cp, err := c.s.opts.Manager.Checkpoints(ws.Scope())
	if err != nil {
		return nil, nil, err
	}
	rows, err := cp.History(ctx)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, artifacts.Errorf(artifacts.CodeNotFound, "mcp", nil, "the session has no checkpoint (incremental snapshot) yet")
	}
	return ws, rows, nil
}

func listCheckpoints(ctx context.Context, c *call, _ json.RawMessage) (*mcp.CallToolResult, error) {
	_, rows, err := c.sessionHistory(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]checkpointRow, len(rows))
	for i, r := range rows {
		out[i] = checkpointRow{Checkpoint: r.Seq, Manifest: r.Ref.String(), Created: r.Created.UTC(), Turn: r.Turn,
			Files: r.Files, Bytes: r.Bytes, Added: r.Added, Changed: r.Changed, Removed: r.Removed}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return textResult(string(b)), nil
}

func restoreCheckpoint(ctx context.Context, c *call, raw json.RawMessage) (*mcp.CallToolResult, error) {
	a, err := decode[struct {
		Checkpoint *float64 `json:"checkpoint"`
		Force      bool     `json:"force"`
	}](raw)
	if err != nil {
		return nil, err
	}
	if a.Checkpoint == nil || *a.Checkpoint < 1 || *a.Checkpoint != float64(int64(*a.Checkpoint)) {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, "mcp", nil, "checkpoint: want a checkpoint number >= 1 (see list_checkpoints)")
	}
	seq := int64(*a.Checkpoint)
	ws, rows, err := c.sessionHistory(ctx)
	if err != nil {
		return nil, err
	}
	var ref checkpoint.Ref
	for _, r := range rows {
		if r.Seq == seq {
			ref = r.Ref
		}
	}
	if ref.Name == "" {
		return nil, artifacts.Errorf(artifacts.CodeNotFound, "mcp", nil, "no checkpoint %d: the session has %d to %d", seq, rows[0].Seq, rows[len(rows)-1].Seq)
	}
	res, err := ws.Hydrate(ctx, artifacts.Latest, workspace.HydrateOptions{Checkpoint: ref, Force: a.Force})
	if err != nil {
		return nil, err
	}
	return textResult(fmt.Sprintf("restored checkpoint %d (%s): %d files, %d bytes", seq, ref, res.Files, res.Bytes)), nil
}
