package artifactscmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
)

func sampleBody() PlanBody {
	return PlanBody{
		Action:   ActionDelete,
		Store:    "file:///srv/a&b<c>",
		Scope:    ScopeJSON(artifacts.SessionScope("demo-a", "用户-a", "sessão/ü 1")),
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
	b := PlanBody{Action: ActionDelete, Store: "gs://b/p", Scope: ScopeJSON(artifacts.AppScope("x")), Name: "n", Selector: "version=2"}
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
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || cmdutil.ExitCode(err) != cmdutil.ExitUsage {
					t.Fatalf("err %v (exit %d), want %q and exit 2", err, cmdutil.ExitCode(err), tc.wantErr)
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
	for _, tc := range []struct {
		name  string
		c     Confirmation
		code  string // "" for a match
		inMsg string
	}{
		{"same id", Confirmation{PlanID: cur.PlanID}, "", ""},
		{"same plan", made(func(*PlanBody) {}), "", ""},
		{"other id", Confirmation{PlanID: strings.Repeat("0", 64)}, cmdutil.CodeStaleConfirmation, "does not match the current plan"},
		{"version added since", made(func(b *PlanBody) { b.Versions = b.Versions[:1] }), cmdutil.CodeStaleConfirmation, "now targeted but not planned: v3"},
		{"version removed since", made(func(b *PlanBody) {
			b.Versions = append(b.Versions, PlanVersion{Version: 4, Size: 1, Digest: strings.Repeat("c", 64)})
		}), cmdutil.CodeStaleConfirmation, "planned but gone or changed: v4"},
		{"edited digest", tampered(func(b *PlanBody) { b.Versions[0].Digest = strings.Repeat("f", 64) }), cmdutil.CodeConfirmationRequired, "modified after it was made"},
		{"edited version list", tampered(func(b *PlanBody) { b.Versions = b.Versions[1:] }), cmdutil.CodeConfirmationRequired, "modified after it was made"},
		{"no plan_id", Confirmation{Plan: &Plan{PlanBody: sampleBody()}}, cmdutil.CodeConfirmationRequired, "modified after it was made"},
		{"other selector", made(func(b *PlanBody) { b.Selector = SelectorLatest }), cmdutil.CodeConfirmationRequired, "not for this command"},
		{"other name", made(func(b *PlanBody) { b.Name = "x" }), cmdutil.CodeConfirmationRequired, "not for this command"},
		{"other store", made(func(b *PlanBody) { b.Store = "file:///elsewhere" }), cmdutil.CodeConfirmationRequired, "not for this command"},
		{"other scope", made(func(b *PlanBody) { b.Scope = ScopeJSON(artifacts.AppScope("demo-a")) }), cmdutil.CodeConfirmationRequired, "not for this command"},
		{"other action", made(func(b *PlanBody) { b.Action = "purge" }), cmdutil.CodeConfirmationRequired, "not for this command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Match(cur)
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *cmdutil.ConfirmationError
			if !errors.As(err, &ce) || cmdutil.ErrorCode(err) != tc.code || cmdutil.ExitCode(err) != cmdutil.ExitConfirmation {
				t.Fatalf("err %v, want code %s and exit 4", err, tc.code)
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
	if _, err := ComputePlan(ctx, artifacts.NewStore(st), "mem://", scope, "f", artifacts.Selector{Kind: artifacts.SelectVersion}); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Errorf("version 0: %v", err)
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
