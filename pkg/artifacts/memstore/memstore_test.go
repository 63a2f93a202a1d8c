package memstore_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/artifactstest"
	"github.com/agentstore/agentstore/pkg/artifacts/memstore"
)

func newStore(t *testing.T, opts memstore.Options) *memstore.Store {
	t.Helper()
	s, err := memstore.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	artifactstest.Run(t, artifactstest.Harness{
		New: func(t *testing.T) artifacts.Driver { return newStore(t, memstore.Options{}) },
		NewWithLimit: func(t *testing.T, n int64) artifacts.Driver {
			return newStore(t, memstore.Options{MaxArtifactBytes: n})
		},
		// The corruption hooks come from memstore.Store's
		// artifactstest.Corrupter methods.
		SkipSlow: testing.Short(),
	})
}

var _ artifactstest.Corrupter = (*memstore.Store)(nil)

var (
	scopeA = artifacts.AppScope("quota-a")
	scopeB = artifacts.AppScope("quota-b")
)

func put(t *testing.T, s *memstore.Store, scope artifacts.Scope, name string, n int) (artifacts.Record, error) {
	t.Helper()
	return s.Put(t.Context(), scope, name, bytes.NewReader(bytes.Repeat([]byte{'x'}, n)), artifacts.PutOptions{})
}

func mustPut(t *testing.T, s *memstore.Store, scope artifacts.Scope, name string, n int) artifacts.Record {
	t.Helper()
	rec, err := put(t, s, scope, name, n)
	if err != nil {
		t.Fatalf("Put(%s, %q, %d bytes): %v", scope, name, n, err)
	}
	return rec
}

// wantQuota checks a quota error and its Remaining.
func wantQuota(t *testing.T, err error, code artifacts.Code, remaining int64) {
	t.Helper()
	if got := artifacts.CodeOf(err); got != code {
		t.Fatalf("got %v (code %q), want code %q", err, got, code)
	}
	if code != artifacts.CodeQuotaExceeded {
		return
	}
	e := err.(*artifacts.Error)
	if e.Remaining != remaining {
		t.Errorf("Remaining = %d, want %d (%v)", e.Remaining, remaining, err)
	}
}

