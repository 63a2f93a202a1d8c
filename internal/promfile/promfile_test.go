package promfile

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The module does not carry github.com/prometheus/common/expfmt's own
// dependencies (client_model, goautoneg), so the tests check the output
// with Parse, a strict reader of the text format, instead.

func parse(text string) (map[string]Family, error) { return Parse([]byte(text)) }

func TestFormat(t *testing.T) {
	b, err := Format([]Metric{
		Gauge("agentstore_x_seconds", "Time it took.\nTwo lines \\ here.", 1.5),
		Counter("agentstore_y_total", "Things.", 3, Label{"store", `/var/"x"` + "\n"}),
		{Name: "agentstore_z", Help: "Per kind.", Type: TypeGauge, Samples: []Sample{
			{Labels: []Label{{"kind", "a"}, {"app", "b"}}, Value: 1},
			{Labels: []Label{{"kind", "b"}}, Value: math.Inf(1)},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `# HELP agentstore_x_seconds Time it took.\nTwo lines \\ here.
# TYPE agentstore_x_seconds gauge
agentstore_x_seconds 1.5
# HELP agentstore_y_total Things.
# TYPE agentstore_y_total counter
agentstore_y_total{store="/var/\"x\"\n"} 3
# HELP agentstore_z Per kind.
# TYPE agentstore_z gauge
agentstore_z{app="b",kind="a"} 1
agentstore_z{kind="b"} +Inf
`
	if string(b) != want {
		t.Fatalf("got\n%s\nwant\n%s", b, want)
	}
	fams, err := parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 3 || fams["agentstore_y_total"].Type != TypeCounter {
		t.Fatalf("%+v", fams)
	}
}

func TestFormatRefuses(t *testing.T) {
	for name, ms := range map[string][]Metric{
		"bad name":         {Gauge("1x", "", 1)},
		"empty name":       {Gauge("", "", 1)},
		"dash":             {Gauge("a-b", "", 1)},
		"duplicate family": {Gauge("a", "", 1), Gauge("a", "", 2)},
		"duplicate series": {{Name: "a", Type: TypeGauge, Samples: []Sample{{Value: 1}, {Value: 2}}}},
		"same labels":      {{Name: "a", Type: TypeGauge, Samples: []Sample{{Labels: []Label{{"x", "1"}, {"y", "2"}}}, {Labels: []Label{{"y", "2"}, {"x", "1"}}}}}},
		"label twice":      {Gauge("a", "", 1, Label{"x", "1"}, Label{"x", "2"})},
		"reserved label":   {Gauge("a", "", 1, Label{"__name__", "1"})},
		"bad type":         {{Name: "a", Type: "summary", Samples: []Sample{{Value: 1}}}},
		"negative counter": {Counter("a_total", "", -1)},
	} {
		if _, err := Format(ms); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agentstore.prom")
	write := func(i int) error {
		ms := []Metric{Gauge("agentstore_run", "Run number.", float64(i))}
		for j := range 200 {
			ms = append(ms, Gauge(fmt.Sprintf("agentstore_pad_%d", j), strings.Repeat("padding ", 20), float64(j)))
		}
		return WriteFile(path, ms)
	}
	if err := write(0); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			b, err := os.ReadFile(path)
			if err == nil {
				_, err = parse(string(b))
				if err == nil && !strings.Contains(string(b), "agentstore_pad_199 199\n") {
					err = fmt.Errorf("truncated file")
				}
			}
			if err != nil {
				select {
				case errs <- err:
				default:
				}
				return
			}
			reads.Add(1)
		}
	}()
	for i := 1; i <= 100; i++ {
		if err := write(i); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("a reader saw a partial or missing file: %v", err)
	default:
	}
	if v, ok := ReadValue(path, "agentstore_run"); !ok || v != 100 {
		t.Fatalf("ReadValue = %v, %v", v, ok)
	}
	if v, ok := ReadValue(path, Series("agentstore_pad_7")); !ok || v != 7 {
		t.Fatalf("ReadValue = %v, %v", v, ok)
	}
	if _, ok := ReadValue(path, "agentstore_nope"); ok {
		t.Fatal("ReadValue found a missing metric")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	t.Logf("%d concurrent reads, all whole", reads.Load())
}

func TestParseRefuses(t *testing.T) {
	for name, text := range map[string]string{
		"no newline":       "# HELP a x\n# TYPE a gauge\na 1",
		"no help":          "# TYPE a gauge\na 1\n",
		"no type":          "# HELP a x\na 1\n",
		"duplicate series": "# HELP a x\n# TYPE a gauge\na 1\na 2\n",
		"family twice":     "# HELP a x\n# TYPE a gauge\na 1\n# HELP a x\n# TYPE a gauge\n",
		"interleaved":      "# HELP a x\n# TYPE a gauge\n# HELP b x\n# TYPE b gauge\na 1\n",
		"bad value":        "# HELP a x\n# TYPE a gauge\na one\n",
		"bad type":         "# HELP a x\n# TYPE a histogram\n",
	} {
		if _, err := parse(text); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestSeries(t *testing.T) {
	if got := Series("a", Label{"z", `q"\\`}, Label{"b", "1"}); got != `a{b="1",z="q\"\\\\"}` {
		t.Fatal(got)
	}
	if Series("a", Label{"__x", ""}) != "" {
		t.Fatal("bad label accepted")
	}
}

func TestWriteFileRefusesBadMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.prom")
	os.WriteFile(path, []byte("old\n"), 0o644)
	if err := WriteFile(path, []Metric{Gauge("a", "", 1), Gauge("a", "", 1)}); err == nil {
		t.Fatal("no error")
	}
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Fatal("a refused write changed the file")
	}
	if err := WriteFile(filepath.Join(t.TempDir(), "missing", "x.prom"), nil); err == nil {
		t.Fatal("no error for a missing directory")
	}
}
