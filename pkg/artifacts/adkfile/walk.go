package adkfile

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// maxNameDepth bounds the directories a walk descends below artifacts/:
// a name of at most 1,024 bytes has at most 512 segments.
const maxNameDepth = artifacts.MaxNameBytes/2 + 1

// Reasons of the problems Walk reports.
const (
	// ReasonEmptyVersion is the reason of a version directory with nothing
	// in it.
	ReasonEmptyVersion = "empty version directory (a save killed before it wrote anything; ADK counts the number but cannot load it)"
	// ReasonNoMetadata is the reason of a version directory with a payload
	// and no metadata.json.
	ReasonNoMetadata = "payload without metadata.json (a save killed mid-write, the payload possibly cut short; ADK counts the number but cannot load it)"
	// ReasonForeign is the reason of an entry that is not part of the
	// layout.
	ReasonForeign = "not part of ADK's file layout (%s); agentstore never reads or changes it"
)

// RepairCommand is the command that removes half-written versions and
// pending directories of the store at root once they are past the grace
// period.
func RepairCommand(root string) string {
	return shell.Join("agentstore", "fs", "repair", "--store", root)
}

// nameFn receives one name directory: its usage (records and problems of
// its versions) and the foreign entries below it.
type nameFn func(n artifacts.NameUsage, foreign []artifacts.Problem)

// walkNames walks the artifacts/ directory dir of scope and calls fn for
// every name directory (one holding versions/), and once with an empty
// usage for foreign entries that belong to no name.
func (s *Store) walkNames(ctx context.Context, op string, scope artifacts.Scope, dir string, fn nameFn) error {
	rels, stray, err := s.scanNames(ctx, op, dir)
	if err != nil {
		return err
	}
	for _, rel := range rels {
		if err := s.walkName(op, scope, dir, rel, fn); err != nil {
			return err
		}
	}
	if len(stray) > 0 {
		fn(artifacts.NameUsage{Hash: s.abs(dir)}, stray)
	}
	return nil
}

// scanNames lists the name directories below the artifacts/ directory dir
// (their paths relative to it: the directories that hold versions/), and
// the entries that are not part of the layout, reading directories only.
// It descends through directory handles, one level at a time, so that a
// deeply nested name costs one open per level, not one per level for
// every directory below it.
func (s *Store) scanNames(ctx context.Context, op, dir string) (rels []string, stray []artifacts.Problem, err error) {
	ok, err := s.dirExists(op, dir)
	if err != nil || !ok {
		return nil, nil, err
	}
	top, err := s.root.OpenRoot(dir)
	if err != nil {
		return nil, nil, readErr(op, s.abs(dir), err)
	}
	defer top.Close()
	var walk func(r *os.Root, rel string, depth int) error
	walk = func(r *os.Root, rel string, depth int) error {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return err
		}
		f, err := r.Open(".")
		if err != nil {
			return readErr(op, s.abs(path.Join(dir, rel)), err)
		}
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return readErr(op, s.abs(path.Join(dir, rel)), err)
		}
		for _, e := range entries {
			child := path.Join(rel, e.Name())
			abs := s.abs(path.Join(dir, child))
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				stray = append(stray, foreign(abs, "a symbolic link"))
			case e.Name() == VersionsDir && e.IsDir() && rel != "":
				rels = append(rels, rel)
			case e.Name() == VersionsDir:
				stray = append(stray, foreign(abs, "a versions directory with no name above it"))
			case !e.IsDir():
				stray = append(stray, foreign(abs, osutil.KindOf(e.Type())+" outside any versions directory"))
			case depth >= maxNameDepth:
				stray = append(stray, foreign(abs, "nested deeper than any name"))
			default:
				sub, err := r.OpenRoot(e.Name())
				if err != nil {
					return readErr(op, abs, err)
				}
				err = walk(sub, child, depth+1)
				sub.Close()
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(top, "", 0); err != nil {
		return nil, nil, err
	}
	return rels, stray, nil
}

