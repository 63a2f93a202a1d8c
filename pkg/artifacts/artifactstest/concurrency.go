package artifactstest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// payloadOf is the payload writer w puts as its i-th version.
func payloadOf(w, i int) []byte {
	return append([]byte(fmt.Sprintf("writer %d put %d|", w, i)), data(64+w*7+i, uint64(1000*w+i))...)
}

// isPayload reports whether b is payloadOf(w, i) for the w and i its
// prefix names.
func isPayload(b []byte) bool {
	var w, i int
	if _, err := fmt.Sscanf(string(b), "writer %d put %d|", &w, &i); err != nil {
		return false
	}
	return bytes.Equal(b, payloadOf(w, i))
}

func testConcurrency(t *testing.T, s *suite) {
	writers, each := 8, 50
	if s.h.SkipSlow {
		each = 10
	}
	t.Run(fmt.Sprintf("%d writers x %d puts to one name", writers, each), func(t *testing.T) {
		st := s.newStore(t)
		scope := s.own(artifacts.SessionScope("concurrent", "u", "one-name"))
		first := s.v(1)
		byVersion := make([][]byte, writers*each)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					b := payloadOf(w, i)
					rec, err := st.Put(t.Context(), scope, "hot", reader(b), artifacts.PutOptions{Metadata: artifacts.Metadata{"w": fmt.Sprint(w), "i": fmt.Sprint(i)}})
					if err != nil {
						t.Errorf("writer %d put %d: %v", w, i, err)
						return
					}
					mu.Lock()
					switch {
					case rec.Version < first || rec.Version >= first+int64(writers*each):
						t.Errorf("writer %d put %d got version %d, outside %d..%d", w, i, rec.Version, first, first+int64(writers*each)-1)
					case byVersion[rec.Version-first] != nil:
						t.Errorf("version %d given to two puts", rec.Version)
					default:
						byVersion[rec.Version-first] = b
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		for i, b := range byVersion {
			mustGet(t, st, scope, "hot", first+int64(i), b)
		}
		want := s.vs(ordinals(writers * each)...)
		if got := versionsOf(t, st, scope, "hot"); !slices.Equal(got, want) {
			t.Errorf("ListVersions after concurrent puts = %d versions, want %d..%d", len(got), first, want[len(want)-1])
		}
		if w, ok := st, st.CanWalk(); ok {
			err := w.Walk(t.Context(), func(u artifacts.ScopeUsage) error {
				if u.NameSlots > 1 {
					// Not a failure: the layout's slot protocol lets racing
					// first puts of one name each claim a slot.
					t.Logf("note: racing first puts of one name used %d name slots", u.NameSlots)
				}
				for _, n := range u.Names {
					if !s.caps.NoCeilings && n.Reservations < writers*each {
						t.Errorf("Walk reports %d reservations, want at least %d", n.Reservations, writers*each)
					}
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}
	})
	t.Run("many new names in one new scope", func(t *testing.T) {
		st := s.newStore(t)
		scope := s.scopeOf(artifacts.KindUser, "concurrent", "many-names", "")
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range 10 {
					name := s.n(scope, fmt.Sprintf("w%d/n%d", w, i))
					rec, err := st.Put(t.Context(), scope, name, reader(payloadOf(w, i)), artifacts.PutOptions{})
					if err != nil {
						t.Errorf("Put(%q): %v", name, err)
					} else if rec.Version != s.v(1) {
						t.Errorf("Put(%q) got version %d, want %d", name, rec.Version, s.v(1))
					}
				}
			})
		}
		wg.Wait()
		got := nameCounts(t, st, scope)
		if len(got) != writers*10 {
			t.Errorf("ListNames reports %d names, want %d", len(got), writers*10)
		}
		for w := range writers {
			for i := range 10 {
				mustGet(t, st, scope, s.n(scope, fmt.Sprintf("w%d/n%d", w, i)), s.v(1), payloadOf(w, i))
			}
		}
	})
	t.Run("many new scopes", func(t *testing.T) {
		st := s.newStore(t)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range 4 {
					scope := s.own(artifacts.SessionScope("concurrent", fmt.Sprintf("u%d", i), "s")) // shared by writers
					if _, err := st.Put(t.Context(), scope, fmt.Sprintf("n%d", w), reader(payloadOf(w, i)), artifacts.PutOptions{}); err != nil {
						t.Errorf("Put: %v", err)
					}
				}
			})
		}
		wg.Wait()
		want := map[artifacts.Scope]bool{}
		for i := range 4 {
			scope := s.own(artifacts.SessionScope("concurrent", fmt.Sprintf("u%d", i), "s"))
			want[scope] = true
			if got := nameCounts(t, st, scope); len(got) != writers {
				t.Errorf("scope %s lists %v, want %d names", scope, got, writers)
			}
		}
		if got := scopeSet(t, st); got != nil && !equalSets(got, want) {
			t.Errorf("ListScopes = %v, want %v", got, want)
		}
	})
	t.Run("readers during writes", func(t *testing.T) {
		st := s.newStore(t)
		scope := s.scopeOf(artifacts.KindApp, "concurrent-rw", "", "")
		var done atomic.Bool
		var reads atomic.Int64
		var wg, readers sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := range 10 {
					if _, err := st.Put(t.Context(), scope, "rw", reader(payloadOf(w, i)), artifacts.PutOptions{}); err != nil {
						t.Errorf("Put: %v", err)
					}
				}
			})
		}
		for range 4 {
			readers.Go(func() {
				for !done.Load() {
					r, err := st.Get(t.Context(), scope, "rw", artifacts.Latest)
					if artifacts.IsNotFound(err) {
						continue
					}
					if err != nil {
						t.Errorf("Get(latest) during writes: %v", err)
						return
					}
					b, err := readAll(r)
					if err != nil {
						t.Errorf("reading the latest during writes: %v", err)
						return
					}
					if !isPayload(b) {
						t.Errorf("read v%d whose bytes are no payload a writer put (%d bytes %s)", r.Record().Version, len(b), short(b))
						return
					}
					if d := r.Record().Digest; s.caps.StoresDigest && d != digest(b) {
						t.Errorf("read v%d whose bytes do not match its record's digest", r.Record().Version)
						return
					}
					reads.Add(1)
				}
			})
		}
		wg.Wait()
		done.Store(true)
		readers.Wait()
		if got := versionsOf(t, st, scope, "rw"); len(got) != 40 {
			t.Errorf("%d versions after the writes, want 40", len(got))
		}
	})
	t.Run("concurrent deletes of distinct versions", func(t *testing.T) {
		st := s.newStore(t)
		scope := s.scopeOf(artifacts.KindApp, "concurrent-delete", "", "")
		putN(t, st, scope, "d", 40, 9)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 5 {
					v := s.v(w*5 + i + 1)
					recs, err := st.Delete(t.Context(), scope, "d", artifacts.Selector{Kind: artifacts.SelectVersion, Version: v})
					if err != nil || len(recs) != 1 || recs[0].Version != v {
						t.Errorf("Delete(v%d) = %v, %v", v, recs, err)
					}
				}
			})
		}
		wg.Wait()
		if got := versionsOf(t, st, scope, "d"); len(got) != 0 {
			t.Errorf("versions left after deleting all = %v", got)
		}
		next := s.v(41)
		if s.caps.ReusesVersions {
			next = s.v(1) // numbers start again once none is left
		}
		if rec := put(t, st, scope, "d", []byte("next"), artifacts.PutOptions{}); rec.Version != next {
			t.Errorf("Put after deleting all got version %d, want %d (ReusesVersions %t)", rec.Version, next, s.caps.ReusesVersions)
		}
	})
}

