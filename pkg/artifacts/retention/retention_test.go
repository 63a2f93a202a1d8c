package retention

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/internal/testfixtures"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
)

// t0 is the test's "now": every policy is measured from it.
var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// sample is a version the test put, with what the test knows of it.
type sample struct {
	scope   artifacts.Scope
	name    string
	version int64
	size    int64
	mime    string
	created int64 // ms
}

// testScopes are the scopes of the built store: two apps, each scope kind.
var testScopes = []artifacts.Scope{
	artifacts.AppScope("app-a"),
	artifacts.UserScope("app-a", "u1"),
	artifacts.SessionScope("app-a", "u1", "s1"),
	artifacts.SessionScope("app-a", "u1", "s2"),
	artifacts.UserScope("app-a", "u2"),
	artifacts.AppScope("app-b"),
	artifacts.SessionScope("app-b", "u1", "s1"),
}

var testNames = []string{"logs/run.txt", "logs/old/x.txt", "report.pdf", "image.png", "workspace.zip"}

// buildStore puts, into st, a few versions of every test name in every
// test scope, created on days spread back from t0, with MIME types that
// vary by version, and returns what it put.
func buildStore(t testing.TB, st *artifacts.Store, clock *time.Time) []sample {
	t.Helper()
	ctx := context.Background()
	var out []sample
	for si, sc := range testScopes {
		for ni, name := range testNames {
			n := 1 + (si*3+ni*5)%7 // 1..7 versions
			for v := range n {
				age := time.Duration((n-v)*(1+ni)) * day / 2 // older first
				*clock = t0.Add(-age)
				mime := "text/plain"
				if (v+ni)%3 == 0 {
					mime = "image/png"
				}
				body := strings.Repeat("x", 10+si+ni+v)
				rec, err := st.Put(ctx, sc, name, strings.NewReader(body), artifacts.PutOptions{MIMEType: mime})
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, sample{scope: sc, name: name, version: rec.Version, size: rec.Size, mime: mime, created: rec.CreatedAt})
			}
		}
	}
	*clock = t0
	return out
}

// expect computes, without the package, which versions a policy prunes:
// a version is pruned when the policy selects it (name, MIME type, age)
// and nothing protects it (latest, highest in a reusing layout, the last
// N, created within D).
func expect(samples []sample, p Policy, filter artifacts.Scope, reuses bool) (pruned, kept map[string]bool) {
	pruned, kept = map[string]bool{}, map[string]bool{}
	type key struct {
		scope artifacts.Scope
		name  string
	}
	byName := map[key][]sample{}
	for _, s := range samples {
		k := key{s.scope, s.name}
		byName[k] = append(byName[k], s)
	}
	inFilter := func(s artifacts.Scope) bool {
		switch filter.Kind {
		case "":
			return true
		case artifacts.KindApp:
			return s.App == filter.App
		case artifacts.KindUser:
			return s.App == filter.App && s.User == filter.User && (s.Kind == artifacts.KindUser || s.Kind == artifacts.KindSession)
		}
		return s == filter
	}
	nowMS := t0.UnixMilli()
	for k, vs := range byName {
		if !inFilter(k.scope) {
			continue
		}
		if p.Name != "" {
			if ok, _ := path.Match(p.Name, k.name); !ok {
				continue
			}
		}
		var versions []int64
		for _, s := range vs {
			versions = append(versions, s.version)
		}
		slices.Sort(versions)
		slices.Reverse(versions) // highest first
		for _, s := range vs {
			rank := slices.Index(versions, s.version)
			ageMS := nowMS - s.created
			selected := true
			if p.OlderThan > 0 && !(ageMS > p.OlderThan.Milliseconds()) {
				selected = false
			}
			if p.MIME != "" {
				if ok, _ := path.Match(p.MIME, s.mime); !ok {
					selected = false
				}
			}
			protected := (rank == 0 && (reuses || !p.NoKeepLatest)) ||
				(p.KeepLast > 0 && rank < p.KeepLast) ||
				(p.KeepWithin > 0 && ageMS <= p.KeepWithin.Milliseconds())
			id := fmt.Sprintf("%s|%s|%d", k.scope, k.name, s.version)
			if selected && !protected {
				pruned[id] = true
			} else {
				kept[id] = true
			}
		}
	}
	return pruned, kept
}