// walkName reads the name directory dir/rel (it holds versions/).
func (s *Store) walkName(op string, scope artifacts.Scope, dir, rel string, fn nameFn) error {
	ndir := path.Join(dir, rel)
	name := apiName(scope.Kind, rel)
	if p, err := pathName(scope, name); err != nil || p != rel || artifacts.ValidateName(name) != nil {
		fn(artifacts.NameUsage{Hash: s.abs(ndir)}, []artifacts.Problem{foreign(s.abs(ndir), "its path is no artifact name ADK can save")})
		return nil
	}
	vdir := path.Join(ndir, VersionsDir)
	nums, other, err := s.versionDirs(op, vdir)
	if err != nil {
		return err
	}
	n := artifacts.NameUsage{Name: name, Hash: s.abs(ndir), Reservations: len(nums)}
	var stray []artifacts.Problem
	for _, o := range other {
		if _, ok := pendingNumber(o.Name()); ok || strings.HasPrefix(o.Name(), deletingPrefix) {
			continue // a save or delete under way (or interrupted: fs repair)
		}
		stray = append(stray, foreign(s.abs(path.Join(vdir, o.Name())), "not a version number"))
	}
	base := path.Base(rel)
	for _, v := range nums {
		e := s.readVersion(op, scope, name, path.Join(vdir, fmt.Sprint(v)), base, v)
		switch e.state {
		case stPublished:
			n.Records = append(n.Records, e.rec)
		case stIncomplete:
			reason := ReasonEmptyVersion
			if ok, _ := s.hasEntries(op, e.dir); ok {
				reason = ReasonNoMetadata
			}
			n.Problems = append(n.Problems, artifacts.Problem{Version: v, Path: s.abs(e.dir), Reason: reason + "; fs repair removes it once it is older than its grace period", Code: artifacts.CodeCorrupt, NextCommand: RepairCommand(s.rootPath)})
		default:
			n.Problems = append(n.Problems, artifacts.Problem{Version: v, Path: s.abs(e.dir), Reason: artifacts.ReasonOf(e.err), Code: artifacts.ProblemCode(e.err)})
		}
	}
	fn(n, stray)
	return nil
}

// hasEntries reports whether the directory rel holds anything.
func (s *Store) hasEntries(op, rel string) (bool, error) {
	entries, err := s.readDir(op, rel)
	return len(entries) > 0, err
}

func foreign(abs, what string) artifacts.Problem {
	return artifacts.Problem{Path: abs, Reason: fmt.Sprintf(ReasonForeign, what), Code: artifacts.CodeForeign}
}

// userScopes calls fn for every scope directory below the users/
// directory udir (relative to the root), as scopes of app, and reports
// the entries that are not part of the layout through foreignFn. It never
// follows a symbolic link.
func (s *Store) userScopes(ctx context.Context, op, app, udir string, fn func(scope artifacts.Scope, dir string) error, foreignFn func(artifacts.Problem)) error {
	entries, err := s.readDir(op, udir)
	if err != nil {
		return err
	}
	for _, u := range entries {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return err
		}
		urel := path.Join(udir, u.Name())
		if !u.IsDir() || u.Type()&fs.ModeSymlink != 0 || checkSegment(u.Name()) != nil {
			foreignFn(foreign(s.abs(urel), "not a user directory"))
			continue
		}
		ue, err := s.readDir(op, urel)
		if err != nil {
			return err
		}
		for _, k := range ue {
			krel := path.Join(urel, k.Name())
			switch {
			case k.Name() == ArtifactsDir && k.IsDir():
				if err := fn(artifacts.UserScope(app, u.Name()), krel); err != nil {
					return err
				}
			case k.Name() == SessionsDir && k.IsDir():
				sessions, err := s.readDir(op, krel)
				if err != nil {
					return err
				}
				for _, se := range sessions {
					srel := path.Join(krel, se.Name())
					if !se.IsDir() || se.Type()&fs.ModeSymlink != 0 || checkSegment(se.Name()) != nil {
						foreignFn(foreign(s.abs(srel), "not a session directory"))
						continue
					}
					sentries, err := s.readDir(op, srel)
					if err != nil {
						return err
					}
					for _, a := range sentries {
						arel := path.Join(srel, a.Name())
						if a.Name() == ArtifactsDir && a.IsDir() {
							if err := fn(artifacts.SessionScope(app, u.Name(), se.Name()), arel); err != nil {
								return err
							}
							continue
						}
						foreignFn(foreign(s.abs(arel), "a session directory holds only artifacts/"))
					}
				}
			default:
				foreignFn(foreign(s.abs(krel), "a user directory holds only artifacts/ and sessions/"))
			}
		}
	}
	return nil
}