func testListScopesAndWalk(t *testing.T, s *suite) {
	st := s.newStore(t)
	lister, isLister := st, canListScopes(st)
	walker, isWalker := st, st.CanWalk()
	if !isLister && !isWalker {
		t.Skipf("%T implements neither artifacts.ScopeLister nor artifacts.Walker", st)
	}
	ctx := t.Context()
	if isLister {
		if got, err := lister.ListScopes(ctx); err != nil || len(got) != 0 {
			t.Errorf("ListScopes of an empty store = %v, %v", got, err)
		}
	}
	if isWalker {
		calls := 0
		if err := walker.Walk(ctx, func(artifacts.ScopeUsage) error { calls++; return nil }); err != nil || calls != 0 {
			t.Errorf("Walk of an empty store: %d calls, %v", calls, err)
		}
	}
	ua := s.n(s.user, "a")
	recs := map[artifacts.Scope]map[string][]artifacts.Record{
		s.app:  {"a": putN(t, st, s.app, "a", 3, 1), "b/c": putN(t, st, s.app, "b/c", 1, 2)},
		s.user: {ua: putN(t, st, s.user, ua, 2, 3)},
	}
	// A scope whose only name is deleted is not listed.
	putN(t, st, s.session, "gone", 2, 4)
	if _, err := st.Delete(ctx, s.session, "gone", artifacts.Selector{Kind: artifacts.SelectAll}); err != nil {
		t.Fatal(err)
	}
	// Deleted versions leave the records but not the reservations.
	if _, err := st.Delete(ctx, s.app, "a", artifacts.Selector{Kind: artifacts.SelectLatest}); err != nil {
		t.Fatal(err)
	}
	recs[s.app]["a"] = recs[s.app]["a"][:2]
	reserved := map[string]int{"a": 3, "b/c": 1}

	if isLister {
		got := scopeSet(t, st)
		want := map[artifacts.Scope]bool{s.app: true, s.user: true}
		if !equalSets(got, want) {
			t.Errorf("ListScopes = %v, want %v", got, want)
		}
	}
	if !isWalker {
		return
	}
	seen := map[artifacts.Scope]bool{}
	err := walker.Walk(ctx, func(u artifacts.ScopeUsage) error {
		byName := map[string]artifacts.NameUsage{}
		for _, n := range u.Names {
			if len(n.Problems) > 0 {
				t.Errorf("Walk reports problems in %s: %+v", u.Scope, n.Problems)
			}
			if len(n.Records) > 0 {
				byName[n.Name] = n
			}
		}
		if len(byName) == 0 {
			if u.Known && u.Scope != s.session {
				t.Errorf("Walk reports scope %s with no records", u.Scope)
			}
			return nil
		}
		if !u.Known {
			t.Errorf("Walk reports scope %s with records but Known false", u.Hash)
			return nil
		}
		if seen[u.Scope] {
			t.Errorf("Walk reports scope %s twice", u.Scope)
		}
		seen[u.Scope] = true
		if u.Hash != u.Scope.Hash() {
			t.Errorf("Walk reports scope %s with hash %s, want %s", u.Scope, u.Hash, u.Scope.Hash())
		}
		want := recs[u.Scope]
		if u.NameSlots < len(want) {
			t.Errorf("Walk reports %d name slots in %s, want at least %d", u.NameSlots, u.Scope, len(want))
		}
		if got := sortedKeys(byName); !slices.Equal(got, sortedKeys(want)) {
			t.Errorf("Walk reports names %q in %s, want %q", got, u.Scope, sortedKeys(want))
		}
		keys := map[string]bool{}
		for name, n := range byName {
			switch {
			case s.caps.PlainNames:
				// The name's own key or path: one per name.
				if n.Hash == "" || keys[n.Hash] {
					t.Errorf("Walk reports name %q with key %q: empty, or another name's", name, n.Hash)
				}
				keys[n.Hash] = true
			case n.Hash != artifacts.NameHash(name):
				t.Errorf("Walk reports name %q with hash %s, want %s", name, n.Hash, artifacts.NameHash(name))
			}
			if r := reserved[name]; u.Scope == s.app && !s.caps.NoCeilings && n.Reservations < r {
				t.Errorf("Walk reports %d reservations for %q, want at least %d", n.Reservations, name, r)
			}
			if len(n.Records) != len(want[name]) {
				t.Errorf("Walk reports %d records for %s %q, want %d", len(n.Records), u.Scope, name, len(want[name]))
				continue
			}
			for i := range n.Records {
				sameRecord(t, n.Records[i], want[name][i], "Walk record %d of %s %q", i, u.Scope, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	if len(seen) != len(recs) {
		t.Errorf("Walk reported %d scopes with records, want %d", len(seen), len(recs))
	}
	stop := errors.New("stop here")
	calls := 0
	err = walker.Walk(ctx, func(artifacts.ScopeUsage) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Walk whose callback fails: %d calls, error %v; want 1 call and the callback's error", calls, err)
	}
}
