package adkgcs

import (
	"context"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/agentstore/agentstore/internal/gcserr"
	"github.com/agentstore/agentstore/internal/stall"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Walk lists every object below the root in one flat listing (names,
// sizes, generations, content types, metadata and checksums; never a
// payload) and calls fn once per scope, as the listing reaches the end of
// the scope's objects: Cloud Storage lists by name, so a scope's objects
// come together. Objects that are not versions of the layout are never
// guessed at: they are reported last, in one ScopeUsage that is not Known,
// one NameUsage per object whose Problem (code foreign) names the object.
// A user-scope name stored in both forms (with and without "user:") keeps
// the form ADK Go and Python read; the other form's objects are reported
// the same way.
func (s *Store) Walk(ctx context.Context, fn func(artifacts.ScopeUsage) error) error {
	cctx, cancel := s.walkCtx(ctx)
	defer cancel()
	var foreign []foreignObject
	err := s.scan(cctx, "walk", nil, func(scope artifacts.Scope, names []nameVersions) error {
		u := artifacts.ScopeUsage{Scope: scope, Known: true, Hash: scope.Hash()}
		for _, nv := range names {
			if len(nv.objects) == 0 {
				continue
			}
			n := artifacts.NameUsage{Name: nv.name, Hash: nv.name}
			for _, o := range nv.objects {
				n.Records = append(n.Records, o.record())
			}
			u.Names = append(u.Names, n)
		}
		u.NameSlots = len(u.Names)
		defer stall.Pause(cctx)()
		return fn(u)
	}, func(f foreignObject) { foreign = append(foreign, f) })
	if err != nil || len(foreign) == 0 {
		return err
	}
	u := artifacts.ScopeUsage{Hash: s.root}
	for _, f := range foreign {
		u.Names = append(u.Names, artifacts.NameUsage{Hash: f.name, Problems: []artifacts.Problem{{Path: f.name, Reason: f.reason, Code: artifacts.CodeForeign}}})
	}
	return fn(u)
}

// scan lists every object below the root in one flat listing (names,
// sizes, generations, content types, metadata and checksums; never a
// payload) under ctx as it is (no deadline of its own; each object listed
// is progress for a stall watch in ctx, see walkCtx), calling listed,
// when set, once per object listed (an error it returns stops the scan).
// It calls scope once per scope that holds versions, as the listing
// reaches the end of the scope's objects (Cloud Storage lists by name, so
// a scope's objects come together), with the scope's objects grouped by
// name. It calls foreign once per object that is not a version of the
// layout, and once per object shadowed by the other user-scope form of its
// name (see group), after the scopes, in the order it met them (a
// scope's shadowed objects when the listing leaves the scope, by name and
// version). The store's lock
// object is skipped, neither listed nor foreign.
func (s *Store) scan(ctx context.Context, op string, listed func() error, scope func(artifacts.Scope, []nameVersions) error, foreign func(foreignObject)) error {
	var (
		cur      string // object prefix of the scope being gathered
		curScope artifacts.Scope
		objs     []object
		others   []foreignObject
	)
	flush := func() error {
		if len(objs) == 0 {
			return nil
		}
		names := group(objs)
		for _, nv := range names {
			for _, o := range nv.shadowed {
				others = append(others, foreignObject{name: o.name, reason: shadowReason(o)})
			}
		}
		objs = nil
		return scope(curScope, names)
	}
	q := &storage.Query{Prefix: s.root}
	if err := q.SetAttrSelection(listAttrs); err != nil {
		return artifacts.Errorf(artifacts.CodeInvalidArgument, op, err, "listing attributes")
	}
	it := s.bkt().Objects(ctx, q)
	it.PageInfo().MaxSize = 1000
	for {
		a, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return gcserr.Classify(ctx, op, err, "listing gs://%s/%s", s.bucket, s.root)
		}
		stall.Touch(ctx)
		if err := ctx.Err(); err != nil { // ended while objects of a page were still buffered
			return gcserr.Classify(ctx, op, err, "listing gs://%s/%s", s.bucket, s.root)
		}
		rel := strings.TrimPrefix(a.Name, s.root)
		if isLockObject(rel) {
			continue
		}
		if listed != nil {
			if err := listed(); err != nil {
				return err
			}
		}
		p, perr := parseObject(rel)
		if perr != nil {
			others = append(others, foreignObject{name: a.Name, reason: perr.Error()})
			continue
		}
		if sp := s.root + scopePrefix(p.scope); sp != cur {
			if err := flush(); err != nil {
				return err
			}
			cur, curScope = sp, p.scope
		}
		objs = append(objs, object{p: p, name: a.Name, attrs: a})
	}
	if err := flush(); err != nil {
		return err
	}
	for _, f := range others {
		foreign(f)
	}
	return nil
}

// shadowReason explains why an object of the stripped user-scope form is
// not read.
func shadowReason(o object) string {
	return "holds " + strconv.Quote(o.p.name) + " v" + strconv.FormatInt(o.p.version, 10) +
		" in the form ADK JS writes (without \"user:\"), and the same name exists in the form ADK Go and Python write: only that form is read"
}

// ListScopes returns every scope holding at least one version.
func (s *Store) ListScopes(ctx context.Context) ([]artifacts.Scope, error) {
	var out []artifacts.Scope
	err := s.Walk(ctx, func(u artifacts.ScopeUsage) error {
		if u.Known {
			out = append(out, u.Scope)
		}
		return nil
	})
	return out, err
}
