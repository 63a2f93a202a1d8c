package etf

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzDecode from the records and samples")

// fuzzLimits keep the fuzzer's memory bounded; decoding with tight limits as
// well exercises the limit checks.
var (
	fuzzLimits  = Limits{MaxBytes: 1 << 20}
	tightLimits = Limits{MaxDepth: 8, MaxEntries: 128, MaxBytes: 16384}
)

func FuzzDecode(f *testing.F) {
	for _, raw := range readRecords(f) {
		f.Add(raw)
	}
	for _, h := range samples {
		f.Add(mustHex(f, h))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := Decode(b, tightLimits); err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
		}
		v, err := Decode(b, fuzzLimits)
		if err != nil {
			return
		}
		enc, err := Encode(v)
		if err != nil {
			t.Fatalf("Encode of a decoded term failed: %v\nterm %#v", err, v)
		}
		v2, err := Decode(enc, Limits{})
		if err != nil {
			t.Fatalf("Decode(Encode(v)) failed: %v\nencoding %x", err, enc)
		}
		if Compare(v, v2) != 0 || !equalTerm(v, v2) {
			t.Fatalf("round trip changed the term:\n%#v\n%#v", v, v2)
		}
		enc2, err := Encode(v2)
		if err != nil || string(enc2) != string(enc) {
			t.Fatalf("Encode is not stable: %x vs %x (%v)", enc, enc2, err)
		}
		c, err := EncodeCompressed(v)
		if err != nil {
			t.Fatal(err)
		}
		v3, err := Decode(c, Limits{})
		if err != nil || !equalTerm(v, v3) {
			t.Fatalf("compressed round trip: %v", err)
		}
	})
}

// TestWriteFuzzCorpus regenerates the committed seed corpus when run with
// -update-corpus; otherwise it checks that the corpus is present.
func TestWriteFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if !*updateCorpus {
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) < 15 {
			t.Fatalf("seed corpus %s has %d files (%v), want at least 15", dir, len(entries), err)
		}
		return
	}
	seeds := map[string][]byte{}
	for name, raw := range readRecords(t) {
		seeds["record-"+name] = raw
	}
	for name, h := range samples {
		seeds["tag-"+name] = mustHex(t, h)
	}
	extra := map[string]string{
		"improper-list":      "836c000000016101 6102",
		"unknown-tag":        "8371",
		"dup-key":            "837400000002770161610177016161 02",
		"string-tail":        "836c00000001 6101 6b 0002 0203",
		"latin1-atom":        "83640002e96c",
		"nan":                "83467ff8000000000000",
		"compressed-small":   "",
		"big-300":            "836f0000012c00",
		"map-int-float-keys": "837400000002463ff000000000000061006101 6100",
	}
	for name, h := range extra {
		if name == "compressed-small" {
			seeds[name] = compress(t, 1, []byte{106})
			continue
		}
		b := mustHex(t, h)
		if name == "big-300" {
			b = append(b, make([]byte, 300)...)
			b[len(b)-1] = 1
		}
		seeds[name] = b
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(seeds))
	for n := range seeds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seeds[n])
		if err := os.WriteFile(filepath.Join(dir, "seed-"+n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %d seeds to %s", len(names), dir)
}
