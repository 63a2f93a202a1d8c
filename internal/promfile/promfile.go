// Package promfile writes metrics for the node exporter's textfile
// collector: the Prometheus text exposition format (version 0.0.4), written
// atomically (a temporary file in the same directory, fsync, rename, fsync
// of the directory) so the collector never reads half a file.
package promfile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Type is a metric type as written on the # TYPE line.
type Type string

// The metric types this package writes.
const (
	TypeGauge   Type = "gauge"
	TypeCounter Type = "counter"
)

// Label is one label pair of a sample.
type Label struct {
	Name, Value string
}

// Sample is one value of a metric family, with its labels.
type Sample struct {
	Labels []Label
	Value  float64
}

// Metric is one metric family: its name, help text, type and samples.
type Metric struct {
	Name    string
	Help    string
	Type    Type
	Samples []Sample
}

// Gauge returns a gauge family with one sample.
func Gauge(name, help string, value float64, labels ...Label) Metric {
	return Metric{Name: name, Help: help, Type: TypeGauge, Samples: []Sample{{Labels: labels, Value: value}}}
}

// Counter returns a counter family with one sample. By convention counter
// names end in _total.
func Counter(name, help string, value float64, labels ...Label) Metric {
	return Metric{Name: name, Help: help, Type: TypeCounter, Samples: []Sample{{Labels: labels, Value: value}}}
}

// Format writes metrics in the text format, each family once with its
// HELP and TYPE lines. It refuses invalid names, duplicate families and
// duplicate series (same name and label set).
func Format(metrics []Metric) ([]byte, error) {
	var b bytes.Buffer
	seen := map[string]bool{}
	for _, m := range metrics {
		if !validName(m.Name, true) {
			return nil, fmt.Errorf("promfile: invalid metric name %q", m.Name)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("promfile: metric %s given twice", m.Name)
		}
		seen[m.Name] = true
		if m.Type != TypeGauge && m.Type != TypeCounter {
			return nil, fmt.Errorf("promfile: metric %s has unknown type %q", m.Name, m.Type)
		}
		fmt.Fprintf(&b, "# HELP %s %s\n", m.Name, escapeHelp(m.Help))
		fmt.Fprintf(&b, "# TYPE %s %s\n", m.Name, m.Type)
		series := map[string]bool{}
		for _, s := range m.Samples {
			if m.Type == TypeCounter && (s.Value < 0 || math.IsNaN(s.Value)) {
				return nil, fmt.Errorf("promfile: counter %s has value %v", m.Name, s.Value)
			}
			labels, err := formatLabels(s.Labels)
			if err != nil {
				return nil, fmt.Errorf("promfile: metric %s: %w", m.Name, err)
			}
			if series[labels] {
				return nil, fmt.Errorf("promfile: metric %s has the series %s twice", m.Name, labels)
			}
			series[labels] = true
			fmt.Fprintf(&b, "%s%s %s\n", m.Name, labels, formatValue(s.Value))
		}
	}
	return b.Bytes(), nil
}

// WriteFile formats metrics and replaces path with them atomically. The
// file is made 0644 so that the exporter can read it.
func WriteFile(path string, metrics []Metric) error {
	b, err := Format(metrics)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	// The collector reads only *.prom files; the temporary name must not
	// end that way.
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(tok[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("promfile: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("promfile: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("promfile: %w", err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		return fmt.Errorf("promfile: syncing %s: %w", dir, err)
	}
	return nil
}

// Series returns a series as the text format writes it: the name and the
// sorted, escaped labels, e.g. agentstore_x{store="/s"}. It returns ""
// for labels Format would refuse.
func Series(name string, labels ...Label) string {
	l, err := formatLabels(labels)
	if err != nil {
		return ""
	}
	return name + l
}

// ReadValue returns the value of a series (see Series) in a file written by
// WriteFile (used to carry a last-success timestamp over a failed run). It
// reports false when the file does not parse or lacks the series.
func ReadValue(path, series string) (float64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	fams, err := Parse(b)
	if err != nil {
		return 0, false
	}
	name, _, _ := strings.Cut(series, "{")
	f, ok := fams[name]
	if !ok {
		return 0, false
	}
	v, ok := f.Series[series]
	return v, ok
}

// Family is a metric family as Parse reads it.
type Family struct {
	Help string
	Type Type
	// Series maps each series, written as Series writes it, to its value.
	Series map[string]float64
}

// Parse reads the text format strictly, as Format writes it: every family
// has one HELP line, then one TYPE line (gauge or counter), then its
// samples, and no series appears twice. It is meant for checking files
// (tests, ReadValue), not for reading arbitrary exporters' output.
func Parse(b []byte) (map[string]Family, error) {
	text := string(b)
	fams := map[string]Family{}
	if text == "" {
		return fams, nil
	}
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("promfile: no newline at the end")
	}
	cur := ""
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		bad := func(format string, args ...any) (map[string]Family, error) {
			return nil, fmt.Errorf("promfile: line %d %q: %s", i+1, line, fmt.Sprintf(format, args...))
		}
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, help, _ := strings.Cut(line[len("# HELP "):], " ")
			if _, dup := fams[name]; dup {
				return bad("second HELP for %s", name)
			}
			if !validName(name, true) {
				return bad("invalid metric name")
			}
			fams[name] = Family{Help: help, Series: map[string]float64{}}
			cur = name
		case strings.HasPrefix(line, "# TYPE "):
			name, typ, _ := strings.Cut(line[len("# TYPE "):], " ")
			f, ok := fams[name]
			if !ok || name != cur || f.Type != "" {
				return bad("TYPE out of place")
			}
			if Type(typ) != TypeGauge && Type(typ) != TypeCounter {
				return bad("unknown type %q", typ)
			}
			f.Type = Type(typ)
			fams[name] = f
		case strings.HasPrefix(line, "#"):
			return bad("unexpected comment")
		default:
			sp := strings.LastIndexByte(line, ' ')
			if sp < 0 {
				return bad("no value")
			}
			series, val := line[:sp], line[sp+1:]
			name := series
			if j := strings.IndexByte(series, '{'); j >= 0 {
				name = series[:j]
				if !strings.HasSuffix(series, "}") {
					return bad("labels not closed")
				}
			}
			f, ok := fams[name]
			if !ok || name != cur || f.Type == "" {
				return bad("sample without HELP and TYPE before it")
			}
			v, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return bad("value: %v", err)
			}
			if _, dup := f.Series[series]; dup {
				return bad("duplicate series")
			}
			f.Series[series] = v
		}
	}
	return fams, nil
}

func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		case c == ':' && colon:
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func formatLabels(labels []Label) (string, error) {
	if len(labels) == 0 {
		return "", nil
	}
	ls := slices.Clone(labels)
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if !validName(l.Name, false) || strings.HasPrefix(l.Name, "__") {
			return "", fmt.Errorf("invalid label name %q", l.Name)
		}
		if i > 0 {
			if ls[i-1].Name == l.Name {
				return "", fmt.Errorf("label %s given twice", l.Name)
			}
			b.WriteByte(',')
		}
		b.WriteString(l.Name)
		b.WriteString(`="`)
		b.WriteString(escapeLabel(l.Value))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), nil
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	if a := math.Abs(v); a == 0 || (a >= 1e-3 && a < 1e15) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
