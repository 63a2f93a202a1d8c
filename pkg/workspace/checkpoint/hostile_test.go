package checkpoint_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

const (
	idA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	idB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// valid returns a well-formed manifest: a directory holding two files.
func valid() *checkpoint.Manifest {
	return &checkpoint.Manifest{
		Format:  checkpoint.Format,
		Seq:     2,
		Parent:  &checkpoint.Ref{Name: checkpoint.ManifestName, Version: 1},
		Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Entries: []checkpoint.Entry{
			{Path: "d", Type: checkpoint.TypeDir, Mode: 0o755},
			{Path: "d/a", Type: checkpoint.TypeFile, Mode: 0o644, Size: 10, MTime: 1, Blobs: []int{0}},
			{Path: "d/b", Type: checkpoint.TypeFile, Mode: 0o755, Size: 15, MTime: 1, Blobs: []int{0, 1}},
		},
		Blobs: []checkpoint.Blob{
			{ID: idA, Pack: 0, Offset: 0, Length: 10, Size: 10, Compression: checkpoint.CompressionNone},
			{ID: idB, Pack: 0, Offset: 10, Length: 4, Size: 5, Compression: checkpoint.CompressionZstd},
		},
		Packs:  []checkpoint.Pack{{Ref: checkpoint.Ref{Name: checkpoint.PackName, Version: 1}, Size: 14, SHA256: idA}},
		Totals: checkpoint.Totals{Files: 2, Dirs: 1, Bytes: 25, Blobs: 2, Packs: 1},
	}
}

func encode(t testing.TB, m *checkpoint.Manifest) []byte {
	t.Helper()
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecodeHostile: every manifest a hostile or broken writer could
// publish is refused with CodeCorrupt, as hostile zips are.
func TestDecodeHostile(t *testing.T) {
	if _, err := checkpoint.Decode(encode(t, valid()), zipsafe.Limits{}); err != nil {
		t.Fatalf("the valid manifest: %v", err)
	}
	cases := []struct {
		name  string
		edit  func(m *checkpoint.Manifest)
		limit zipsafe.Limits
	}{
		{"unknown format", func(m *checkpoint.Manifest) { m.Format = 2 }, zipsafe.Limits{}},
		{"dot-dot path", func(m *checkpoint.Manifest) { m.Entries[1].Path = "d/../../etc" }, zipsafe.Limits{}},
		{"absolute path", func(m *checkpoint.Manifest) { m.Entries[0].Path = "/d" }, zipsafe.Limits{}},
		{"trailing slash", func(m *checkpoint.Manifest) { m.Entries[0].Path = "d/" }, zipsafe.Limits{}},
		{"backslash", func(m *checkpoint.Manifest) { m.Entries[1].Path = `d/a\b` }, zipsafe.Limits{}},
		{"duplicate path", func(m *checkpoint.Manifest) { m.Entries[2].Path = "d/a" }, zipsafe.Limits{}},
		{"file as a directory", func(m *checkpoint.Manifest) { m.Entries[2].Path = "d/a/x" }, zipsafe.Limits{}},
		{"missing parent", func(m *checkpoint.Manifest) { m.Entries[1].Path = "e/a" }, zipsafe.Limits{}},
		{"too long", func(m *checkpoint.Manifest) { m.Entries[1].Path = "d/" + strings.Repeat("x", 300) }, zipsafe.Limits{}},
		{"too deep", func(m *checkpoint.Manifest) {}, zipsafe.Limits{MaxDepth: 1}},
		{"too many entries", func(m *checkpoint.Manifest) {}, zipsafe.Limits{MaxEntries: 2}},
		{"too many bytes", func(m *checkpoint.Manifest) {}, zipsafe.Limits{MaxBytes: 20}},
		{"unknown type", func(m *checkpoint.Manifest) { m.Entries[1].Type = "symlink" }, zipsafe.Limits{}},
		{"mode bits", func(m *checkpoint.Manifest) { m.Entries[1].Mode = 0o4755 }, zipsafe.Limits{}},
		{"blob index", func(m *checkpoint.Manifest) { m.Entries[1].Blobs = []int{2} }, zipsafe.Limits{}},
		{"negative blob index", func(m *checkpoint.Manifest) { m.Entries[1].Blobs = []int{-1} }, zipsafe.Limits{}},
		{"size not the blobs'", func(m *checkpoint.Manifest) { m.Entries[1].Size = 11; m.Totals.Bytes++ }, zipsafe.Limits{}},
		{"directory with content", func(m *checkpoint.Manifest) { m.Entries[0].Blobs = []int{0} }, zipsafe.Limits{}},
		{"blob past its pack", func(m *checkpoint.Manifest) { m.Blobs[1].Offset = 11 }, zipsafe.Limits{}},
		{"negative offset", func(m *checkpoint.Manifest) { m.Blobs[0].Offset = -1 }, zipsafe.Limits{}},
		{"pack index", func(m *checkpoint.Manifest) { m.Blobs[1].Pack = 1 }, zipsafe.Limits{}},
		{"blob id", func(m *checkpoint.Manifest) { m.Blobs[0].ID = "A" + idA[1:] }, zipsafe.Limits{}},
		{"plain blob of another size", func(m *checkpoint.Manifest) { m.Blobs[0].Length = 9 }, zipsafe.Limits{}},
		{"compressed blob larger", func(m *checkpoint.Manifest) { m.Blobs[1].Length = 6; m.Packs[0].Size = 16 }, zipsafe.Limits{}},
		{"unknown compression", func(m *checkpoint.Manifest) { m.Blobs[1].Compression = "lz4" }, zipsafe.Limits{}},
		{"huge blob", func(m *checkpoint.Manifest) { m.Blobs[0].Size = checkpoint.MaxBlobBytes + 1 }, zipsafe.Limits{}},
		{"pack name", func(m *checkpoint.Manifest) { m.Packs[0].Name = "secrets.txt" }, zipsafe.Limits{}},
		{"pack twice", func(m *checkpoint.Manifest) { m.Packs = append(m.Packs, m.Packs[0]) }, zipsafe.Limits{}},
		{"pack digest", func(m *checkpoint.Manifest) { m.Packs[0].SHA256 = "x" }, zipsafe.Limits{}},
		{"parent name", func(m *checkpoint.Manifest) { m.Parent.Name = checkpoint.PackName }, zipsafe.Limits{}},
		{"seq without parent", func(m *checkpoint.Manifest) { m.Parent = nil }, zipsafe.Limits{}},
		{"totals", func(m *checkpoint.Manifest) { m.Totals.Files = 3 }, zipsafe.Limits{}},
		{"omission path", func(m *checkpoint.Manifest) { m.Omitted = []checkpoint.Omission{{Path: "../x", Kind: "symlink"}} }, zipsafe.Limits{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := valid()
			tc.edit(m)
			_, err := checkpoint.Decode(encode(t, m), tc.limit)
			wantCode(t, err, artifacts.CodeCorrupt)
		})
	}
	raw := []struct {
		name string
		json string
	}{
		{"not JSON", "{"},
		{"unknown field", `{"format":1,"seq":1,"entries":[],"blobs":[],"packs":[],"totals":{},"extra":1}`},
		{"trailing data", `{"format":1,"seq":1,"entries":[],"blobs":[],"packs":[],"totals":{}} {}`},
	}
	enc, _ := zstd.NewWriter(nil)
	for _, tc := range raw {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkpoint.Decode(enc.EncodeAll([]byte(tc.json), nil), zipsafe.Limits{})
			wantCode(t, err, artifacts.CodeCorrupt)
		})
	}
	t.Run("not zstd", func(t *testing.T) {
		js, _ := json.Marshal(valid())
		_, err := checkpoint.Decode(js, zipsafe.Limits{})
		wantCode(t, err, artifacts.CodeCorrupt)
	})
}

// FuzzDecode: no input makes Decode panic, and what it accepts passes
// Check and encodes again to a manifest it accepts.
func FuzzDecode(f *testing.F) {
	f.Add(encode(f, valid()))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := checkpoint.Decode(b, zipsafe.Limits{MaxEntries: 1000, MaxBytes: 1 << 30})
		if err != nil {
			if artifacts.CodeOf(err) != artifacts.CodeCorrupt {
				t.Fatalf("error of code %q: %v", artifacts.CodeOf(err), err)
			}
			return
		}
		if _, err := checkpoint.Decode(encode(t, m), zipsafe.Limits{MaxEntries: 1000, MaxBytes: 1 << 30}); err != nil {
			t.Fatalf("accepted, then refused once encoded again: %v", err)
		}
	})
}
