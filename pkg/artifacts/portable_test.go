package artifacts_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
)

// narrowDriver is a memory driver that declares narrower facts than its
// own (only app scopes, names of at most 16 bytes, records of at most 400
// bytes), hides every optional ability, and counts the calls that reach
// it: Store must refuse what the facts forbid before the driver runs.
type narrowDriver struct {
	d     artifacts.Driver
	calls int
}

func (n *narrowDriver) Capabilities() artifacts.Capabilities {
	c := n.d.Capabilities()
	c.Name = "narrow"
	c.ScopeKinds = []artifacts.Kind{artifacts.KindApp}
	c.MaxNameBytes = 16
	c.MaxRecordBytes = 400
	c.MaxPageLimit = 10
	return c
}

func (n *narrowDriver) Put(ctx context.Context, s artifacts.Scope, name string, r io.Reader, o artifacts.PutOptions) (artifacts.Record, error) {
	n.calls++
	return n.d.Put(ctx, s, name, r, o)
}

func (n *narrowDriver) Get(ctx context.Context, s artifacts.Scope, name string, v int64) (*artifacts.Reader, error) {
	n.calls++
	return n.d.Get(ctx, s, name, v)
}

func (n *narrowDriver) GetRange(ctx context.Context, s artifacts.Scope, name string, v, off, l int64) (*artifacts.Reader, error) {
	n.calls++
	return n.d.GetRange(ctx, s, name, v, off, l)
}

func (n *narrowDriver) Stat(ctx context.Context, s artifacts.Scope, name string, v int64) (artifacts.Record, error) {
	n.calls++
	return n.d.Stat(ctx, s, name, v)
}

func (n *narrowDriver) ListNames(ctx context.Context, s artifacts.Scope, o artifacts.ListOptions) (artifacts.NamePage, error) {
	n.calls++
	return n.d.ListNames(ctx, s, o)
}

func (n *narrowDriver) ListVersions(ctx context.Context, s artifacts.Scope, name string, o artifacts.ListOptions) (artifacts.VersionPage, error) {
	n.calls++
	return n.d.ListVersions(ctx, s, name, o)
}

func (n *narrowDriver) Delete(ctx context.Context, s artifacts.Scope, name string, sel artifacts.Selector) ([]artifacts.Record, error) {
	n.calls++
	return n.d.Delete(ctx, s, name, sel)
}

