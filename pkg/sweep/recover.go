package sweep

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// recover deals with what an interrupted sweep left in the scratch root,
// given its sorted names: temporary files are removed, markers without a
// tombstone are removed, a tombstone whose marker records a verified
// snapshot that still verifies (or a confirmed discard) is removed, and a
// tombstone without one is renamed back when its name is free. With dry it
// only reports. It returns one item per tombstone.
func (s *sweeper) recover(ctx context.Context, names []string, dry bool) []Item {
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	var items []Item
	changed := false
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, tempPrefix):
			if !dry {
				_ = s.root.RemoveAll(n)
				changed = true
			}
		case strings.HasPrefix(n, TombstonePrefix) && strings.HasSuffix(n, MarkerSuffix):
			if !present[strings.TrimSuffix(n, MarkerSuffix)] && !dry {
				_ = s.root.Remove(n)
				changed = true
			}
		case strings.HasPrefix(n, TombstonePrefix):
			if artifacts.CheckContext(ctx, "sweep") != nil {
				continue
			}
			items = append(items, s.recoverOne(ctx, n, present[n+MarkerSuffix], dry))
		}
	}
	if changed {
		_ = syncRoot(s.root)
	}
	return items
}

func (s *sweeper) recoverOne(ctx context.Context, tomb string, hasMarker, dry bool) Item {
	it := Item{Dir: tomb}
	mark := tomb + MarkerSuffix
	dir, ok := parseTombstone(tomb)
	if !ok {
		it.Decision, it.Reason = Skipped, "looks like a sweep's tombstone but its name does not parse; left for an operator"
		return it
	}
	fi, err := s.root.Lstat(tomb)
	if err != nil || !fi.IsDir() {
		it.Decision, it.Reason = Skipped, "a sweep's tombstone that is not a directory; left for an operator"
		return it
	}
	var m marker
	var merr error
	if hasMarker {
		m, merr = readMarker(s.root, mark, dir)
	} else {
		merr = fs.ErrNotExist
	}
	if merr == nil {
		it.Scope = &m.Scope
		it.HasSnapshot, it.SnapshotVersion = true, m.Version
	}
	switch {
	case merr == nil && m.Mode == modeConflict:
		it.Decision, it.Reason = Skipped, fmt.Sprintf("a sweep found a writer in this tombstone of %s (%s); its tree as it was is snapshot v%d; merge what it holds by hand, then remove it and %s", dir, m.Reason, m.Version, mark)
		return it
	case merr == nil && m.Mode == modeDiscard:
		if dry {
			it.Decision, it.Reason = WouldRemove, fmt.Sprintf("an interrupted sweep was discarding %s under plan %s; would finish removing it", dir, m.PlanID)
			return it
		}
		if err := s.finish(tomb, mark); err != nil {
			it.Decision, it.Reason = Skipped, fmt.Sprintf("finishing the interrupted discard of %s failed: %v", dir, err)
			return it
		}
		it.Decision, it.Reason = Removed, fmt.Sprintf("finished the discard of %s (plan %s) that an interrupted sweep had begun", dir, m.PlanID)
		return it
	case merr == nil:
		if s.opts.Store == nil {
			it.Decision, it.Reason = Skipped, fmt.Sprintf("an interrupted sweep was removing %s after snapshot v%d; without a store it cannot be checked, so the tombstone is kept", dir, m.Version)
			return it
		}
		list, _ := hex.DecodeString(m.SnapList)
		want := snapSummary{Files: m.SnapFiles, Dirs: m.SnapDirs, Bytes: m.SnapBytes}
		copy(want.List[:], list)
		content, _ := hex.DecodeString(m.SnapContent)
		copy(want.Content[:], content)
		if _, err := verify(ctx, s.opts.Store, s.root, m.Scope, m.Version, m.Digest, want); err != nil {
			it.Decision, it.Reason = Skipped, fmt.Sprintf("store failure: an interrupted sweep was removing %s, but its snapshot v%d does not verify now (%v); the tombstone is kept", dir, m.Version, err)
			return it
		}
		if dry {
			it.Decision, it.Reason = WouldRemove, fmt.Sprintf("an interrupted sweep was removing %s; its snapshot v%d verifies; would finish removing it", dir, m.Version)
			return it
		}
		if err := s.finish(tomb, mark); err != nil {
			it.Decision, it.Reason = Skipped, fmt.Sprintf("finishing the interrupted removal of %s failed: %v", dir, err)
			return it
		}
		it.Decision, it.Reason = Removed, fmt.Sprintf("finished the removal of %s that an interrupted sweep had begun; snapshot v%d verified", dir, m.Version)
		return it
	}
	// No verified snapshot recorded: never remove; restore.
	why := "no marker"
	if !errors.Is(merr, fs.ErrNotExist) {
		why = merr.Error()
	}
	if _, err := s.root.Lstat(dir); err == nil {
		it.Decision, it.Reason = Skipped, fmt.Sprintf("an interrupted sweep renamed %s here without recording a verified snapshot (%s), and %s exists again: merge by hand", dir, why, dir)
		return it
	}
	if dry {
		it.Decision, it.Reason = Kept, fmt.Sprintf("an interrupted sweep renamed %s here without recording a verified snapshot (%s); would rename it back", dir, why)
		return it
	}
	if hasMarker {
		if err := removeMarker(s.root, mark); err != nil {
			it.Decision, it.Reason = Skipped, fmt.Sprintf("cannot remove the bad marker %s: %v", mark, err)
			return it
		}
	}
	if err := s.root.Rename(tomb, dir); err != nil {
		it.Decision, it.Reason = Skipped, fmt.Sprintf("cannot rename it back to %s: %v", dir, err)
		return it
	}
	_ = syncRoot(s.root)
	it.Decision, it.Reason = Kept, fmt.Sprintf("an interrupted sweep renamed %s here without recording a verified snapshot (%s); renamed back", dir, why)
	return it
}

// finish removes a tombstone (what is left of it) and then its marker.
func (s *sweeper) finish(tomb, mark string) error {
	if err := s.root.RemoveAll(tomb); err != nil {
		return err
	}
	if err := syncRoot(s.root); err != nil {
		return err
	}
	return removeMarker(s.root, mark)
}
