package plan

import (
	"errors"
	"strings"
	"testing"
)

type body struct {
	Action string   `json:"action"`
	Items  []string `json:"items"`
}

type full struct {
	body
	PlanID string `json:"plan_id"`
}

func TestCanonicalAndID(t *testing.T) {
	c, err := Canonical(body{Action: "a<b>&", Items: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(c); got != `{"action":"a<b>&","items":["x"]}` {
		t.Fatalf("canonical %s", got)
	}
	id, err := ID(body{Action: "a<b>&", Items: []string{"x"}})
	if err != nil || !IsID(id) {
		t.Fatalf("id %q %v", id, err)
	}
	other, _ := ID(body{Action: "a<b>&", Items: []string{"y"}})
	if other == id {
		t.Fatal("different bodies, same id")
	}
}

func TestParse(t *testing.T) {
	id := strings.Repeat("ab", 32)
	p, got, err := Parse[full](" "+id+"\n", "test plan")
	if err != nil || p != nil || got != id {
		t.Fatalf("id: %v %q %v", p, got, err)
	}
	p, got, err = Parse[full](`{"action":"x","items":[],"plan_id":"`+id+`"}`, "test plan")
	if err != nil || p == nil || got != "" || p.PlanID != id || p.Action != "x" {
		t.Fatalf("plan: %+v %q %v", p, got, err)
	}
	for _, bad := range []string{"", "ABAB", strings.Repeat("AB", 32), "[1]", `{"action":"x","extra":1}`, `{"action":"x"} {}`, `{"action":`} {
		if _, _, err := Parse[full](bad, "test plan"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var pe *ParseError
	if _, _, err := Read[full](strings.NewReader(strings.Repeat(" ", 100)), 10, "test plan"); !errors.As(err, &pe) {
		t.Errorf("large: %v", err)
	}
}
