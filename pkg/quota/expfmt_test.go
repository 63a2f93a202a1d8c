// checkExpfmt parses the Prometheus output with the Prometheus text
// parser, github.com/prometheus/common/expfmt, and checks that every family
// has HELP and TYPE, no series repeats, and the scope ids survive escaping.

package quota

import (
	"bytes"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

func checkExpfmt(t *testing.T, text []byte, scopes []artifacts.Scope) {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("expfmt: %v\n%s", err, text)
	}
	found := map[artifacts.Scope]bool{}
	for name, f := range fams {
		if f.GetHelp() == "" || f.GetType().String() != "GAUGE" {
			t.Errorf("%s: help %q type %v", name, f.GetHelp(), f.GetType())
		}
		seen := map[string]bool{}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			key := ""
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
				key += l.GetName() + "\x00" + l.GetValue() + "\x00"
			}
			if seen[key] {
				t.Errorf("%s: duplicate series %q", name, key)
			}
			seen[key] = true
			if name == MetricPrefix+"scope_names" && labels["kind"] != "" {
				s := artifacts.Scope{Kind: artifacts.Kind(labels["kind"]), App: labels["app"], User: labels["user"], Session: labels["session"]}
				if s.Hash() != labels["scope_hash"] {
					t.Errorf("labels %q do not round-trip to scope_hash", labels)
				}
				found[s] = true
			}
		}
	}
	for _, s := range scopes {
		if !found[s] {
			t.Errorf("scope %s not found with its ids intact", s)
		}
	}
	t.Logf("expfmt parsed %d families", len(fams))
}
