package repair

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
)

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
	Item
	generation int64
	meta       string // the record's object name, checked again before the removal
}

// RepairGCS repairs the Cloud Storage store st as Repair does a filesystem
// store. It lists every object below the store's prefix (names, sizes,
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
// meanwhile is never removed. Options.Workers is not used; Item and
// CorruptItem paths are full object names.
func RepairGCS(ctx context.Context, st *gcsstore.Store, opts Options) (Report, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	}
	root := "gs://" + st.Bucket() + "/" + st.Prefix()
	if opts.StoreArg == "" {
		opts.StoreArg = root
	}
	rep := Report{Root: root, DryRun: opts.DryRun, CorruptItems: []CorruptItem{}, RemovedItems: []Item{}, SkippedItems: []Item{}}
	if opts.Grace > 0 {
		rep.GraceSeconds = opts.Grace.Seconds()
	}
	bkt := st.Client().Bucket(st.Bucket())
	names, err := gcsScan(ctx, bkt, st.Prefix(), opts, &rep)
	if err != nil {
		return rep, err
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
				Item:       Item{Path: d.name, Reason: ReasonOrphan, Age: age, AgeSeconds: age.Round(time.Millisecond).Seconds(), Size: d.size},
				generation: d.generation,
				meta:       n.prefix + gcsstore.VersionObject(v, gcsstore.SuffixMeta),
			})
		}
		for v, m := range n.meta {
			if _, ok := n.data[v]; ok {
				continue
			}
			it, err := gcsMissingPayload(ctx, bkt, n, v, m, opts.StoreArg)
			if err != nil {
				return rep, err
			}
			rep.CorruptItems = append(rep.CorruptItems, it)
		}
	}
	slices.SortFunc(rep.CorruptItems, func(a, b CorruptItem) int { return strings.Compare(a.Path, b.Path) })
	rep.Corrupt = int64(len(rep.CorruptItems))
	slices.SortFunc(plan, func(a, b *gcsPlanned) int { return strings.Compare(a.Path, b.Path) })
	if opts.DryRun {
		for _, p := range plan {
			rep.RemovedItems = append(rep.RemovedItems, p.Item)
		}
		rep.Removed = int64(len(rep.RemovedItems))
		return rep, nil
	}
	if opts.BeforeExecute != nil {
		if err := opts.BeforeExecute(); err != nil {
			return rep, err
		}
	}
	err = gcsExecute(ctx, bkt, plan, &rep)
	return rep, err
}

