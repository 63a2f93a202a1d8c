package gcsstore_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

// listAll returns the names of every object in the test bucket.
func listAll(t *testing.T, srv *fakestorage.Server) []string {
	t.Helper()
	var names []string
	opts := fakestorage.ListOptions{}
	for {
		resp, err := srv.ListObjectsWithOptionsPaginated(testBucket, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range resp.Objects {
			names = append(names, o.Name)
		}
		if resp.NextPageToken == "" {
			break
		}
		opts.PageToken = resp.NextPageToken
	}
	slices.Sort(names)
	return names
}

func TestParseVersionObject(t *testing.T) {
	for _, tc := range []struct {
		base   string
		suffix gcsstore.Suffix
		n      int64
		ok     bool
	}{
		{"v-00000000000000000001.reserve", gcsstore.SuffixReserve, 1, true},
		{"v-00000000000000000042.data", gcsstore.SuffixData, 42, true},
		{"v-09223372036854775807.meta", gcsstore.SuffixMeta, 1<<63 - 1, true},
		{"v-00000000000000000000.meta", "", 0, false},
		{"v-1.meta", "", 0, false},
		{"v-0000000000000000001.meta", "", 0, false},
		{"v-99999999999999999999.meta", "", 0, false},
		{"v-0000000000000000000a.meta", "", 0, false},
		{"v-00000000000000000001.meta.tmp", "", 0, false},
		{"v-00000000000000000001.other", "", 0, false},
	} {
		suffix, n, ok := gcsstore.ParseVersionObject(tc.base)
		if suffix != tc.suffix || n != tc.n || ok != tc.ok {
			t.Errorf("ParseVersionObject(%q) = %q, %d, %v", tc.base, suffix, n, ok)
		}
		if tc.ok && gcsstore.VersionObject(tc.n, tc.suffix) != tc.base {
			t.Errorf("VersionObject(%d, %q) = %q", tc.n, tc.suffix, gcsstore.VersionObject(tc.n, tc.suffix))
		}
	}
}

// TestLayout checks the exact objects a put creates: the empty .reserve,
// the .data and the .meta holding EncodeRecord's bytes, each carrying the
// put's token, for a small payload (one request) and a large one
// (resumable, several chunks).
func TestLayout(t *testing.T) {
	s, srv := newStore(t, gcsstore.Options{ChunkSize: 256 << 10})
	ctx := context.Background()
	sc := artifacts.SessionScope("demo-a", "user-42", "session-7")
	const name = "reports/summary.txt"
	small := []byte("hello")
	large := bytes.Repeat([]byte("large payload "), 100_000) // 1.4 MB: six chunks
	var recs []artifacts.Record
	for _, b := range [][]byte{small, large} {
		rec, err := s.Put(ctx, sc, name, bytes.NewReader(b), artifacts.PutOptions{MIMEType: "text/plain", Metadata: artifacts.Metadata{"k": "v"}})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	prefix := "adk-artifacts/v1/s/8f364540aa791e7636c26878b48aec9ef8a6c7144847b213324427eb4420f5b7/n/7e5c177646b9aefed838831273ffa92433dff3100eee3ec2d95c9f1176701441/"
	var want []string
	for _, v := range []string{"1", "2"} {
		for _, suf := range []string{"data", "meta", "reserve"} {
			want = append(want, prefix+"v-0000000000000000000"+v+"."+suf)
		}
	}
	if got := listAll(t, srv); !slices.Equal(got, want) {
		t.Fatalf("objects:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i, rec := range recs {
		v := fmt.Sprint(i + 1)
		tokens := map[string]bool{}
		for _, suf := range []string{"reserve", "data", "meta"} {
			o, err := srv.GetObject(testBucket, prefix+"v-0000000000000000000"+v+"."+suf)
			if err != nil {
				t.Fatal(err)
			}
			tokens[o.Metadata[gcsstore.TokenMetadataKey]] = true
			switch suf {
			case "reserve":
				if len(o.Content) != 0 {
					t.Errorf("v%s.reserve holds %d bytes", v, len(o.Content))
				}
			case "data":
				if !bytes.Equal(o.Content, [][]byte{small, large}[i]) {
					t.Errorf("v%s.data differs from the payload", v)
				}
			case "meta":
				b, err := artifacts.EncodeRecord(rec)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(o.Content, b) {
					t.Errorf("v%s.meta is not EncodeRecord's bytes", v)
				}
			}
		}
		if len(tokens) != 1 || tokens[""] {
			t.Errorf("v%s objects carry tokens %v, want one shared token", v, tokens)
		}
	}
	b, err := readAll(s.Get(ctx, sc, name, 2))
	if err != nil || !bytes.Equal(b, large) {
		t.Fatalf("Get v2: %d bytes, %v", len(b), err)
	}
	b, err = readAll(s.GetRange(ctx, sc, name, 2, 1000, 300_000))
	if err != nil || !bytes.Equal(b, large[1000:301_000]) {
		t.Fatalf("GetRange v2: %d bytes, %v", len(b), err)
	}
}

// TestRecordLimit checks the layout's 16,384-byte record limit: a put whose
// record would not fit fails before it writes anything.
func TestRecordLimit(t *testing.T) {
	d, srv := newStore(t, gcsstore.Options{})
	s := artifacts.NewStore(d)
	md := artifacts.Metadata{"k": strings.Repeat("x", artifacts.MaxMetadataBytes-17)}
	if err := artifacts.ValidateMetadata(md); err != nil {
		t.Fatal(err)
	}
	_, err := s.Put(context.Background(), artifacts.AppScope("a"), "n", strings.NewReader("x"), artifacts.PutOptions{Metadata: md})
	if artifacts.CodeOf(err) != artifacts.CodeInvalidMetadata {
		t.Fatalf("Put with a record over 16,384 bytes = %v, want %s", err, artifacts.CodeInvalidMetadata)
	}
	if got := listAll(t, srv); len(got) != 0 {
		t.Errorf("the refused put left objects %q", got)
	}
	md = artifacts.Metadata{"k": strings.Repeat("x", gcsstore.MaxRecordBytes-1000)}
	if _, err := s.Put(context.Background(), artifacts.AppScope("a"), "n", strings.NewReader("x"), artifacts.PutOptions{Metadata: md}); err != nil {
		t.Fatalf("Put with a record under 16,384 bytes: %v", err)
	}
}

// TestCapacity checks the lifetime ceilings with MaxScanEntries 6: three
// scopes, three names per scope, two reservations per name.
func TestCapacity(t *testing.T) {
	s, _ := newStore(t, gcsstore.Options{MaxScanEntries: 6})
	ctx := context.Background()
	put := func(sc artifacts.Scope, name string) error {
		_, err := s.Put(ctx, sc, name, strings.NewReader("x"), artifacts.PutOptions{})
		return err
	}
	want := func(err error, code artifacts.Code, what string) {
		t.Helper()
		if artifacts.CodeOf(err) != code {
			t.Errorf("%s: %v, want %q", what, err, code)
		}
	}
	a := artifacts.AppScope("a")
	want(put(a, "x"), "", "first version")
	want(put(a, "x"), "", "second version")
	want(put(a, "x"), artifacts.CodeVersionCapacity, "third version")
	// A deleted version keeps its reservation.
	if _, err := s.Delete(ctx, a, "x", artifacts.Selector{Kind: artifacts.SelectAll}); err != nil {
		t.Fatal(err)
	}
	want(put(a, "x"), artifacts.CodeVersionCapacity, "a version after deleting all")
	want(put(a, "y"), "", "second name")
	want(put(a, "z"), "", "third name")
	want(put(a, "w"), artifacts.CodeNameCapacity, "fourth name")
	want(put(a, "y"), "", "an existing name in a full scope")
	want(put(artifacts.AppScope("b"), "x"), "", "second scope")
	want(put(artifacts.AppScope("c"), "x"), "", "third scope")
	want(put(artifacts.AppScope("d"), "x"), artifacts.CodeScopeCapacity, "fourth scope")
	want(put(artifacts.AppScope("c"), "y"), "", "a new name in an existing scope of a full store")
	err := s.Walk(ctx, func(u artifacts.ScopeUsage) error {
		if u.Scope == a {
			if u.NameSlots != 3 {
				t.Errorf("Walk: scope a has %d name slots, want 3", u.NameSlots)
			}
			for _, n := range u.Names {
				if n.Name == "" && n.Reservations != 2 {
					t.Errorf("Walk: the deleted name has %d reservations, want 2", n.Reservations)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
