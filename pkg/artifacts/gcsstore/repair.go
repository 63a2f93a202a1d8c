package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

var _ artifacts.Repairer = (*Store)(nil)

// gcsObject is one listed object of a name prefix.
type gcsObject struct {
	name       string
	size       int64
	created    time.Time
	generation int64
}

// gcsName is the objects of one name prefix (PREFIX/s/<hash>/n/<hash>/),
// by version.
type gcsName struct {
	prefix     string
	scopeHash  string
	nameHash   string
	data, meta map[int64]gcsObject
}

// gcsPlanned is an orphan payload to remove.
type gcsPlanned struct {
	artifacts.RepairItem
	generation int64
	meta       string // the record's object name, checked again before the removal
}

// PlanRepair plans the repair of the store as fsstore plans that of a
// filesystem store. It lists every object below the store's prefix (names, sizes,
// creation times and generations; it never reads a payload) and counts
// each in Scanned, then classifies the objects of every name prefix
// (PREFIX/s/<scope hash>/n/<name hash>/):
//   - v-N.reserve: preserved, counted in ReservationsPreserved;
//   - v-N.data with no v-N.meta (an orphan payload): removed when created
//     longer ago than the grace period;
//   - v-N.meta with no v-N.data: a corrupt version, reported (its record
//     decoded to name the artifact) with the command that deletes it,
//     never removed;
//   - anything else: left alone.
//
// Right before it removes an orphan payload it checks that the record
// still does not exist, and it deletes the payload's listed generation
// only (with a generation-match precondition), so a payload written again
// meanwhile is never removed (Execute). RepairOptions.Workers is not used;
// item paths are full object names.
func (s *Store) PlanRepair(ctx context.Context, opts artifacts.RepairOptions) (artifacts.RepairPlan, error) {
	root := "gs://" + s.bucket + "/" + s.prefix
	opts = opts.Normalized(root)
	rep := artifacts.NewRepairReport(root, opts)
	bkt := s.client.Bucket(s.bucket)
	names, err := gcsScan(ctx, bkt, s.prefix, opts, &rep)
	if err != nil {
		return nil, err
	}
	now := opts.Now()
	var plan []*gcsPlanned
	for _, n := range names {
		for v, d := range n.data {
			if _, ok := n.meta[v]; ok {
				continue
			}
			age := now.Sub(d.created)
			if opts.Grace >= 0 && age <= opts.Grace {
				rep.Young++
				continue
			}
			plan = append(plan, &gcsPlanned{
				RepairItem: artifacts.NewRepairItem(d.name, artifacts.RepairReasonOrphan, age, d.size),
				generation: d.generation,
				meta:       n.prefix + VersionObject(v, SuffixMeta),
			})
		}
		for v, m := range n.meta {
			if _, ok := n.data[v]; ok {
				continue
			}
			it, err := gcsMissingPayload(ctx, bkt, n, v, m, opts.StoreArg)
			if err != nil {
				return nil, err
			}
			rep.CorruptItems = append(rep.CorruptItems, it)
		}
	}
	slices.SortFunc(rep.CorruptItems, func(a, b artifacts.CorruptItem) int { return strings.Compare(a.Path, b.Path) })
	rep.Corrupt = int64(len(rep.CorruptItems))
	slices.SortFunc(plan, func(a, b *gcsPlanned) int { return strings.Compare(a.Path, b.Path) })
	items := make([]artifacts.RepairItem, len(plan))
	for i, p := range plan {
		items[i] = p.RepairItem
	}
	return artifacts.NewRepairPlan(rep, items, func(ctx context.Context, rep *artifacts.RepairReport) error {
		return gcsExecute(ctx, bkt, plan, rep)
	}), nil
}

// gcsScan lists every object below prefix, counting it in rep.Scanned and
// reservations in rep.ReservationsPreserved, and groups the payloads and
// records by name prefix.
func gcsScan(ctx context.Context, bkt *storage.BucketHandle, prefix string, opts artifacts.RepairOptions, rep *artifacts.RepairReport) ([]*gcsName, error) {
	// The layout keeps every artifact object under PREFIX/s/; what lies
	// beside it (the repair lock, say) is not the store's.
	q := &storage.Query{Prefix: prefix + "/" + ScopesSegment + "/"}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Created", "Generation"}); err != nil {
		return nil, err
	}
	byPrefix := map[string]*gcsName{}
	var names []*gcsName
	it := bkt.Objects(ctx, q)
	for {
		attrs, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, gcsError(ctx, err, "listing gs://%s/%s/", bkt.BucketName(), prefix)
		}
		rep.Scanned++
		if opts.Limit > 0 && rep.Scanned > opts.Limit {
			return nil, &artifacts.RepairLimitError{Limit: opts.Limit}
		}
		if opts.Progress != nil && rep.Scanned%1000 == 0 {
			opts.Progress(rep.Scanned)
		}
		// PREFIX/ s / <scope hash> / n / <name hash> / <base>
		parts := strings.Split(strings.TrimPrefix(attrs.Name, prefix+"/"), "/")
		if len(parts) != 5 || parts[0] != ScopesSegment || parts[2] != NamesSegment ||
			!isHash(parts[1]) || !isHash(parts[3]) {
			continue // not an object of the layout: leave it alone
		}
		suffix, v, ok := ParseVersionObject(parts[4])
		if !ok {
			continue
		}
		if suffix == SuffixReserve {
			rep.ReservationsPreserved++
			continue
		}
		np := strings.TrimSuffix(attrs.Name, parts[4])
		n := byPrefix[np]
		if n == nil {
			n = &gcsName{prefix: np, scopeHash: parts[1], nameHash: parts[3], data: map[int64]gcsObject{}, meta: map[int64]gcsObject{}}
			byPrefix[np] = n
			names = append(names, n)
		}
		o := gcsObject{name: attrs.Name, size: attrs.Size, created: attrs.Created, generation: attrs.Generation}
		if suffix == SuffixData {
			n.data[v] = o
		} else {
			n.meta[v] = o
		}
	}
	if opts.Progress != nil {
		opts.Progress(rep.Scanned)
	}
	return names, nil
}

