package adkgcs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkgcs"
)

func readAll(r *artifacts.Reader, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// TestPutNumbering checks that a new name starts at the bucket's first
// version, each put takes max+1, the object is where ADK reads it (with
// its Content-Type and metadata), and deleting the highest version lets
// its number be handed out again (ReusesVersions).
func TestPutNumbering(t *testing.T) {
	for _, first := range []int64{0, 1} {
		t.Run(fmt.Sprint("first=", first), func(t *testing.T) {
			d, srv := newStore(t, first)
			st := artifacts.NewStore(d)
			c := st.Capabilities()
			if c.FirstVersion != first || !c.ReusesVersions || c.StoresDigest || c.HasKind(artifacts.KindApp) {
				t.Fatalf("capabilities %+v", c)
			}
			var recs []artifacts.Record
			for i := range 3 {
				rec, err := st.Put(t.Context(), sessionScope, "report.txt", strings.NewReader(fmt.Sprint("v", i)),
					artifacts.PutOptions{MIMEType: "text/plain", Metadata: artifacts.Metadata{"adkIsText": "true"}})
				if err != nil {
					t.Fatal(err)
				}
				if rec.Version != first+int64(i) || rec.Digest != "" || !strings.HasPrefix(rec.Token, "gen:") {
					t.Fatalf("put %d: %+v", i, rec)
				}
				recs = append(recs, rec)
			}
			o, err := srv.GetObject(testBucket, fmt.Sprintf("app/u-1/s-1/report.txt/%d", first+2))
			if err != nil {
				t.Fatalf("object not where ADK reads it: %v", err)
			}
			if o.ContentType != "text/plain" || o.Metadata["adkIsText"] != "true" || string(o.Content) != "v2" {
				t.Errorf("object %+v", o.ObjectAttrs)
			}
			// user: names keep their prefix in the object name (Go/Python form).
			if _, err := st.Put(t.Context(), userScope, "user:prefs.json", strings.NewReader("{}"), artifacts.PutOptions{MIMEType: "application/json"}); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.GetObject(testBucket, fmt.Sprintf("app/u-1/user/user:prefs.json/%d", first)); err != nil {
				t.Errorf("user-scope object: %v", err)
			}
			// Deleting the highest version frees its number.
			if _, err := st.Delete(t.Context(), sessionScope, "report.txt", artifacts.Selector{Kind: artifacts.SelectLatest}); err != nil {
				t.Fatal(err)
			}
			rec, err := st.Put(t.Context(), sessionScope, "report.txt", strings.NewReader("again"), artifacts.PutOptions{})
			if err != nil || rec.Version != recs[2].Version {
				t.Errorf("put after deleting v%d: %+v, %v; want the number again", recs[2].Version, rec, err)
			}
			got, err := readAll(st.Get(t.Context(), sessionScope, "report.txt", artifacts.Latest))
			if err != nil || string(got) != "again" {
				t.Errorf("Get(latest) = %q, %v", got, err)
			}
			got, err = readAll(st.GetRange(t.Context(), sessionScope, "report.txt", first, 1, 1))
			if err != nil || string(got) != "0" {
				t.Errorf("GetRange = %q, %v", got, err)
			}
		})
	}
}

// TestPutRefusals checks what the layout cannot hold: non-string
// metadata, metadata past Cloud Storage's 8 KiB, user-scope names without
// "user:", "user:" names in a session, sessions named "user", scope parts
// with "/", the app scope, too-large payloads; none writes an object.
func TestPutRefusals(t *testing.T) {
	d, srv := newStore(t, 0)
	st := artifacts.NewStore(artifacts.Driver(d))
	big := strings.Repeat("x", adkgcs.MaxMetadataBytes)
	tests := []struct {
		name  string
		scope artifacts.Scope
		art   string
		md    artifacts.Metadata
		code  artifacts.Code
	}{
		{"int metadata", sessionScope, "a", artifacts.Metadata{"turn": 3}, artifacts.CodeInvalidMetadata},
		{"nested metadata", sessionScope, "a", artifacts.Metadata{"m": map[string]any{"a": "b"}}, artifacts.CodeInvalidMetadata},
		{"metadata past 8 KiB", sessionScope, "a", artifacts.Metadata{"k": big}, artifacts.CodeInvalidMetadata},
		{"user scope without user:", userScope, "prefs.json", nil, artifacts.CodeInvalidName},
		{"user: in a session", sessionScope, "user:prefs.json", nil, artifacts.CodeInvalidName},
		{"session named user", artifacts.SessionScope("app", "u-1", "user"), "a", nil, artifacts.CodeInvalidScope},
		{"slash in a user id", artifacts.SessionScope("app", "u/1", "s"), "a", nil, artifacts.CodeInvalidScope},
		{"app scope", artifacts.AppScope("app"), "a", nil, artifacts.CodeUnsupported},
	}
	for _, tt := range tests {
		_, err := st.Put(t.Context(), tt.scope, tt.art, strings.NewReader("x"), artifacts.PutOptions{Metadata: tt.md})
		if artifacts.CodeOf(err) != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
	small := artifacts.NewStore(openStore(t, newClient(t, srv), "", adkgcs.Options{FirstVersionSet: true, MaxArtifactBytes: 10}))
	for _, n := range []int{11, 3 << 20} {
		if _, err := small.Put(t.Context(), sessionScope, "big", bytes.NewReader(make([]byte, n)), artifacts.PutOptions{}); artifacts.CodeOf(err) != artifacts.CodeTooLarge {
			t.Errorf("%d bytes past a 10-byte limit: %v", n, err)
		}
	}
	if names := objectNames(t, srv); len(names) != 0 {
		t.Errorf("refused puts left objects: %q", names)
	}
}

// TestConcurrentPuts races writers on one name: every put gets its own
// version and every payload is stored (create-only, retry on 412), small
// payloads and payloads larger than one upload chunk alike.
func TestConcurrentPuts(t *testing.T) {
	for _, size := range []int{16, 300 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			srv := newEmulator(t)
			d := openStore(t, newClient(t, srv), "", adkgcs.Options{FirstVersionSet: true, ChunkSize: 256 << 10})
			st := artifacts.NewStore(d)
			const writers, each = 6, 5
			var wg sync.WaitGroup
			errs := make(chan error, writers*each)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						b := bytes.Repeat([]byte{byte(w*each + i)}, size)
						if _, err := st.Put(t.Context(), sessionScope, "workspace.zip", bytes.NewReader(b), artifacts.PutOptions{MIMEType: "application/zip"}); err != nil {
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			vp, err := st.ListVersions(t.Context(), sessionScope, "workspace.zip", artifacts.ListOptions{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			seen := map[byte]bool{}
			for i, r := range vp.Items {
				if r.Version != int64(i) {
					t.Errorf("versions %d: not 0..%d", r.Version, writers*each-1)
				}
				b, err := readAll(st.Get(t.Context(), sessionScope, "workspace.zip", r.Version))
				if err != nil || len(b) != size {
					t.Fatalf("v%d: %d bytes, %v", r.Version, len(b), err)
				}
				seen[b[0]] = true
			}
			if len(vp.Items) != writers*each || len(seen) != writers*each {
				t.Errorf("%d versions, %d distinct payloads; want %d of each", len(vp.Items), len(seen), writers*each)
			}
		})
	}
}

// TestCorruptObject damages an object's bytes behind its stored CRC32C
// (as a disk fault would) and checks that a full read reports
// corrupt_artifact instead of io.EOF, and a range read still works.
func TestCorruptObject(t *testing.T) {
	dir := t.TempDir()
	srv := newFSEmulator(t, dir)
	d := openStore(t, newClient(t, srv), "", adkgcsOptions(0))
	st := artifacts.NewStore(d)
	payload := bytes.Repeat([]byte("0123456789"), 200_000) // larger than the prefetch size
	for _, p := range [][]byte{[]byte("small payload"), payload} {
		name := fmt.Sprint("f", len(p))
		if _, err := st.Put(t.Context(), sessionScope, name, bytes.NewReader(p), artifacts.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := readAll(st.Get(t.Context(), sessionScope, name, 0)); err != nil {
			t.Fatalf("%s: intact Get: %v", name, err)
		}
		// Flip one bit of the stored bytes; the CRC32C stored with the
		// object stays.
		flipByte(t, dir, d.ObjectName(sessionScope, name, 0))
		_, err := readAll(st.Get(t.Context(), sessionScope, name, 0))
		if artifacts.CodeOf(err) != artifacts.CodeCorrupt || !strings.Contains(err.Error(), "CRC32C") {
			t.Errorf("%s: Get of damaged bytes: %v, want corrupt_artifact naming the CRC32C", name, err)
		}
		if got, err := readAll(st.GetRange(t.Context(), sessionScope, name, 0, 0, 5)); err != nil || !bytes.Equal(got, p[:5]) {
			t.Errorf("%s: GetRange = %q, %v", name, got, err)
		}
	}
}

// TestDeleteExact checks the generation binding: a version overwritten
// after it was read (another writer reusing the number, say) is not
// deleted, and the intact one is.
func TestDeleteExact(t *testing.T) {
	d, srv := newStore(t, 1)
	st := artifacts.NewStore(d)
	var refs []artifacts.VersionRef
	for i := range 2 {
		rec, err := st.Put(t.Context(), sessionScope, "n", strings.NewReader(fmt.Sprint(i)), artifacts.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, rec.Ref())
	}
	// Another writer overwrites v2 (ADK JS writes without a precondition).
	putObject(srv, d.ObjectName(sessionScope, "n", 2), []byte("1"), "text/plain", nil)
	_, err := st.DeleteExact(t.Context(), sessionScope, "n", refs)
	if artifacts.CodeOf(err) != artifacts.CodeConflict {
		t.Fatalf("DeleteExact of an overwritten version: %v, want conflict", err)
	}
	if n := len(objectNames(t, srv)); n != 2 {
		t.Errorf("%d objects left, want both (nothing deleted)", n)
	}
	// The driver's own compare-and-delete refuses a stale generation too.
	if _, err := d.DeleteExact(t.Context(), sessionScope, "n", refs[1]); artifacts.CodeOf(err) != artifacts.CodeConflict {
		t.Errorf("driver DeleteExact with a stale generation: %v", err)
	}
	if _, err := d.DeleteExact(t.Context(), sessionScope, "n", artifacts.VersionRef{Version: 1, Token: "x"}); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Errorf("a token that names no generation: %v", err)
	}
	recs, err := st.DeleteExact(t.Context(), sessionScope, "n", refs[:1])
	if err != nil || len(recs) != 1 || recs[0].Version != 1 {
		t.Fatalf("DeleteExact(v1) = %+v, %v", recs, err)
	}
	if _, err := st.DeleteExact(t.Context(), sessionScope, "n", refs[:1]); !errors.Is(err, &artifacts.Error{Code: artifacts.CodeNotFound}) {
		t.Errorf("deleting v1 again: %v, want not_found", err)
	}
}