func planSets(p *Plan) (pruned, kept map[string]bool) {
	pruned, kept = map[string]bool{}, map[string]bool{}
	for _, n := range p.Names {
		for _, v := range n.Pruned {
			pruned[fmt.Sprintf("%s|%s|%d", n.Scope, n.Name, v.Version)] = true
		}
		for _, v := range n.Kept {
			kept[fmt.Sprintf("%s|%s|%d", n.Scope, n.Name, v.Version)] = true
		}
	}
	return pruned, kept
}

func diffSets(want, got map[string]bool) string {
	var b strings.Builder
	for k := range want {
		if !got[k] {
			fmt.Fprintf(&b, " missing %s;", k)
		}
	}
	for k := range got {
		if !want[k] {
			fmt.Fprintf(&b, " extra %s;", k)
		}
	}
	return b.String()
}

func newFSStore(t testing.TB, clock *time.Time) (*artifacts.Store, string) {
	t.Helper()
	root := t.TempDir()
	d, err := fsstore.Open(root, fsstore.Options{Now: func() time.Time { return *clock }})
	if err != nil {
		t.Fatal(err)
	}
	return artifacts.NewStore(d), root
}

// reusing is a memory store that declares the layout fact of Google ADK's
// layouts: a deleted highest number is handed out again.
type reusing struct{ *memstore.Store }

func (r reusing) Capabilities() artifacts.Capabilities {
	c := r.Store.Capabilities()
	c.ReusesVersions = true
	c.Layout = "memory-reusing"
	return c
}

// policies is every combination of the policy's settings the tests try.
func policies() []Policy {
	var out []Policy
	for _, kl := range []int{0, 1, 3} {
		for _, kw := range []time.Duration{0, 2 * day} {
			for _, nkl := range []bool{false, true} {
				for _, ot := range []time.Duration{0, 3 * day} {
					for _, mime := range []string{"", "image/*"} {
						for _, name := range []string{"", "logs/*"} {
							out = append(out, Policy{KeepLast: kl, KeepWithin: kw, NoKeepLatest: nkl, OlderThan: ot, MIME: mime, Name: name})
						}
					}
				}
			}
		}
	}
	return out
}

var filters = []artifacts.Scope{
	{},
	artifacts.AppScope("app-a"),
	artifacts.UserScope("app-a", "u1"),
	artifacts.SessionScope("app-a", "u1", "s2"),
}