func newNarrow(t *testing.T) (*artifacts.Store, *narrowDriver) {
	t.Helper()
	m, err := memstore.New(memstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := &narrowDriver{d: m}
	return artifacts.NewStore(n), n
}

func TestStoreRefusesBeforeTheDriver(t *testing.T) {
	app := artifacts.AppScope("a")
	user := artifacts.UserScope("a", "u")
	bigMD := artifacts.Metadata{"k": strings.Repeat("x", 300)}
	cases := []struct {
		name string
		call func(ctx context.Context, st *artifacts.Store) error
		code artifacts.Code
	}{
		{"put into a kind the layout lacks", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Put(ctx, user, "n", strings.NewReader("x"), artifacts.PutOptions{})
			return err
		}, artifacts.CodeUnsupported},
		{"stat in a kind the layout lacks", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Stat(ctx, user, "n", artifacts.Latest)
			return err
		}, artifacts.CodeUnsupported},
		{"list names of a kind the layout lacks", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.ListNames(ctx, user, artifacts.ListOptions{})
			return err
		}, artifacts.CodeUnsupported},
		{"invalid scope", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Put(ctx, artifacts.AppScope(""), "n", strings.NewReader("x"), artifacts.PutOptions{})
			return err
		}, artifacts.CodeInvalidScope},
		{"name past the layout's length", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Put(ctx, app, strings.Repeat("n", 17), strings.NewReader("x"), artifacts.PutOptions{})
			return err
		}, artifacts.CodeInvalidName},
		{"name versions past the layout's length", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.ListVersions(ctx, app, strings.Repeat("n", 17), artifacts.ListOptions{})
			return err
		}, artifacts.CodeInvalidName},
		{"invalid name", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Get(ctx, app, "a//b", artifacts.Latest)
			return err
		}, artifacts.CodeInvalidName},
		{"invalid MIME type", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Put(ctx, app, "n", strings.NewReader("x"), artifacts.PutOptions{MIMEType: "plain"})
			return err
		}, artifacts.CodeInvalidMIMEType},
		{"invalid metadata", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Put(ctx, app, "n", strings.NewReader("x"), artifacts.PutOptions{Metadata: artifacts.Metadata{"k": struct{}{}}})
			return err
		}, artifacts.CodeInvalidMetadata},
		{"record past the layout's size", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Put(ctx, app, "n", strings.NewReader("x"), artifacts.PutOptions{Metadata: bigMD})
			return err
		}, artifacts.CodeInvalidMetadata},
		{"negative version", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Stat(ctx, app, "n", -2)
			return err
		}, artifacts.CodeInvalidArgument},
		{"negative offset", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.GetRange(ctx, app, "n", 1, -1, 2)
			return err
		}, artifacts.CodeInvalidArgument},
		{"length below -1", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.GetRange(ctx, app, "n", 1, 0, -2)
			return err
		}, artifacts.CodeInvalidArgument},
		{"page past the layout's limit", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.ListNames(ctx, app, artifacts.ListOptions{Limit: 11})
			return err
		}, artifacts.CodeInvalidArgument},
		{"word as version cursor", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.ListVersions(ctx, app, "n", artifacts.ListOptions{Cursor: "v2"})
			return err
		}, artifacts.CodeInvalidArgument},
		{"unknown selector", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Delete(ctx, app, "n", artifacts.Selector{Kind: "oldest"})
			return err
		}, artifacts.CodeInvalidArgument},
		{"negative version selector", func(ctx context.Context, st *artifacts.Store) error {
			_, err := st.Delete(ctx, app, "n", artifacts.Selector{Kind: artifacts.SelectVersion, Version: -1})
			return err
		}, artifacts.CodeInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, n := newNarrow(t)
			err := c.call(t.Context(), st)
			if got := artifacts.CodeOf(err); got != c.code {
				t.Fatalf("got %v (%s), want %s", err, got, c.code)
			}
			if n.calls != 0 {
				t.Errorf("the driver was called %d times for a refused call", n.calls)
			}
		})
	}
}

func TestStoreDefaultsAndPassesThrough(t *testing.T) {
	st, n := newNarrow(t)
	ctx := t.Context()
	app := artifacts.AppScope("a")
	rec, err := st.Put(ctx, app, strings.Repeat("n", 16), strings.NewReader("x"), artifacts.PutOptions{})
	if err != nil || rec.MIMEType != artifacts.DefaultMIMEType || rec.Metadata == nil {
		t.Fatalf("Put at the limits = %+v, %v; want the default MIME type and empty metadata", rec, err)
	}
	page, err := st.ListNames(ctx, app, artifacts.ListOptions{})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("ListNames with the default limit = %+v, %v", page, err)
	}
	if n.calls != 2 {
		t.Errorf("driver calls %d, want 2", n.calls)
	}
	c := st.Capabilities()
	if c.FirstVersion != 1 || c.MaxPageLimit != 10 || !slices.Equal(c.ScopeKinds, []artifacts.Kind{artifacts.KindApp}) || c.HasKind(artifacts.KindUser) {
		t.Errorf("Capabilities = %+v", c)
	}
	c.ScopeKinds[0] = artifacts.KindUser
	if st.Capabilities().ScopeKinds[0] != artifacts.KindApp {
		t.Error("Capabilities shares its ScopeKinds with the caller")
	}
}

