package adkgcs

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/agentstore/agentstore/internal/stall"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.Repairer = (*Store)(nil)

// NoteRemovesNothing is the note of every repair of the layout.
const NoteRemovesNothing = "google-adk-gcs: repair removes nothing: ADK writes each version as one object, so no interrupted writer leaves a half-published version behind; every finding is reported for you to act on"

// DefaultRepairWorkers is the number of objects a repair reads at once
// when RepairOptions.Workers is not set.
const DefaultRepairWorkers = 4

// PlanRepair checks the store for what a repair of another layout would
// clean up or report, and plans to remove nothing: Cloud Storage has no
// multi-object publication that an interrupted writer could leave half
// done, and an object that is not a version, or whose bytes are damaged,
// may still be someone's data. It lists every object below the root once
// (counted in Scanned; opts.Limit stops the scan) and reads each version
// object's bytes once, checking them against the CRC32C (or MD5) Cloud
// Storage computed when the object was written, opts.Workers at a time.
// It reports in CorruptItems, sorted by object name:
//   - versions whose bytes fail that check (code corrupt_artifact), each
//     with the artifacts delete command that plans its removal;
//   - objects that are not versions of the layout (code foreign, never
//     read): a non-numeric last segment, too few segments, an empty or
//     dot segment, a "user:" name in a session, and the objects of a
//     user-scope name stored in both forms that no ADK library reads.
//
// A user namespace ({app}/{user}/user/) that holds names without "user:"
// where adk-go, ADK Python or ADK Java wrote (the bucket numbers from 1, or
// the same namespace holds names with "user:") is explained in Notes: a
// session literally named "user" writes there too, and no reader can tell
// the two apart. A version deleted during the scan is skipped. An object
// that cannot be read for another reason (permission, network) stops the
// plan with that error: unreadable is not corrupt.
//
// The plan's Execute changes nothing and says so in the report's Notes.
func (s *Store) PlanRepair(ctx context.Context, opts artifacts.RepairOptions) (artifacts.RepairPlan, error) {
	const op = "repair"
	loc := s.location()
	opts = opts.Normalized(loc)
	rep := artifacts.NewRepairReport(loc, opts)
	rep.GraceSeconds = 0 // nothing is removed, young or old
	workers := opts.Workers
	if workers <= 0 {
		workers = DefaultRepairWorkers
	}
	var (
		mu        sync.Mutex
		firstErr  error
		stripped  = map[string][]string{} // user namespace -> objects without "user:"
		kept      = map[string]bool{}     // user namespaces holding names with "user:"
		namespace []string
	)
	listed := func() error {
		rep.Scanned++
		if opts.Progress != nil && rep.Scanned%1000 == 0 {
			opts.Progress(rep.Scanned)
		}
		if opts.Limit > 0 && rep.Scanned > opts.Limit {
			return &artifacts.RepairLimitError{Limit: opts.Limit}
		}
		return nil
	}
	check := func(scope artifacts.Scope, names []nameVersions) error {
		if scope.Kind == artifacts.KindUser {
			ns := s.root + scopePrefix(scope)
			for _, nv := range names {
				for _, o := range nv.objects {
					if o.p.form == formStripped {
						if stripped[ns] == nil {
							namespace = append(namespace, ns)
						}
						stripped[ns] = append(stripped[ns], o.name)
					} else {
						kept[ns] = true
					}
				}
			}
		}
		sem := make(chan struct{}, workers)
		var wg sync.WaitGroup
		for _, nv := range names {
			for _, o := range nv.objects {
				if o.attrs.Size == 0 {
					continue // nothing to read: the CRC32C of no bytes
				}
				sem <- struct{}{}
				mu.Lock()
				stop := firstErr != nil
				mu.Unlock()
				if stop {
					<-sem
					break
				}
				wg.Go(func() {
					defer func() { <-sem }()
					it, bad, err := s.checkObject(ctx, o, opts.StoreArg)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err != nil && firstErr == nil:
						firstErr = err
					case bad:
						rep.CorruptItems = append(rep.CorruptItems, it)
					}
				})
			}
		}
		wg.Wait()
		return firstErr
	}
	sctx, cancel := s.walkCtx(ctx)
	defer cancel()
	err := s.scan(sctx, op, listed, func(scope artifacts.Scope, names []nameVersions) error {
		defer stall.Pause(sctx)() // reading the scope's objects is not the listing's progress
		return check(scope, names)
	}, func(f foreignObject) {
		rep.CorruptItems = append(rep.CorruptItems, artifacts.CorruptItem{Path: f.name, Reason: "not a version of the layout: " + f.reason, Code: artifacts.CodeForeign})
	})
	if opts.Progress != nil {
		opts.Progress(rep.Scanned)
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rep.CorruptItems, func(a, b artifacts.CorruptItem) int { return strings.Compare(a.Path, b.Path) })
	rep.Corrupt = int64(len(rep.CorruptItems))
	rep.Notes = append(rep.Notes, NoteRemovesNothing)
	for _, ns := range namespace {
		if !kept[ns] && s.first != 1 {
			continue // ADK JS's user-scope form, in a bucket it numbers
		}
		objs := stripped[ns]
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s holds %d %s without %q in %s filename (%s): read as user-scope names, the form ADK JS writes; adk-go, ADK Python and ADK Java keep %q, and write the artifacts of a session named %q to the same prefix, so these may be that session's: no ADK library can tell the two apart",
			ns, len(objs), plural(len(objs), "object", "objects"), UserPrefix, plural(len(objs), "its", "their"), sample(objs, 3), UserPrefix, UserSegment))
	}
	return artifacts.NewRepairPlan(rep, nil, func(ctx context.Context, rep *artifacts.RepairReport) error {
		return artifacts.CheckContext(ctx, op)
	}), nil
}

// checkObject reads the listed generation of a version object through the
// CRC32C check: bad is true, with the item, when the bytes fail it; an
// object deleted meanwhile is neither bad nor an error.
func (s *Store) checkObject(ctx context.Context, o object, storeArg string) (it artifacts.CorruptItem, bad bool, err error) {
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	r, err := s.open(cctx, o, 0, -1)
	if err == nil {
		_, err = io.Copy(io.Discard, r)
		r.Close()
	}
	switch artifacts.CodeOf(err) {
	case "":
		return it, false, nil
	case artifacts.CodeNotFound:
		return it, false, nil
	case artifacts.CodeCorrupt:
		scope := o.p.scope
		return artifacts.CorruptItem{
			Scope:       &scope,
			Name:        o.p.name,
			Version:     o.p.version,
			Reason:      artifacts.ReasonOf(err),
			Path:        o.name,
			NextCommand: artifacts.DeleteCommand(storeArg, scope, o.p.name, o.p.version),
			Code:        artifacts.CodeCorrupt,
		}, true, nil
	}
	return it, false, err
}

// location is the store's gs:// URI: gs://BUCKET or gs://BUCKET/PREFIX.
func (s *Store) location() string {
	if s.root == "" {
		return "gs://" + s.bucket
	}
	return "gs://" + s.bucket + "/" + strings.TrimSuffix(s.root, "/")
}

// plural picks the singular or plural word for n.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sample names up to n of names, and how many more there are.
func sample(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