func names(t *testing.T, s *memstore.Store, scope artifacts.Scope) int {
	t.Helper()
	p, err := s.ListNames(t.Context(), scope, artifacts.ListOptions{})
	if artifacts.IsNotFound(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(p.Items)
}

func TestScopeBytes(t *testing.T) {
	s := newStore(t, memstore.Options{MaxScopeBytes: 100})
	mustPut(t, s, scopeA, "a", 60)
	_, err := put(t, s, scopeA, "b", 41)
	wantQuota(t, err, artifacts.CodeQuotaExceeded, 40)
	if n := names(t, s, scopeA); n != 1 {
		t.Errorf("%d names after the refused put, want 1", n)
	}
	mustPut(t, s, scopeA, "b", 40) // exactly fills the scope
	_, err = put(t, s, scopeA, "c", 1)
	wantQuota(t, err, artifacts.CodeQuotaExceeded, 0)
	_, err = put(t, s, scopeA, "c", 0) // an empty payload still fits
	if err != nil {
		t.Errorf("empty Put into a full scope: %v", err)
	}
	mustPut(t, s, scopeB, "a", 100) // another scope has its own quota
	if sb, _, tb, tv := s.Usage(scopeA); sb != 100 || tb != 200 || tv != 4 {
		t.Errorf("Usage = scope %d bytes, total %d bytes, %d versions; want 100, 200, 4", sb, tb, tv)
	}
}

func TestTotalBytes(t *testing.T) {
	s := newStore(t, memstore.Options{MaxTotalBytes: 100, MaxScopeBytes: 80})
	mustPut(t, s, scopeA, "a", 70)
	_, err := put(t, s, scopeA, "b", 11) // scope quota first
	wantQuota(t, err, artifacts.CodeQuotaExceeded, 10)
	_, err = put(t, s, scopeB, "a", 31) // total quota
	wantQuota(t, err, artifacts.CodeQuotaExceeded, 30)
	mustPut(t, s, scopeB, "a", 30)
	if n := names(t, s, scopeB); n != 1 {
		t.Errorf("%d names in scope B, want 1", n)
	}
}

func TestVersionQuotas(t *testing.T) {
	s := newStore(t, memstore.Options{MaxScopeVersions: 3, MaxTotalVersions: 4})
	for range 3 {
		mustPut(t, s, scopeA, "a", 1)
	}
	_, err := put(t, s, scopeA, "b", 1)
	wantQuota(t, err, artifacts.CodeQuotaExceeded, 0)
	mustPut(t, s, scopeB, "a", 1)
	_, err = put(t, s, scopeB, "b", 1)
	wantQuota(t, err, artifacts.CodeQuotaExceeded, 0)
	// Deleting frees a version of the scope and of the total.
	if _, err := s.Delete(t.Context(), scopeA, "a", artifacts.Selector{Kind: artifacts.SelectVersion, Version: 2}); err != nil {
		t.Fatal(err)
	}
	if rec := mustPut(t, s, scopeA, "a", 1); rec.Version != 4 {
		t.Errorf("Put after a delete got version %d, want 4", rec.Version)
	}
	_, err = put(t, s, scopeA, "a", 1)
	wantQuota(t, err, artifacts.CodeQuotaExceeded, 0)
}

func TestDeleteFreesBytesNotVersions(t *testing.T) {
	s := newStore(t, memstore.Options{MaxScopeBytes: 100})
	mustPut(t, s, scopeA, "a", 50)
	mustPut(t, s, scopeA, "a", 50)
	_, err := put(t, s, scopeA, "a", 1)
	wantQuota(t, err, artifacts.CodeQuotaExceeded, 0)
	recs, err := s.Delete(t.Context(), scopeA, "a", artifacts.Selector{Kind: artifacts.SelectAll})
	if err != nil || len(recs) != 2 {
		t.Fatalf("Delete(all) = %v, %v", recs, err)
	}
	if sb, sv, tb, tv := s.Usage(scopeA); sb != 0 || sv != 0 || tb != 0 || tv != 0 {
		t.Errorf("Usage after deleting all = %d, %d, %d, %d; want zeros", sb, sv, tb, tv)
	}
	rec := mustPut(t, s, scopeA, "a", 100)
	if rec.Version != 3 {
		t.Errorf("Put after deleting all got version %d, want 3 (versions are never reused)", rec.Version)
	}
	// A refused put reserved nothing.
	_, err = put(t, s, scopeA, "a", 1)
	wantQuota(t, err, artifacts.CodeQuotaExceeded, 0)
	if _, err := s.Delete(t.Context(), scopeA, "a", artifacts.Selector{Kind: artifacts.SelectLatest}); err != nil {
		t.Fatal(err)
	}
	if rec := mustPut(t, s, scopeA, "a", 1); rec.Version != 4 {
		t.Errorf("Put after a refused put got version %d, want 4", rec.Version)
	}
}

func TestCapacities(t *testing.T) {
	// 7 scan entries: 3 scopes, 3 names per scope, 2 versions per name.
	s := newStore(t, memstore.Options{MaxScanEntries: 7})
	c := s.Capabilities()
	if c.ScopeCapacity() != 3 || c.NameCapacity() != 3 || c.VersionCapacity() != 2 {
		t.Fatalf("capacities %d, %d, %d", c.ScopeCapacity(), c.NameCapacity(), c.VersionCapacity())
	}
	mustPut(t, s, scopeA, "a", 1)
	mustPut(t, s, scopeA, "a", 1)
	_, err := put(t, s, scopeA, "a", 1)
	wantQuota(t, err, artifacts.CodeVersionCapacity, -1)
	// Deleting does not give reservations back.
	if _, err := s.Delete(t.Context(), scopeA, "a", artifacts.Selector{Kind: artifacts.SelectAll}); err != nil {
		t.Fatal(err)
	}
	_, err = put(t, s, scopeA, "a", 1)
	wantQuota(t, err, artifacts.CodeVersionCapacity, -1)
	mustPut(t, s, scopeA, "b", 1)
	mustPut(t, s, scopeA, "c", 1)
	_, err = put(t, s, scopeA, "d", 1)
	wantQuota(t, err, artifacts.CodeNameCapacity, -1)
	mustPut(t, s, scopeB, "a", 1)
	mustPut(t, s, artifacts.AppScope("third"), "a", 1)
	_, err = put(t, s, artifacts.AppScope("fourth"), "a", 1)
	wantQuota(t, err, artifacts.CodeScopeCapacity, -1)
}

func TestOptions(t *testing.T) {
	for _, o := range []memstore.Options{
		{MaxArtifactBytes: -1}, {MaxScopeBytes: -1}, {MaxTotalBytes: -1},
		{MaxScopeVersions: -1}, {MaxTotalVersions: -1}, {MaxScanEntries: 2}, {MaxPageLimit: -1},
	} {
		if _, err := memstore.New(o); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
			t.Errorf("New(%+v) = %v, want invalid_argument", o, err)
		}
	}
	now := time.UnixMilli(1_700_000_000_123)
	s := newStore(t, memstore.Options{Now: func() time.Time { return now }, MaxPageLimit: 5})
	c := s.Capabilities()
	if c.Name != "memory" || c.Durable || !c.VerifiedRanges || c.MaxArtifactBytes != artifacts.DefaultMaxArtifact ||
		c.MaxScanEntries != artifacts.DefaultMaxScanEntries || c.MaxPageLimit != 5 {
		t.Errorf("Capabilities = %+v", c)
	}
	rec := mustPut(t, s, scopeA, "a", 1)
	if rec.CreatedAt != now.UnixMilli() {
		t.Errorf("created_at %d, want %d", rec.CreatedAt, now.UnixMilli())
	}
	if _, err := artifacts.NewStore(s).ListNames(t.Context(), scopeA, artifacts.ListOptions{Limit: 6}); artifacts.CodeOf(err) != artifacts.CodeInvalidArgument {
		t.Errorf("ListNames past MaxPageLimit: %v", err)
	}
}

// Put stops reading at MaxArtifactBytes+1.
func TestPutStopsReading(t *testing.T) {
	s := newStore(t, memstore.Options{MaxArtifactBytes: 10})
	r := strings.NewReader(strings.Repeat("y", 1000))
	_, err := s.Put(context.Background(), scopeA, "a", r, artifacts.PutOptions{})
	if artifacts.CodeOf(err) != artifacts.CodeTooLarge {
		t.Fatalf("Put: %v", err)
	}
	if read := 1000 - r.Len(); read != 11 {
		t.Errorf("Put read %d bytes with a limit of 10, want 11", read)
	}
}
