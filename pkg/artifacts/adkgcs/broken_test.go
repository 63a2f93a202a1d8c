package adkgcs_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/deletion"
	"github.com/agentstore/agentstore/pkg/repair"
)

// TestVerifyNextDeletesCRCFailure damages an object's bytes behind the
// CRC32C Cloud Storage stored with it: fs verify reports that version
// corrupt with the command that deletes it, and doing what that command
// does (plan by --version, confirm) deletes exactly that version, bound to
// its generation. A zero-byte object (what ADK stores for an empty part)
// is not broken. The layout keeps no record apart from the object, so a
// listing has nothing it could find broken without reading every byte:
// google-adk-gcs lists no broken versions (it is no BrokenLister), and a
// version whose bytes fail is planned like any other.
func TestVerifyNextDeletesCRCFailure(t *testing.T) {
	dir := t.TempDir()
	srv := newFSEmulator(t, dir)
	d := openStore(t, newClient(t, srv), "", adkgcsOptions(0))
	st := artifacts.NewStore(d)
	ctx := t.Context()
	for _, p := range []string{"first version", "second version"} {
		if _, err := st.Put(ctx, sessionScope, "f", strings.NewReader(p), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Put(ctx, sessionScope, "empty", bytes.NewReader(nil), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	flipByte(t, dir, d.ObjectName(sessionScope, "f", 0))
	if st.CanListBroken() {
		t.Error("google-adk-gcs claims to list broken versions")
	}
	const storeArg = "gs://" + testBucket
	rep, err := repair.Verify(ctx, st, repair.VerifyOptions{StoreArg: storeArg})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Corrupt != 1 || len(rep.CorruptItems) != 1 {
		t.Fatalf("verify found %d corrupt: %+v", rep.Corrupt, rep.CorruptItems)
	}
	it := rep.CorruptItems[0]
	if it.Name != "f" || it.Version != 0 || !strings.Contains(it.Reason, "CRC32C") || it.NextCommand != artifacts.DeleteCommand(storeArg, sessionScope, "f", 0) {
		t.Fatalf("corrupt item %+v", it)
	}
	// What the next command does: plan --version 0, then confirm it.
	p, err := deletion.ComputePlan(ctx, st, storeArg, sessionScope, "f", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Versions) != 1 || p.Versions[0].Version != 0 || !strings.HasPrefix(p.Versions[0].Token, "gen:") || p.ReusedNumber != nil {
		t.Fatalf("plan %+v", p)
	}
	if _, err := deletion.Execute(ctx, st, p, deletion.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err = repair.Verify(ctx, st, repair.VerifyOptions{StoreArg: storeArg})
	if err != nil || rep.Corrupt != 0 || rep.Versions != 2 {
		t.Fatalf("verify after the delete: %+v, %v", rep, err)
	}
	names := objectNames(t, srv)
	if !slices.Contains(names, d.ObjectName(sessionScope, "empty", 0)) || !slices.Contains(names, d.ObjectName(sessionScope, "f", 1)) || slices.Contains(names, d.ObjectName(sessionScope, "f", 0)) {
		t.Errorf("objects left: %v", names)
	}
}