// gcsScan lists every object below prefix, counting it in rep.Scanned and
// reservations in rep.ReservationsPreserved, and groups the payloads and
// records by name prefix.
func gcsScan(ctx context.Context, bkt *storage.BucketHandle, prefix string, opts Options, rep *Report) ([]*gcsName, error) {
	// The layout keeps every artifact object under PREFIX/s/; what lies
	// beside it (the repair lock, say) is not the store's.
	q := &storage.Query{Prefix: prefix + "/" + gcsstore.ScopesSegment + "/"}
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
			return nil, &LimitError{Limit: opts.Limit}
		}
		if opts.Progress != nil && rep.Scanned%1000 == 0 {
			opts.Progress(rep.Scanned)
		}
		// PREFIX/ s / <scope hash> / n / <name hash> / <base>
		parts := strings.Split(strings.TrimPrefix(attrs.Name, prefix+"/"), "/")
		if len(parts) != 5 || parts[0] != gcsstore.ScopesSegment || parts[2] != gcsstore.NamesSegment ||
			!fsstore.IsHash(parts[1]) || !fsstore.IsHash(parts[3]) {
			continue // not an object of the layout: leave it alone
		}
		suffix, v, ok := gcsstore.ParseVersionObject(parts[4])
		if !ok {
			continue
		}
		if suffix == gcsstore.SuffixReserve {
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
		if suffix == gcsstore.SuffixData {
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
func gcsMissingPayload(ctx context.Context, bkt *storage.BucketHandle, n *gcsName, v int64, m gcsObject, storeArg string) (CorruptItem, error) {
	it := CorruptItem{Version: v, Path: m.name, Reason: "payload is missing"}
	rec, err := gcsReadRecord(ctx, bkt, m)
	if err != nil && !gcsstore.IsNotExist(err) && !errors.Is(err, errRecordTooLarge) {
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
	it.NextCommand = DeleteCommand(storeArg, rec.Scope, rec.Name, v)
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
func gcsExecute(ctx context.Context, bkt *storage.BucketHandle, plan []*gcsPlanned, rep *Report) error {
	var firstErr error
	for _, p := range plan {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		skip := func(why string) {
			it := p.Item
			it.Reason = why
			rep.SkippedItems = append(rep.SkippedItems, it)
		}
		_, err := bkt.Object(p.meta).Attrs(ctx)
		if err == nil {
			skip("its record was published meanwhile")
			continue
		}
		if !gcsstore.IsNotExist(err) {
			firstErr = gcsError(ctx, err, "checking gs://%s/%s", bkt.BucketName(), p.meta)
			break
		}
		g := p.generation
		err = bkt.Object(p.Path).Generation(g).If(storage.Conditions{GenerationMatch: g}).Delete(ctx)
		switch {
		case err == nil:
			rep.RemovedItems = append(rep.RemovedItems, p.Item)
			continue
		case gcsstore.IsNotExist(err):
			skip("vanished or changed before removal")
			continue
		case gcsstore.HTTPCode(err) == 412:
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
	return gcsstore.Classify(ctx, "repair", err, format, args...)
}

// GCSLockObject is the object, below a store's prefix, that a repair of a
// gs:// store holds while it runs. It lies beside PREFIX/s/, where the
// layout keeps artifacts, so no reader of the store ever sees it.
const GCSLockObject = ".agentstore-repair.lock"

// DefaultGCSLockStale is the age past which a lock object is taken to be
// left by a repair that died: a bucket can say when an object was made
// but not whether its maker still runs.
const DefaultGCSLockStale = 6 * time.Hour

// LockGCS takes the repair lock of a gs:// store: it creates GCSLockObject
// only if it does not exist (the DoesNotExist precondition decides between
// racing repairs) and writes who holds it. A lock object older than stale
// is removed, on the condition that it is still the one looked at, and
// taken. A lock held by another repair is a *lock.HeldError (exit status
// 5). release removes the lock object if it is still the one created.
func LockGCS(ctx context.Context, st *gcsstore.Store, purpose string, stale time.Duration) (release func() error, err error) {
	if stale <= 0 {
		stale = DefaultGCSLockStale
	}
	obj := st.Client().Bucket(st.Bucket()).Object(path.Join(st.Prefix(), GCSLockObject))
	where := "gs://" + path.Join(st.Bucket(), st.Prefix(), GCSLockObject)
	host, _ := os.Hostname()
	tok := make([]byte, 16)
	rand.Read(tok)
	info := lock.Info{Host: host, PID: os.Getpid(), Started: time.Now().UTC(), Purpose: purpose, Token: hex.EncodeToString(tok)}
	body, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	for range 2 {
		w := obj.If(storage.Conditions{DoesNotExist: true}).NewWriter(ctx)
		w.ContentType = "application/json"
		_, err := w.Write(body)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			gen := w.Attrs().Generation
			return func() error {
				err := obj.If(storage.Conditions{GenerationMatch: gen}).Delete(context.WithoutCancel(ctx))
				if err != nil && !gcsstore.IsNotExist(err) {
					return gcsError(ctx, err, "releasing %s", where)
				}
				return nil
			}, nil
		}
		if gcsstore.HTTPCode(err) != 412 {
			return nil, gcsError(ctx, err, "taking the lock %s", where)
		}
		attrs, err := obj.Attrs(ctx)
		if gcsstore.IsNotExist(err) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, gcsError(ctx, err, "reading the lock %s", where)
		}
		if time.Since(attrs.Created) > stale {
			err := obj.If(storage.Conditions{GenerationMatch: attrs.Generation}).Delete(ctx)
			if err != nil && !gcsstore.IsNotExist(err) && gcsstore.HTTPCode(err) != 412 {
				return nil, gcsError(ctx, err, "removing the stale lock %s", where)
			}
			continue
		}
		held := &lock.HeldError{Path: where}
		if r, err := obj.Generation(attrs.Generation).NewReader(ctx); err == nil {
			b, _ := io.ReadAll(io.LimitReader(r, 4096))
			r.Close()
			json.Unmarshal(b, &held.Holder)
		}
		return nil, held
	}
	return nil, &lock.HeldError{Path: where}
}
