package gcsstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstore/agentstore/internal/stall"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Walk lists every scope prefix below the store's prefix, every name
// prefix of each scope, and every object of each name, and reads every
// record, never a payload. NameSlots is the number of name prefixes and
// Reservations the number of .reserve objects; records that do not decode
// or do not belong where they are found, and records without a .data, are
// reported as Problems whose Path is the object name.
func (s *Store) Walk(ctx context.Context, fn func(artifacts.ScopeUsage) error) error {
	const op = "walk"
	cctx, cancel := s.walkCtx(ctx)
	defer cancel()
	if err := artifacts.CheckContext(cctx, op); err != nil {
		return err
	}
	scopes, err := s.listPrefixes(cctx, s.scopesPrefix(), 0)
	if err != nil {
		return classify(cctx, op, err, "listing scopes")
	}
	for _, sp := range scopes {
		if err := artifacts.CheckContext(cctx, op); err != nil {
			return err
		}
		u, err := s.walkScope(cctx, lastSegment(sp))
		if err != nil {
			return classify(cctx, op, err, "scope %s", lastSegment(sp))
		}
		resume := stall.Pause(cctx) // the caller's time is not the walk's
		err = fn(u)
		resume()
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) walkScope(ctx context.Context, hash string) (artifacts.ScopeUsage, error) {
	const op = "walk"
	u := artifacts.ScopeUsage{Hash: hash}
	prefixes, err := s.listPrefixes(ctx, s.namesPrefix(hash), 0)
	if err != nil {
		return u, err
	}
	u.NameSlots = len(prefixes)
	u.Names = make([]artifacts.NameUsage, len(prefixes))
	names := make([]*artifacts.NameUsage, len(prefixes))
	for i, p := range prefixes {
		u.Names[i].Hash = lastSegment(p)
		names[i] = &u.Names[i]
	}
	errs := make([]error, len(names))
	idx := make([]int, len(names))
	for i := range idx {
		idx[i] = i
	}
	err = parallel(ctx, s.opts.Workers, idx, func(i int) {
		n := names[i]
		prefix := s.namePrefix(hash, n.Hash)
		sc, err := s.scanName(ctx, prefix)
		if err != nil {
			errs[i] = err
			return
		}
		n.Reservations = sc.reservations
		for _, v := range sc.published {
			path := prefix + VersionObject(v, SuffixMeta)
			rec, err := s.readVersion(ctx, op, sc, v)
			if err == nil {
				switch {
				case rec.Version != v:
					err = fmt.Errorf("record says version %d", rec.Version)
				case artifacts.NameHash(rec.Name) != n.Hash:
					err = fmt.Errorf("record names %q, which does not hash to this prefix", rec.Name)
				case rec.Scope.Hash() != hash:
					err = fmt.Errorf("record's scope %s does not hash to this prefix", rec.Scope)
				}
			}
			if err != nil {
				if artifacts.IsNotFound(err) {
					continue // deleted since the listing
				}
				if c := artifacts.CodeOf(err); c != artifacts.CodeCorrupt && c != artifacts.CodeUnknown && c != "" && c != artifacts.CodeIO {
					errs[i] = err
					return
				}
				n.Problems = append(n.Problems, artifacts.Problem{Version: v, Path: path, Reason: err.Error()})
				continue
			}
			if _, ok := sc.data[v]; !ok {
				n.Problems = append(n.Problems, artifacts.Problem{Version: v, Path: prefix + VersionObject(v, SuffixData), Reason: "payload is missing"})
			}
			n.Name = rec.Name
			n.Records = append(n.Records, rec)
		}
	})
	if err != nil {
		return u, err
	}
	for _, e := range errs {
		if e != nil {
			return u, e
		}
	}
	for i := range u.Names {
		if n := &u.Names[i]; len(n.Records) > 0 && !u.Known {
			u.Scope, u.Known = n.Records[0].Scope, true
		}
	}
	slices.SortFunc(u.Names, func(a, b artifacts.NameUsage) int { return strings.Compare(a.Name, b.Name) })
	return u, nil
}

// ListScopes returns every scope below the store's prefix that has at
// least one published version whose record decodes. For each scope prefix
// it reads the latest record of one name after another until one decodes.
func (s *Store) ListScopes(ctx context.Context) ([]artifacts.Scope, error) {
	const op = "list scopes"
	cctx, cancel := s.walkCtx(ctx)
	defer cancel()
	if err := artifacts.CheckContext(cctx, op); err != nil {
		return nil, err
	}
	prefixes, err := s.listPrefixes(cctx, s.scopesPrefix(), 0)
	if err != nil {
		return nil, classify(cctx, op, err, "listing scopes")
	}
	type result struct {
		scope artifacts.Scope
		ok    bool
		err   error
	}
	results := make([]result, len(prefixes))
	idx := make([]int, len(prefixes))
	for i := range idx {
		idx[i] = i
	}
	err = parallel(cctx, s.opts.Workers, idx, func(i int) {
		hash := lastSegment(prefixes[i])
		names, err := s.listPrefixes(cctx, s.namesPrefix(hash), 0)
		if err != nil {
			results[i].err = err
			return
		}
		for _, np := range names {
			sc, err := s.scanName(cctx, np)
			if err != nil {
				results[i].err = err
				return
			}
			for j := len(sc.published) - 1; j >= 0; j-- {
				v := sc.published[j]
				rec, err := s.readVersion(cctx, op, sc, v)
				if err == nil && rec.Scope.Hash() == hash && rec.Version == v && artifacts.NameHash(rec.Name) == lastSegment(np) {
					results[i].scope, results[i].ok = rec.Scope, true
					return
				}
				if c := artifacts.CodeOf(err); err != nil && c != artifacts.CodeCorrupt && c != artifacts.CodeNotFound {
					results[i].err = err
					return
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	var out []artifacts.Scope
	for _, r := range results {
		if r.err != nil {
			return nil, classify(cctx, op, r.err, "")
		}
		if r.ok {
			out = append(out, r.scope)
		}
	}
	return out, nil
}
