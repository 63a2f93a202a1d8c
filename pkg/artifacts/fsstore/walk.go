package fsstore

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// Walk reads every scope and name directory of the store, and every
// published record, never a payload. It reports records that do not decode
// or do not belong where they are found, and records whose payload file is
// missing, as Problems.
func (s *Store) Walk(ctx context.Context, fn func(artifacts.ScopeUsage) error) error {
	const op = "walk"
	entries, err := readDirSorted(s.scopes)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return ioErr(op, err)
	}
	for _, e := range entries {
		if !IsHash(e.Name()) {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 || !e.IsDir() {
			return artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is not a directory", filepath.Join(s.scopes, e.Name()))
		}
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return err
		}
		u, err := s.walkScope(ctx, e.Name())
		if err != nil {
			return err
		}
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) walkScope(ctx context.Context, hash string) (artifacts.ScopeUsage, error) {
	const op = "walk"
	u := artifacts.ScopeUsage{Hash: hash}
	namesDir := filepath.Join(s.scopes, hash, NamesDir)
	if err := checkDir(op, namesDir, true); err != nil {
		return u, err
	}
	entries, err := readDirSorted(namesDir)
	if os.IsNotExist(err) {
		return u, nil
	}
	if err != nil {
		return u, ioErr(op, err)
	}
	slots, dirs := 0, 0
	for _, e := range entries {
		if _, ok := ParseSlot(e.Name(), NameSlotPrefix); ok {
			slots++
			continue
		}
		if !IsHash(e.Name()) {
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 || !e.IsDir() {
			return u, artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is not a directory", filepath.Join(namesDir, e.Name()))
		}
		dirs++
		u.Names = append(u.Names, artifacts.NameUsage{Hash: e.Name()})
	}
	u.NameSlots = max(slots, dirs)
	names := make([]*artifacts.NameUsage, len(u.Names))
	for i := range u.Names {
		names[i] = &u.Names[i]
	}
	err = parallel(ctx, names, func(n *artifacts.NameUsage) {
		dir := filepath.Join(namesDir, n.Hash)
		// The directory is opened once: listed, and its records read
		// relative to it.
		d, err := osutil.OpenDir(dir)
		var names []string
		if err == nil {
			names, err = d.Readdirnames(-1)
			defer d.Close()
		}
		if err != nil {
			err = ioErr(op, err)
			n.Problems = append(n.Problems, artifacts.Problem{Path: dir, Reason: err.Error(), Code: artifacts.ProblemCode(err)})
			return
		}
		sc := scanNames(names, true)
		n.Reservations = sc.reservations
		for _, v := range sc.published {
			path := filepath.Join(dir, VersionFile(v, "meta"))
			rec, err := readRecordIn(op, d, artifacts.Scope{}, "", v)
			if err == nil {
				switch {
				case rec.Version != v:
					err = fmt.Errorf("record says version %d", rec.Version)
				case artifacts.NameHash(rec.Name) != n.Hash:
					err = fmt.Errorf("record names %q, which does not hash to this directory", rec.Name)
				case rec.Scope.Hash() != hash:
					err = fmt.Errorf("record's scope %s does not hash to this directory", rec.Scope)
				}
			}
			if err != nil {
				if artifacts.IsNotFound(err) {
					continue // deleted since the scan
				}
				n.Problems = append(n.Problems, artifacts.Problem{Version: v, Path: path, Reason: artifacts.ReasonOf(err), Code: artifacts.ProblemCode(err)})
				continue
			}
			// A listing taken while a writer renames the payload and then the
			// record into place can miss the payload: ask for it by name
			// before reporting it missing.
			if !sc.data[v] && !exists(filepath.Join(dir, VersionFile(v, "data"))) {
				n.Problems = append(n.Problems, artifacts.Problem{Version: v, Path: filepath.Join(dir, VersionFile(v, "data")), Reason: "payload is missing", Code: artifacts.CodeCorrupt})
			}
			n.Name = rec.Name
			n.Records = append(n.Records, rec)
		}
	})
	if err != nil {
		return u, err
	}
	for i := range u.Names {
		n := &u.Names[i]
		if len(n.Records) > 0 && !u.Known {
			u.Scope, u.Known = n.Records[0].Scope, true
		}
	}
	slices.SortFunc(u.Names, func(a, b artifacts.NameUsage) int { return cmpString(a.Name, b.Name) })
	return u, nil
}

// ListScopes returns every scope with at least one published version whose
// record decodes.
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

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// readDirSorted lists a directory sorted by name, refusing a symbolic link
// or a named pipe in its place (see osutil.OpenDir).
func readDirSorted(path string) ([]fs.DirEntry, error) {
	d, err := osutil.OpenDir(path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return cmpString(a.Name(), b.Name()) })
	return entries, err
}