// TestPlanEveryCombination checks every policy and filter combination's
// kept and pruned sets against the table expect computes, on a
// filesystem store and on a memory store that reuses version numbers.
func TestPlanEveryCombination(t *testing.T) {
	clock := t0
	fsSt, _ := newFSStore(t, &clock)
	fsSamples := buildStore(t, fsSt, &clock)
	ms, err := memstore.New(memstore.Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	reSt := artifacts.NewStore(reusing{ms})
	reSamples := buildStore(t, reSt, &clock)
	stores := []struct {
		name    string
		st      *artifacts.Store
		samples []sample
		reuses  bool
	}{
		{"fs", fsSt, fsSamples, false},
		{"reusing", reSt, reSamples, true},
	}
	ctx := context.Background()
	checked := 0
	for _, s := range stores {
		for _, f := range filters {
			for _, p := range policies() {
				name := fmt.Sprintf("%s/%s/%s", s.name, f, p)
				plan, err := ComputePlan(ctx, s.st, Options{Store: "mem://" + s.name, Policy: p, Filter: f, Now: t0})
				if p.KeepLast == 0 && p.KeepWithin == 0 && p.OlderThan == 0 {
					if artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
						t.Errorf("%s: err %v, want invalid_argument", name, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				wantP, wantK := expect(s.samples, p, f, s.reuses)
				gotP, gotK := planSets(plan)
				if d := diffSets(wantP, gotP); d != "" {
					t.Errorf("%s: pruned:%s", name, d)
				}
				if d := diffSets(wantK, gotK); d != "" {
					t.Errorf("%s: kept:%s", name, d)
				}
				if plan.Totals.PrunedVersions != int64(len(wantP)) || plan.Totals.KeptVersions != int64(len(wantK)) {
					t.Errorf("%s: totals %+v, want %d pruned, %d kept", name, plan.Totals, len(wantP), len(wantK))
				}
				checked++
			}
		}
	}
	if checked < 300 {
		t.Fatalf("only %d combinations checked", checked)
	}
}

// TestLatestSurvivesByDefault: a policy that would prune everything keeps
// each name's latest version unless --no-keep-latest, and in a reusing
// layout keeps the highest whatever the flags.
func TestLatestSurvivesByDefault(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		reuses       bool
		noKeepLatest bool
		wantLatest   bool
	}{
		{"default keeps latest", false, false, true},
		{"no-keep-latest prunes it", false, true, false},
		{"reusing layout keeps highest", true, true, true},
		{"reusing layout default", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := t0.Add(-30 * day)
			ms, err := memstore.New(memstore.Options{Now: func() time.Time { return clock }})
			if err != nil {
				t.Fatal(err)
			}
			var st *artifacts.Store
			if tc.reuses {
				st = artifacts.NewStore(reusing{ms})
			} else {
				st = artifacts.NewStore(ms)
			}
			sc := artifacts.SessionScope("a", "u", "s")
			for range 4 {
				if _, err := st.Put(ctx, sc, "n", strings.NewReader("x"), artifacts.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			p, err := ComputePlan(ctx, st, Options{Store: "mem://", Policy: Policy{OlderThan: day, NoKeepLatest: tc.noKeepLatest}, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Execute(ctx, st, p, ExecOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err = st.Stat(ctx, sc, "n", 4)
			if got := err == nil; got != tc.wantLatest {
				t.Fatalf("v4 survives: %v, want %v (err %v)", got, tc.wantLatest, err)
			}
			for v := int64(1); v < 4; v++ {
				if _, err := st.Stat(ctx, sc, "n", v); !artifacts.IsNotFound(err) {
					t.Errorf("v%d: %v, want not_found", v, err)
				}
			}
			if tc.reuses && !strings.Contains(strings.Join(p.Notes, " "), "reuses version numbers") {
				t.Errorf("notes %q do not say the layout reuses numbers", p.Notes)
			}
		})
	}
}

// treeHash hashes every file's path and bytes under root.
func treeHash(t testing.TB, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s %v\n", rel, d.Type())
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// listAll returns every published version of the store as "scope|name|v".
func listAll(t testing.TB, st *artifacts.Store) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := st.Walk(context.Background(), func(u artifacts.ScopeUsage) error {
		for _, n := range u.Names {
			for _, r := range n.Records {
				out[fmt.Sprintf("%s|%s|%d", u.Scope, n.Name, r.Version)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExecuteRemovesExactlyThePlan: the plan's totals equal what
// disappears from the store, and nothing else changes.
func TestExecuteRemovesExactlyThePlan(t *testing.T) {
	ctx := context.Background()
	for _, p := range []Policy{
		{KeepLast: 2},
		{OlderThan: 3 * day, MIME: "image/*"},
		{KeepWithin: 2 * day, NoKeepLatest: true, Name: "logs/*"},
	} {
		t.Run(p.String(), func(t *testing.T) {
			clock := t0
			st, _ := newFSStore(t, &clock)
			buildStore(t, st, &clock)
			before := listAll(t, st)
			plan, err := ComputePlan(ctx, st, Options{Store: "file:///x", Policy: p, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			if plan.Totals.PrunedVersions == 0 {
				t.Fatal("the policy prunes nothing: a useless case")
			}
			var dones []int
			res, err := Execute(ctx, st, plan, ExecOptions{Progress: func(done, total int) { dones = append(dones, done) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Failed) > 0 {
				t.Fatalf("failures: %+v", res.Failed)
			}
			after := listAll(t, st)
			gone := map[string]bool{}
			for k := range before {
				if !after[k] {
					gone[k] = true
				}
			}
			wantGone, _ := planSets(plan)
			if d := diffSets(wantGone, gone); d != "" {
				t.Fatalf("removed differs from the plan:%s", d)
			}
			if res.DeletedVersions != plan.Totals.PrunedVersions || res.DeletedBytes != plan.Totals.PrunedBytes {
				t.Fatalf("deleted %d versions, %d bytes; plan said %d, %d", res.DeletedVersions, res.DeletedBytes, plan.Totals.PrunedVersions, plan.Totals.PrunedBytes)
			}
			if len(dones) != len(plan.Body().Prune) {
				t.Fatalf("progress called %d times for %d names", len(dones), len(plan.Body().Prune))
			}
			again, err := ComputePlan(ctx, st, Options{Store: "file:///x", Policy: p, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			if again.Totals.PrunedVersions != 0 {
				t.Fatalf("a second plan prunes %d more", again.Totals.PrunedVersions)
			}
		})
	}
}

// TestStaleAndBoundsChangeNothing: a confirmation that no longer matches
// and a plan over a bound each leave the store's tree byte for byte.
func TestStaleAndBoundsChangeNothing(t *testing.T) {
	ctx := context.Background()
	clock := t0
	st, root := newFSStore(t, &clock)
	buildStore(t, st, &clock)
	pol := Policy{KeepLast: 1}
	opts := Options{Store: "file:///x", Policy: pol, Now: t0}
	plan, err := ComputePlan(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	sc := testScopes[2]
	if _, err := st.Put(ctx, sc, "report.pdf", strings.NewReader("new"), artifacts.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	h := treeHash(t, root)
	cur, err := ComputePlan(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		conf    Confirmation
		stale   bool
		message string
	}{
		{"plan_id", Confirmation{PlanID: plan.PlanID}, true, "does not match the current plan"},
		{"whole plan", Confirmation{PlanID: plan.PlanID, Plan: plan}, true, "now to prune but not planned"},
		{"edited plan", func() Confirmation {
			c := *plan
			c.Names = slices.Clone(c.Names)
			c.Names[0].Pruned = nil
			return Confirmation{PlanID: c.PlanID, Plan: &c}
		}(), false, "modified after it was made"},
		{"other policy", func() Confirmation {
			other, err := ComputePlan(ctx, st, Options{Store: "file:///x", Policy: Policy{KeepLast: 2}, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			return Confirmation{PlanID: other.PlanID, Plan: other}
		}(), false, "another store, policy or scope filter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.conf.Match(cur)
			var ce *ConfirmationError
			if !errors.As(err, &ce) || ce.Stale != tc.stale || !strings.Contains(ce.Msg, tc.message) {
				t.Fatalf("Match: %v, want a confirmation error (stale %v) saying %q", err, tc.stale, tc.message)
			}
			if got := treeHash(t, root); got != h {
				t.Fatal("the tree changed")
			}
		})
	}
	if err := (Confirmation{PlanID: cur.PlanID, Plan: cur}).Match(cur); err != nil {
		t.Fatalf("the current plan does not match itself: %v", err)
	}
	for _, b := range []struct{ n, bytes int64 }{{cur.Totals.PrunedVersions - 1, 0}, {0, cur.Totals.PrunedBytes - 1}} {
		_, err := Execute(ctx, st, cur, ExecOptions{MaxDelete: b.n, MaxDeleteBytes: b.bytes})
		var be *BoundError
		if !errors.As(err, &be) {
			t.Fatalf("bounds %d/%d: %v, want a BoundError", b.n, b.bytes, err)
		}
		if got := treeHash(t, root); got != h {
			t.Fatal("the tree changed")
		}
	}
	res, err := Execute(ctx, st, cur, ExecOptions{MaxDelete: cur.Totals.PrunedVersions, MaxDeleteBytes: cur.Totals.PrunedBytes})
	if err != nil || res.DeletedVersions != cur.Totals.PrunedVersions {
		t.Fatalf("at the bounds: %v, %+v", err, res)
	}
}

// TestExecuteBindsBytes: when a planned version is gone by the time the
// plan runs, no version of its name is deleted, and the other names are.
func TestExecuteBindsBytes(t *testing.T) {
	ctx := context.Background()
	clock := t0.Add(-10 * day)
	ms, err := memstore.New(memstore.Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(ms)
	sc := artifacts.AppScope("a")
	for _, n := range []string{"a", "b"} {
		for range 3 {
			if _, err := st.Put(ctx, sc, n, strings.NewReader("v"), artifacts.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	plan, err := ComputePlan(ctx, st, Options{Store: "mem://", Policy: Policy{KeepLast: 1}, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, sc, "b", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 2}); err != nil {
		t.Fatal(err)
	}
	res, err := Execute(ctx, st, plan, ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 1 || res.Failed[0].Name != "b" || res.Failed[0].Code != artifacts.CodeNotFound || !slices.Equal(res.Failed[0].Versions, []int64{1, 2}) {
		t.Fatalf("failed %+v, want name b v1 v2 with not_found", res.Failed)
	}
	if _, err := st.Stat(ctx, sc, "b", 1); err != nil {
		t.Fatalf("b v1 was deleted although b changed: %v", err)
	}
	if _, err := st.Stat(ctx, sc, "a", 1); !artifacts.IsNotFound(err) {
		t.Fatalf("a v1: %v, want deleted", err)
	}
}

// TestErlangFixture applies policies to a copy of the store the Erlang
// library wrote: the kept and pruned sets match the table computed from
// its expected.tsv, and executing removes exactly the plan.
func TestErlangFixture(t *testing.T) {
	ctx := context.Background()
	exp, err := testfixtures.ExpectedFS()
	if err != nil {
		t.Fatal(err)
	}
	var samples []sample
	var newest int64
	for _, e := range exp {
		sc := artifacts.Scope{Kind: artifacts.Kind(e.Kind), App: e.App, User: e.User, Session: e.Session}
		samples = append(samples, sample{scope: sc, name: e.Name, version: e.Version, size: e.Size, mime: e.MIMEType, created: e.CreatedAt})
		newest = max(newest, e.CreatedAt)
	}
	// Measured from just after the newest version, so that ages are a few
	// seconds to minutes, as the library wrote them.
	now := time.UnixMilli(newest).Add(time.Second)
	saved := t0
	t0 = now
	defer func() { t0 = saved }()
	for _, p := range []Policy{
		{KeepLast: 1},
		{KeepLast: 2, MIME: "text/*"},
		{OlderThan: 5 * time.Second, NoKeepLatest: true},
		{KeepWithin: 3 * time.Second, Name: "config/*"},
	} {
		t.Run(p.String(), func(t *testing.T) {
			root, err := testfixtures.CopyFSStore(filepath.Join(t.TempDir(), "store"))
			if err != nil {
				t.Fatal(err)
			}
			d, err := fsstore.Open(root, fsstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st := artifacts.NewStore(d)
			plan, err := ComputePlan(ctx, st, Options{Store: "file://" + root, Policy: p, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			wantP, wantK := expect(samples, p, artifacts.Scope{}, false)
			gotP, gotK := planSets(plan)
			if d := diffSets(wantP, gotP); d != "" {
				t.Errorf("pruned:%s", d)
			}
			if d := diffSets(wantK, gotK); d != "" {
				t.Errorf("kept:%s", d)
			}
			if !strings.Contains(strings.Join(plan.Notes, " "), "keeps its reservation") {
				t.Errorf("notes %q do not say reservations stay", plan.Notes)
			}
			before := listAll(t, st)
			res, err := Execute(ctx, st, plan, ExecOptions{})
			if err != nil || len(res.Failed) > 0 {
				t.Fatalf("execute: %v %+v", err, res)
			}
			after := listAll(t, st)
			for k := range before {
				if after[k] == gotP[k] {
					t.Errorf("%s: still listed %v, pruned %v", k, after[k], gotP[k])
				}
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * day, true},
		{"2w", 14 * day, true},
		{"1d12h", 36 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{"45s", 45 * time.Second, true},
		{"", 0, false},
		{"30", 0, false},
		{"d", 0, false},
		{"1y", 0, false},
		{"1.5s", 0, false},
		{"-3d", 0, false},
		{"1500ms", 0, false},
		{"99999999999d", 0, false},
	} {
		got, err := ParseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if tc.ok {
			back, err := ParseDuration(FormatDuration(got))
			if err != nil || back != got {
				t.Errorf("%q: FormatDuration round trip gives %q", tc.in, FormatDuration(got))
			}
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{}, "says nothing"},
		{Policy{NoKeepLatest: true, MIME: "x/*"}, "says nothing"},
		{Policy{KeepLast: -1}, "negative"},
		{Policy{KeepLast: 1, KeepWithin: -time.Hour}, "negative"},
		{Policy{OlderThan: -time.Hour}, "negative"},
		{Policy{OlderThan: 1500 * time.Millisecond}, "whole seconds"},
		{Policy{KeepLast: 1, MIME: "["}, "malformed"},
		{Policy{KeepLast: 1, Name: "a["}, "malformed"},
	} {
		err := tc.p.Validate()
		if artifacts.CodeOf(err) != artifacts.CodeInvalidArgument || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want invalid_argument saying %q", tc.p, err, tc.want)
		}
	}
}

// TestPolicyID: the id changes with every part of the policy, the filter
// and the store, and not with the order flags were given in.
func TestPolicyID(t *testing.T) {
	base := Policy{KeepLast: 3, OlderThan: 30 * day}
	id := func(store string, p Policy, f artifacts.Scope) string {
		s, err := PolicyID(store, p, f)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	b := id("file:///s", base, artifacts.Scope{})
	if b != id("file:///s", Policy{OlderThan: 720 * time.Hour, KeepLast: 3}, artifacts.Scope{}) {
		t.Fatal("the same policy gives two ids")
	}
	seen := map[string]string{b: "base"}
	for name, other := range map[string]string{
		"store":          id("file:///t", base, artifacts.Scope{}),
		"keep-last":      id("file:///s", Policy{KeepLast: 4, OlderThan: 30 * day}, artifacts.Scope{}),
		"older-than":     id("file:///s", Policy{KeepLast: 3, OlderThan: 31 * day}, artifacts.Scope{}),
		"keep-within":    id("file:///s", Policy{KeepLast: 3, OlderThan: 30 * day, KeepWithin: day}, artifacts.Scope{}),
		"no-keep-latest": id("file:///s", Policy{KeepLast: 3, OlderThan: 30 * day, NoKeepLatest: true}, artifacts.Scope{}),
		"mime":           id("file:///s", Policy{KeepLast: 3, OlderThan: 30 * day, MIME: "a/*"}, artifacts.Scope{}),
		"name":           id("file:///s", Policy{KeepLast: 3, OlderThan: 30 * day, Name: "a*"}, artifacts.Scope{}),
		"app filter":     id("file:///s", base, artifacts.AppScope("a")),
		"user filter":    id("file:///s", base, artifacts.UserScope("a", "u")),
	} {
		if prev, ok := seen[other]; ok {
			t.Errorf("%s gives the id of %s", name, prev)
		}
		seen[other] = name
	}
}

// TestNothingMatched: a scope filter with nothing under it and a name
// pattern that matches no name are not_found, not an empty plan.
func TestNothingMatched(t *testing.T) {
	ctx := context.Background()
	clock := t0
	ms, err := memstore.New(memstore.Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	st := artifacts.NewStore(ms)
	buildStore(t, st, &clock)
	for _, tc := range []struct {
		name   string
		filter artifacts.Scope
		glob   string
		want   string
	}{
		{"no such app", artifacts.AppScope("nope"), "", "nothing under app(\"nope\")"},
		{"no such session", artifacts.SessionScope("app-a", "u1", "s9"), "", "nothing under session"},
		{"no such name", artifacts.Scope{}, "reports/*", "no name in the scopes pruned matches \"reports/*\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ComputePlan(ctx, st, Options{Store: "mem://", Policy: Policy{KeepLast: 1, Name: tc.glob}, Filter: tc.filter, Now: t0})
			if !artifacts.IsNotFound(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want not_found saying %q", err, tc.want)
			}
		})
	}
	if _, err := ComputePlan(ctx, st, Options{Store: "mem://", Policy: Policy{KeepLast: 1, Name: "logs/*"}, Filter: artifacts.AppScope("app-b"), Now: t0}); err != nil {
		t.Fatalf("a pattern that matches: %v", err)
	}
}
