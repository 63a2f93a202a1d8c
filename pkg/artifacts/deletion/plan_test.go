package deletion

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
)

func sampleBody() PlanBody {
	return PlanBody{
		Action:   ActionDelete,
		Store:    "file:///srv/a&b<c>",
		Scope:    ScopeOf(artifacts.SessionScope("demo-a", "用户-a", "sessão/ü 1")),
		Name:     "données/résumé.md",
		Selector: SelectorAllVersions,
		Versions: []PlanVersion{
			{Version: 1, Size: 11, Digest: strings.Repeat("a", 64)},
			{Version: 3, Size: 0, Digest: strings.Repeat("b", 64)},
		},
	}
}

// TestCanonicalForm pins the canonical JSON byte for byte: field order,
// no whitespace, HTML characters and non-ASCII left as they are.
func TestCanonicalForm(t *testing.T) {
	got, err := sampleBody().Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"action":"delete","store":"file:///srv/a&b<c>","scope":{"kind":"session","app":"demo-a","user":"用户-a","session":"sessão/ü 1"},"name":"données/résumé.md","selector":"all-versions","versions":[{"version":1,"size":11,"digest":"` +
		strings.Repeat("a", 64) + `"},{"version":3,"size":0,"digest":"` + strings.Repeat("b", 64) + `"}]}`
	if string(got) != want {
		t.Errorf("canonical:\n got %s\nwant %s", got, want)
	}
	sum := sha256.Sum256([]byte(want))
	id, _ := sampleBody().ID()
	if id != hex.EncodeToString(sum[:]) {
		t.Errorf("ID %s is not the SHA-256 of the canonical form", id)
	}

	// App scopes leave out user and session; no versions is [].
	b := PlanBody{Action: ActionDelete, Store: "gs://b/p", Scope: ScopeOf(artifacts.AppScope("x")), Name: "n", Selector: "version=2"}
	got, _ = b.Canonical()
	if string(got) != `{"action":"delete","store":"gs://b/p","scope":{"kind":"app","app":"x"},"name":"n","selector":"version=2","versions":[]}` {
		t.Errorf("app canonical: %s", got)
	}
}

// TestPlanJSONRoundTrip checks that the printed plan is the body's fields
// then plan_id, and that parsing it back gives the same plan.
func TestPlanJSONRoundTrip(t *testing.T) {
	p, err := NewPlan(sampleBody())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		t.Fatal(err)
	}
	b := bytes.TrimSpace(buf.Bytes())
	canon, _ := p.Canonical()
	if want := string(canon[:len(canon)-1]) + `,"plan_id":"` + p.PlanID + `"}`; string(b) != want {
		t.Errorf("plan JSON:\n got %s\nwant %s", b, want)
	}
	c, err := ParseConfirmation(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if c.Plan == nil || c.PlanID != p.PlanID {
		t.Fatalf("parsed %+v", c)
	}
	if err := c.Match(p); err != nil {
		t.Errorf("a plan does not match itself: %v", err)
	}
}

func TestParseConfirmation(t *testing.T) {
	p, _ := NewPlan(sampleBody())
	js, _ := json.MarshalIndent(p, "", "  ")
	for _, tc := range []struct {
		name, in string
		wantID   string
		wantPlan bool
		wantErr  string
	}{
		{"id", p.PlanID, p.PlanID, false, ""},
		{"id with newline", p.PlanID + "\n", p.PlanID, false, ""},
		{"plan", string(js), p.PlanID, true, ""},
		{"plan with spaces", "\n  " + string(js) + "\n", p.PlanID, true, ""},
		{"upper-case id", strings.ToUpper(p.PlanID), "", false, "neither a plan_id"},
		{"short id", p.PlanID[:63], "", false, "neither a plan_id"},
		{"empty", "", "", false, "neither a plan_id"},
		{"garbage", "yes", "", false, "neither a plan_id"},
		{"unknown field", `{"action":"delete","extra":1}`, "", false, "unknown field"},
		{"two values", string(js) + string(js), "", false, "more than one"},
		{"truncated", string(js[:len(js)-3]), "", false, "not a delete plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfirmation(tc.in)
			if tc.wantErr != "" {
				var pe *plan.ParseError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &pe) {
					t.Fatalf("err %v, want a *plan.ParseError saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.PlanID != tc.wantID || (c.Plan != nil) != tc.wantPlan {
				t.Errorf("got %+v", c)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	cur, _ := NewPlan(sampleBody())
	cur.Layout = "erlang-fs"
	withBody := func(edit func(*PlanBody)) PlanBody {
		b := sampleBody()
		b.Versions = append([]PlanVersion(nil), b.Versions...)
		edit(&b)
		return b
	}
	// honest re-made plans of a different state of the store or command
	made := func(edit func(*PlanBody)) Confirmation {
		p, _ := NewPlan(withBody(edit))
		return Confirmation{PlanID: p.PlanID, Plan: &p}
	}
	// plans edited after they were made: plan_id kept
	tampered := func(edit func(*PlanBody)) Confirmation {
		p := Plan{PlanBody: withBody(edit), PlanID: cur.PlanID}
		return Confirmation{PlanID: p.PlanID, Plan: &p}
	}
	// a plan naming a layout (plans made before layouts were named name
	// none, and "same plan" shows they still confirm)
	inLayout := func(layout string) Confirmation {
		c := made(func(*PlanBody) {})
		c.Plan.Layout = layout
		return c
	}
	for _, tc := range []struct {
		name  string
		c     Confirmation
		code  string // "" for a match
		inMsg string
	}{
		{"same id", Confirmation{PlanID: cur.PlanID}, "", ""},
		{"same layout", inLayout("erlang-fs"), "", ""},
		{"other layout", inLayout("erlang-fs-sharded"), plan.CodeConfirmationRequired, "a store of layout erlang-fs-sharded"},
		{"same plan", made(func(*PlanBody) {}), "", ""},
		{"other id", Confirmation{PlanID: strings.Repeat("0", 64)}, plan.CodeStaleConfirmation, "does not match the current plan"},
		{"version added since", made(func(b *PlanBody) { b.Versions = b.Versions[:1] }), plan.CodeStaleConfirmation, "now targeted but not planned: v3"},
		{"version removed since", made(func(b *PlanBody) {
			b.Versions = append(b.Versions, PlanVersion{Version: 4, Size: 1, Digest: strings.Repeat("c", 64)})
		}), plan.CodeStaleConfirmation, "planned but gone or changed: v4"},
		{"edited digest", tampered(func(b *PlanBody) { b.Versions[0].Digest = strings.Repeat("f", 64) }), plan.CodeConfirmationRequired, "modified after it was made"},
		{"edited version list", tampered(func(b *PlanBody) { b.Versions = b.Versions[1:] }), plan.CodeConfirmationRequired, "modified after it was made"},
		{"no plan_id", Confirmation{Plan: &Plan{PlanBody: sampleBody()}}, plan.CodeConfirmationRequired, "modified after it was made"},
		{"other selector", made(func(b *PlanBody) { b.Selector = SelectorLatest }), plan.CodeConfirmationRequired, "not for this command"},
		{"other name", made(func(b *PlanBody) { b.Name = "x" }), plan.CodeConfirmationRequired, "not for this command"},
		{"other store", made(func(b *PlanBody) { b.Store = "file:///elsewhere" }), plan.CodeConfirmationRequired, "not for this command"},
		{"other scope", made(func(b *PlanBody) { b.Scope = ScopeOf(artifacts.AppScope("demo-a")) }), plan.CodeConfirmationRequired, "not for this command"},
		{"other action", made(func(b *PlanBody) { b.Action = "purge" }), plan.CodeConfirmationRequired, "not for this command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Match(cur)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *plan.ConfirmationError
			if !errors.As(err, &ce) || ce.ErrorCode() != tc.code {
				t.Fatalf("err %v, want a confirmation error with code %s", err, tc.code)
			}
			if !strings.Contains(err.Error(), tc.inMsg) {
				t.Errorf("message %q lacks %q", err, tc.inMsg)
			}
		})
	}
}

func TestComputePlan(t *testing.T) {
	ctx := context.Background()
	st, err := memstore.New(memstore.Options{Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) }})
	if err != nil {
		t.Fatal(err)
	}
	scope := artifacts.UserScope("app", "u")
	var recs []artifacts.Record
	for _, s := range []string{"one", "two", "three"} {
		r, err := st.Put(ctx, scope, "f", strings.NewReader(s), artifacts.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	pv := func(r artifacts.Record) PlanVersion {
		return PlanVersion{Version: r.Version, Size: r.Size, Digest: r.Digest}
	}
	for _, tc := range []struct {
		sel  artifacts.Selector
		want []PlanVersion
		str  string
	}{
		{artifacts.Selector{Kind: artifacts.SelectVersion, Version: 2}, []PlanVersion{pv(recs[1])}, "version=2"},
		{artifacts.Selector{Kind: artifacts.SelectLatest}, []PlanVersion{pv(recs[2])}, "latest"},
		{artifacts.Selector{Kind: artifacts.SelectAll}, []PlanVersion{pv(recs[0]), pv(recs[1]), pv(recs[2])}, "all-versions"},
	} {
		p, err := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "f", tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		if p.Selector != tc.str || len(p.Versions) != len(tc.want) {
			t.Fatalf("%s: %+v", tc.str, p)
		}
		for i := range tc.want {
			if p.Versions[i] != tc.want[i] {
				t.Errorf("%s: version %d: %+v, want %+v", tc.str, i, p.Versions[i], tc.want[i])
			}
		}
		if id, _ := p.ID(); id != p.PlanID {
			t.Errorf("%s: plan_id %s, body hashes to %s", tc.str, p.PlanID, id)
		}
		again, _ := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "f", tc.sel)
		if again.PlanID != p.PlanID {
			t.Errorf("%s: computing twice gives two ids", tc.str)
		}
	}
	if _, err := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "nope", artifacts.Selector{Kind: artifacts.SelectAll}); !artifacts.IsNotFound(err) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 9}); !artifacts.IsNotFound(err) {
		t.Errorf("unknown version: %v", err)
	}
	if _, err := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectVersion}); !artifacts.IsNotFound(err) {
		t.Errorf("version 0 of a store numbering from 1: %v", err)
	}
	if _, err := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectVersion, Version: -1}); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Errorf("version -1: %v", err)
	}
	// A plan for --version 2 does not change when a version is added; a
	// plan for --latest does.
	v2, _ := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 2})
	latest, _ := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectLatest})
	if _, err := st.Put(ctx, scope, "f", strings.NewReader("four"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	v2b, _ := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 2})
	latestB, _ := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectLatest})
	if v2.PlanID != v2b.PlanID || latest.PlanID == latestB.PlanID {
		t.Errorf("after a put: version plan %v, latest plan %v", v2.PlanID == v2b.PlanID, latest.PlanID == latestB.PlanID)
	}
}

