package adkgcs

import (
	"context"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/agentstore/agentstore/internal/gcserr"
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
	const op = "walk"
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	var (
		cur     string // object prefix of the scope being gathered
		scope   artifacts.Scope
		objs    []object
		foreign []foreignObject
	)
	flush := func() error {
		if len(objs) == 0 {
			return nil
		}
		u := artifacts.ScopeUsage{Scope: scope, Known: true, Hash: scope.Hash()}
		for _, nv := range group(objs) {
			n := artifacts.NameUsage{Name: nv.name, Hash: nv.name}
			for _, o := range nv.objects {
				n.Records = append(n.Records, o.record())
			}
			for _, o := range nv.shadowed {
				foreign = append(foreign, foreignObject{name: o.name, reason: shadowReason(o)})
			}
			if len(n.Records) > 0 {
				u.Names = append(u.Names, n)
			}
		}
		u.NameSlots = len(u.Names)
		objs = nil
		return fn(u)
	}
	q := &storage.Query{Prefix: s.root}
	if err := q.SetAttrSelection(listAttrs); err != nil {
		return artifacts.Errorf(artifacts.CodeInvalidArgument, op, err, "listing attributes")
	}
	it := s.bkt().Objects(cctx, q)
	it.PageInfo().MaxSize = 1000
	for {
		a, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return gcserr.Classify(cctx, op, err, "listing gs://%s/%s", s.bucket, s.root)
		}
		rel := strings.TrimPrefix(a.Name, s.root)
		if isLockObject(rel) {
			continue
		}
		p, perr := parseObject(rel)
		if perr != nil {
			foreign = append(foreign, foreignObject{name: a.Name, reason: perr.Error()})
			continue
		}
		if sp := s.root + scopePrefix(p.scope); sp != cur {
			if err := flush(); err != nil {
				return err
			}
			cur, scope = sp, p.scope
		}
		objs = append(objs, object{p: p, name: a.Name, attrs: a})
	}
	if err := flush(); err != nil {
		return err
	}
	if len(foreign) == 0 {
		return nil
	}
	u := artifacts.ScopeUsage{Hash: s.root}
	for _, f := range foreign {
		u.Names = append(u.Names, artifacts.NameUsage{Hash: f.name, Problems: []artifacts.Problem{{Path: f.name, Reason: f.reason, Code: artifacts.CodeForeign}}})
	}
	return fn(u)
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