// gcsMissingPayload describes a record without its payload, decoding the
// record to name the artifact. A record that vanished meanwhile is
// reported as missing too.
func gcsMissingPayload(ctx context.Context, bkt *storage.BucketHandle, n *gcsName, v int64, m gcsObject, storeArg string) (artifacts.CorruptItem, error) {
	it := artifacts.CorruptItem{Version: v, Path: m.name, Reason: "payload is missing"}
	rec, err := gcsReadRecord(ctx, bkt, m)
	if err != nil && !isNotExist(err) && !errors.Is(err, errRecordTooLarge) {
		var de *decodeError
		if !errors.As(err, &de) {
			return it, gcsError(ctx, err, "reading gs://%s/%s", bkt.BucketName(), m.name)
		}
	}
	if err == nil {
		switch {
		case rec.Version != v:
			err = fmt.Errorf("record says version %d", rec.Version)
		case artifacts.NameHash(rec.Name) != n.nameHash:
			err = fmt.Errorf("record names %q, which does not hash to this prefix", rec.Name)
		case rec.Scope.Hash() != n.scopeHash:
			err = fmt.Errorf("record's scope %s does not hash to this prefix", rec.Scope)
		}
	}
	if err != nil {
		it.Reason += "; the record does not say which artifact this is: " + err.Error()
		return it, nil
	}
	it.Scope, it.Name = &rec.Scope, rec.Name
	it.NextCommand = artifacts.DeleteCommand(storeArg, rec.Scope, rec.Name, v)
	return it, nil
}

var errRecordTooLarge = fmt.Errorf("record is larger than %d bytes", artifacts.MaxRecordFileBytes)

// decodeError is a record that was read but does not decode.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }

// gcsReadRecord reads the listed generation of a record object and
// decodes it, refusing one past the layout's size limit.
func gcsReadRecord(ctx context.Context, bkt *storage.BucketHandle, m gcsObject) (artifacts.Record, error) {
	if m.size > artifacts.MaxRecordFileBytes {
		return artifacts.Record{}, errRecordTooLarge
	}
	r, err := bkt.Object(m.name).Generation(m.generation).NewReader(ctx)
	if err != nil {
		return artifacts.Record{}, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, artifacts.MaxRecordFileBytes+1))
	if err != nil {
		return artifacts.Record{}, err
	}
	if len(b) > artifacts.MaxRecordFileBytes {
		return artifacts.Record{}, errRecordTooLarge
	}
	rec, err := artifacts.DecodeRecord(b)
	if err != nil {
		return rec, &decodeError{err}
	}
	return rec, nil
}

// gcsExecute removes the planned orphan payloads: for each it checks that
// the record still does not exist, then deletes the listed generation with
// a generation-match precondition.
func gcsExecute(ctx context.Context, bkt *storage.BucketHandle, plan []*gcsPlanned, rep *artifacts.RepairReport) error {
	var firstErr error
	for _, p := range plan {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		skip := func(why string) { rep.Skip(p.RepairItem, why) }
		_, err := bkt.Object(p.meta).Attrs(ctx)
		if err == nil {
			skip("its record was published meanwhile")
			continue
		}
		if !isNotExist(err) {
			firstErr = gcsError(ctx, err, "checking gs://%s/%s", bkt.BucketName(), p.meta)
			break
		}
		g := p.generation
		err = bkt.Object(p.Path).Generation(g).If(storage.Conditions{GenerationMatch: g}).Delete(ctx)
		switch {
		case err == nil:
			rep.RemovedItems = append(rep.RemovedItems, p.RepairItem)
			continue
		case isNotExist(err):
			skip("vanished or changed before removal")
			continue
		case httpCode(err) == 412:
			skip("changed since it was classified")
			continue
		}
		firstErr = gcsError(ctx, err, "removing gs://%s/%s", bkt.BucketName(), p.Path)
		break
	}
	rep.Removed = int64(len(rep.RemovedItems))
	if firstErr != nil {
		return fmt.Errorf("repair: %w", firstErr)
	}
	return nil
}

// gcsError turns an error of the storage client into an *artifacts.Error
// with the codes the gcsstore adapter gives.
func gcsError(ctx context.Context, err error, format string, args ...any) error {
	return classify(ctx, "repair", err, format, args...)
}