// reusing declares that its layout reuses deleted numbers; the plan, not
// the driver's behaviour, is under test.
type reusing struct{ artifacts.Driver }

func (r reusing) Capabilities() artifacts.Capabilities {
	c := r.Driver.Capabilities()
	c.ReusesVersions, c.Layout = true, "google-adk-gcs"
	return c
}

func TestExecute(t *testing.T) {
	ctx := context.Background()
	scope := artifacts.SessionScope("app", "u", "s")
	newStore := func(t *testing.T, reuse bool) *artifacts.Store {
		ms, err := memstore.New(memstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var d artifacts.Driver = ms
		if reuse {
			d = reusing{d}
		}
		st := artifacts.NewStore(d)
		for _, b := range []string{"one", "two", "three"} {
			if _, err := st.Put(ctx, scope, "f", strings.NewReader(b), artifacts.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	versions := func(t *testing.T, st *artifacts.Store) []int64 {
		page, err := st.ListVersions(ctx, scope, "f", artifacts.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, r := range page.Items {
			out = append(out, r.Version)
		}
		return out
	}
	cases := []struct {
		name  string
		reuse bool
		sel   artifacts.Selector
		allow bool
		code  string // "" when the plan executes
		left  []int64
	}{
		{"never-reusing layout, latest", false, artifacts.Selector{Kind: artifacts.SelectLatest}, false, "", []int64{1, 2}},
		{"reusing layout, a middle version", true, artifacts.Selector{Kind: artifacts.SelectVersion, Version: 2}, false, "", []int64{1, 3}},
		{"reusing layout, the highest refused", true, artifacts.Selector{Kind: artifacts.SelectLatest}, false, plan.CodeConfirmationRequired, []int64{1, 2, 3}},
		{"reusing layout, all refused", true, artifacts.Selector{Kind: artifacts.SelectAll}, false, plan.CodeConfirmationRequired, []int64{1, 2, 3}},
		{"reusing layout, the highest allowed", true, artifacts.Selector{Kind: artifacts.SelectLatest}, true, "", []int64{1, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t, tc.reuse)
			p, err := ComputePlan(ctx, st, "mem://", scope, "f", tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			if reused := p.ReusedNumber != nil; reused != (tc.reuse && tc.sel.Kind != artifacts.SelectVersion) {
				t.Errorf("ReusedNumber %v for %+v", p.ReusedNumber, tc.sel)
			} else if want := map[artifacts.SelectorKind]int64{artifacts.SelectLatest: 3, artifacts.SelectAll: 1}[tc.sel.Kind]; reused && (*p.ReusedNumber != want || !strings.Contains(p.Note, fmt.Sprintf("ADK will hand out v%d again", want))) {
				t.Errorf("ReusedNumber %d, note %q; want v%d", *p.ReusedNumber, p.Note, want)
			}
			_, err = Execute(ctx, st, p, ExecOptions{AllowNumberReuse: tc.allow})
			var ce *plan.ConfirmationError
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("Execute: %v", err)
			case tc.code != "" && (!errors.As(err, &ce) || ce.ErrorCode() != tc.code):
				t.Fatalf("Execute: %v, want %s", err, tc.code)
			}
			if got := versions(t, st); !slices.Equal(got, tc.left) {
				t.Errorf("left %v, want %v", got, tc.left)
			}
		})
	}
	t.Run("a gap below the highest: the next save takes the gap's number", func(t *testing.T) {
		st := newStore(t, true)
		if _, err := st.Delete(ctx, scope, "f", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 2}); err != nil {
			t.Fatal(err)
		}
		p, err := ComputePlan(ctx, st, "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectLatest})
		if err != nil {
			t.Fatal(err)
		}
		if p.ReusedNumber == nil || *p.ReusedNumber != 2 || !strings.Contains(p.Note, "hand out v2 again") {
			t.Fatalf("ReusedNumber %v, note %q; want v2 (one above v1, the highest left)", p.ReusedNumber, p.Note)
		}
		p, err = ComputePlan(ctx, st, "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectAll})
		if err != nil {
			t.Fatal(err)
		}
		if p.ReusedNumber == nil || *p.ReusedNumber != 1 {
			t.Fatalf("all versions: ReusedNumber %v, want the first version, 1", p.ReusedNumber)
		}
	})
	t.Run("a version changed since the plan: stale, nothing deleted", func(t *testing.T) {
		st := newStore(t, false)
		p, err := ComputePlan(ctx, st, "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectAll})
		if err != nil {
			t.Fatal(err)
		}
		p.Versions[2].Digest = strings.Repeat("0", 64) // as if v3 had been rewritten
		_, err = Execute(ctx, st, p, ExecOptions{})
		var ce *plan.ConfirmationError
		if !errors.As(err, &ce) || !ce.Stale {
			t.Fatalf("Execute: %v, want a stale confirmation", err)
		}
		if got := versions(t, st); !slices.Equal(got, []int64{1, 2, 3}) {
			t.Errorf("left %v", got)
		}
	})
}