func TestStoreUnsupportedAbilities(t *testing.T) {
	st, _ := newNarrow(t)
	ctx := t.Context()
	if st.CanWalk() {
		t.Error("CanWalk of a driver without Walk")
	}
	if err := st.Walk(ctx, func(artifacts.ScopeUsage) error { return nil }); artifacts.CodeOf(err) != artifacts.CodeUnsupported {
		t.Errorf("Walk = %v, want unsupported", err)
	}
	if _, err := st.ListScopes(ctx); artifacts.CodeOf(err) != artifacts.CodeUnsupported {
		t.Errorf("ListScopes = %v, want unsupported", err)
	}
	if _, err := st.ScopeSlots(ctx); artifacts.CodeOf(err) != artifacts.CodeUnsupported || !strings.Contains(err.Error(), "narrow store") {
		t.Errorf("ScopeSlots = %v, want unsupported naming the store", err)
	}
	if st.CanRepair() {
		t.Error("CanRepair of a driver without a repair planner")
	}
	if _, err := st.PlanRepair(ctx, artifacts.RepairOptions{}); artifacts.CodeOf(err) != artifacts.CodeUnsupported || !strings.Contains(err.Error(), "narrow store") {
		t.Errorf("PlanRepair = %v, want unsupported naming the store", err)
	}
	if _, err := st.Locate(ctx, artifacts.AppScope("a"), "p", 1); artifacts.CodeOf(err) != artifacts.CodeUnsupported {
		t.Errorf("Locate = %v, want unsupported", err)
	}
	if _, err := st.Locate(ctx, artifacts.AppScope("a"), "../p", 1); artifacts.CodeOf(err) != artifacts.CodeInvalidName {
		t.Errorf("Locate of an invalid name = %v, want invalid_name before the driver", err)
	}
	// OpenPayload falls back to Get for a driver that cannot open a
	// payload by its record.
	rec, err := st.Put(ctx, artifacts.AppScope("a"), "p", strings.NewReader("payload"), artifacts.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.OpenPayload(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, err := io.ReadAll(r); err != nil || string(b) != "payload" {
		t.Errorf("OpenPayload read %q, %v", b, err)
	}

	// The memory driver itself walks and lists scopes.
	m, _ := memstore.New(memstore.Options{})
	full := artifacts.NewStore(m)
	if !full.CanWalk() {
		t.Error("CanWalk of the memory driver")
	}
	if _, err := full.ListScopes(ctx); err != nil {
		t.Errorf("ListScopes of the memory driver: %v", err)
	}
}

func TestStoreAs(t *testing.T) {
	st, n := newNarrow(t)
	var got *narrowDriver
	if !st.As(&got) || got != n {
		t.Errorf("As(*narrowDriver) = %v", got)
	}
	var m *memstore.Store
	if st.As(&m) {
		t.Error("As(*memstore.Store) of another driver reported true")
	}
	var w artifacts.Walker
	if st.As(&w) {
		t.Error("As(Walker) of a driver without Walk reported true")
	}
	if st.As(nil) || st.As(got) {
		t.Error("As of a nil or non-pointer-to-driver target reported true")
	}
}

func TestSelectorResolve(t *testing.T) {
	pub := []int64{1, 3, 4}
	cases := []struct {
		name string
		sel  artifacts.Selector
		pub  []int64
		want []int64
		code artifacts.Code
	}{
		{"version", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 3}, pub, []int64{3}, ""},
		{"missing version", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 2}, pub, nil, artifacts.CodeNotFound},
		{"negative version", artifacts.Selector{Kind: artifacts.SelectVersion, Version: -1}, pub, nil, artifacts.CodeInvalidArgument},
		{"latest", artifacts.Selector{Kind: artifacts.SelectLatest}, pub, []int64{4}, ""},
		{"all", artifacts.Selector{Kind: artifacts.SelectAll}, pub, pub, ""},
		{"latest of none", artifacts.Selector{Kind: artifacts.SelectLatest}, nil, nil, artifacts.CodeNotFound},
		{"all of none", artifacts.Selector{Kind: artifacts.SelectAll}, nil, nil, artifacts.CodeNotFound},
		{"unknown kind", artifacts.Selector{Kind: "first"}, pub, nil, artifacts.CodeInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.sel.Resolve("delete", c.pub)
			if artifacts.CodeOf(err) != c.code || !slices.Equal(got, c.want) {
				t.Errorf("Resolve = %v, %v; want %v, code %q", got, err, c.want, c.code)
			}
		})
	}
}

func TestVersionCursorAndPageSize(t *testing.T) {
	for _, c := range []struct {
		cursor string
		want   int64
	}{{"", -1}, {"0", 0}, {"7", 7}, {"x", -1}, {"-3", -1}} {
		if got := artifacts.VersionCursor(artifacts.ListOptions{Cursor: c.cursor}); got != c.want {
			t.Errorf("VersionCursor(%q) = %d, want %d", c.cursor, got, c.want)
		}
	}
	if got := (artifacts.ListOptions{}).PageSize(); got != artifacts.DefaultPageLimit {
		t.Errorf("PageSize of 0 = %d", got)
	}
	if got := (artifacts.ListOptions{Limit: 7}).PageSize(); got != 7 {
		t.Errorf("PageSize of 7 = %d", got)
	}
}