// scopeDirs calls fn for every scope directory of the store's tree (and
// reports the tree's foreign entries through foreignFn).
func (s *Store) scopeDirs(ctx context.Context, op string, fn func(scope artifacts.Scope, dir string) error, foreignFn func(artifacts.Problem)) error {
	top, err := s.readDir(op, ".")
	if err != nil {
		return err
	}
	for _, t := range top {
		switch {
		case strings.HasPrefix(t.Name(), "."):
			// agentstore's own lock files; ADK writes no dot-files here.
		case t.Name() == AppsDir && s.variant == VariantApps:
			apps, err := s.readDir(op, AppsDir)
			if err != nil {
				return err
			}
			for _, a := range apps {
				arel := path.Join(AppsDir, a.Name())
				if !a.IsDir() || a.Type()&fs.ModeSymlink != 0 || checkSegment(a.Name()) != nil {
					foreignFn(foreign(s.abs(arel), "not an app directory"))
					continue
				}
				ae, err := s.readDir(op, arel)
				if err != nil {
					return err
				}
				for _, x := range ae {
					xrel := path.Join(arel, x.Name())
					if x.Name() == UsersDir && x.IsDir() {
						if err := s.userScopes(ctx, op, a.Name(), xrel, fn, foreignFn); err != nil {
							return err
						}
						continue
					}
					foreignFn(foreign(s.abs(xrel), "an app directory holds only users/"))
				}
			}
		case t.Name() == UsersDir && s.variant == VariantUsers:
			if err := s.userScopes(ctx, op, s.app, UsersDir, fn, foreignFn); err != nil {
				return err
			}
		case t.Name() == UsersDir:
			foreignFn(artifacts.Problem{Path: s.abs(UsersDir), Code: artifacts.CodeForeign, Reason: LegacyReason(s.rootPath), NextCommand: MigrateCommand(s.rootPath, s.app)})
		default:
			foreignFn(foreign(s.abs(t.Name()), "the root holds only "+s.variant.String()))
		}
	}
	return nil
}

// LegacyReason is the reason given for the old-layout ROOT/users/ tree of a
// store whose current tree is ROOT/apps/; the problem's next command is
// MigrateCommand.
func LegacyReason(root string) string {
	return "an old-layout tree (ADK Python before apps/{app}/, or ADK JS), which ADK Python no longer reads: fs migrate moves each " +
		filepath.Join(root, UsersDir, "{user}") + " to " + filepath.Join(root, AppsDir, "{app}", UsersDir, "{user}") +
		" for the app that wrote it (--app, the store app by default) as a planned, confirmed move, with no writer running"
}

// Walk calls fn once per scope directory, with every name's published
// records and problems, and once (Known false) for the entries of the
// tree that are not part of the layout, reported as problems with code
// "foreign". It reads metadata.json files and stats payloads, never
// reading payloads.
func (s *Store) Walk(ctx context.Context, fn func(artifacts.ScopeUsage) error) error {
	const op = "walk"
	var stray []artifacts.Problem
	err := s.scopeDirs(ctx, op, func(scope artifacts.Scope, dir string) error {
		u := artifacts.ScopeUsage{Scope: scope, Known: true, Hash: scope.Hash()}
		err := s.walkNames(ctx, op, scope, dir, func(n artifacts.NameUsage, foreign []artifacts.Problem) {
			if n.Name != "" {
				u.Names = append(u.Names, n)
				u.NameSlots++
			} else {
				stray = append(stray, n.Problems...)
			}
			stray = append(stray, foreign...)
		})
		if err != nil {
			return err
		}
		return fn(u)
	}, func(p artifacts.Problem) { stray = append(stray, p) })
	if err != nil {
		return err
	}
	if len(stray) > 0 {
		u := artifacts.ScopeUsage{Hash: s.rootPath}
		for _, p := range stray {
			u.Names = append(u.Names, artifacts.NameUsage{Hash: p.Path, Problems: []artifacts.Problem{p}})
		}
		return fn(u)
	}
	return nil
}

// ListScopes returns every scope with at least one published version.
func (s *Store) ListScopes(ctx context.Context) ([]artifacts.Scope, error) {
	var out []artifacts.Scope
	err := s.Walk(ctx, func(u artifacts.ScopeUsage) error {
		if !u.Known {
			return nil
		}
		for _, n := range u.Names {
			if len(n.Records) > 0 {
				out = append(out, u.Scope)
				break
			}
		}
		return nil
	})
	return out, err
}
