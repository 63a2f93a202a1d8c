// Package gcslock is the Cloud Storage backend of the lock contract of
// package lock: the lock is one object, created with a DoesNotExist
// precondition. Its heartbeat is the object's heartbeat metadata, renewed
// by rewriting the object on the condition that it is still the
// generation the holder read (GenerationMatch): once another holder has
// taken the lock over, or it was removed, the next heartbeat fails and the
// holder's context is cancelled. A takeover rewrites the stale object on
// the condition that it is still the generation judged stale; a removal
// deletes exactly the generation read.
package gcslock

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"time"

	"cloud.google.com/go/storage"

	"github.com/agentstore/agentstore/internal/gcserr"
	"github.com/agentstore/agentstore/internal/lock"
)

// HeartbeatKey is the custom metadata key of the lock object that holds
// its heartbeat (RFC 3339, written with the holder's clock). An object
// without it (written by hand, or by an older agentstore) has its last
// update time as heartbeat.
const HeartbeatKey = "agentstore-heartbeat"

// maxLockBytes bounds what is read of a lock object.
const maxLockBytes = 64 << 10

// New returns the Backend of the lock object name in bucket, through
// client.
func New(client *storage.Client, bucket, name string) lock.Backend {
	return &backend{obj: client.Bucket(bucket).Object(name), where: "gs://" + bucket + "/" + name}
}

type backend struct {
	obj   *storage.ObjectHandle
	where string
}

func (b *backend) Where() string { return b.where }

// write uploads raw with heartbeat now under conds.
func (b *backend) write(ctx context.Context, conds storage.Conditions, raw []byte, now time.Time) error {
	w := b.obj.If(conds).NewWriter(ctx)
	w.ContentType = "application/json"
	w.Metadata = map[string]string{HeartbeatKey: now.UTC().Format(time.RFC3339Nano)}
	_, err := w.Write(raw)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

func (b *backend) classify(ctx context.Context, err error, doing string) error {
	return gcserr.Classify(ctx, "lock", err, "%s the lock %s", doing, b.where)
}

func (b *backend) Create(ctx context.Context, raw []byte, now time.Time) error {
	err := b.write(ctx, storage.Conditions{DoesNotExist: true}, raw, now)
	if gcserr.IsPrecondition(err) {
		return fmt.Errorf("%s: %w", b.where, fs.ErrExist)
	}
	if err != nil {
		return b.classify(ctx, err, "taking")
	}
	return nil
}

func (b *backend) Read(ctx context.Context) (lock.Snapshot, error) {
	// The attributes and the bytes are two reads: read the bytes of
	// exactly the generation whose attributes were read, and start again
	// when it was replaced in between.
	for attempt := 0; ; attempt++ {
		attrs, err := b.obj.Attrs(ctx)
		if gcserr.IsNotExist(err) {
			return lock.Snapshot{}, fmt.Errorf("%s: %w", b.where, fs.ErrNotExist)
		}
		if err != nil {
			return lock.Snapshot{}, b.classify(ctx, err, "reading")
		}
		r, err := b.obj.Generation(attrs.Generation).NewReader(ctx)
		if gcserr.IsNotExist(err) && attempt < 3 {
			continue
		}
		if err != nil {
			return lock.Snapshot{}, b.classify(ctx, err, "reading")
		}
		raw, err := io.ReadAll(io.LimitReader(r, maxLockBytes))
		r.Close()
		if err != nil {
			return lock.Snapshot{}, b.classify(ctx, err, "reading")
		}
		hb := attrs.Updated
		if t, err := time.Parse(time.RFC3339Nano, attrs.Metadata[HeartbeatKey]); err == nil {
			hb = t
		}
		return lock.Snapshot{Raw: raw, Heartbeat: hb, Version: strconv.FormatInt(attrs.Generation, 10)}, nil
	}
}

func generation(s lock.Snapshot) (int64, error) {
	g, err := strconv.ParseInt(s.Version, 10, 64)
	if err != nil || g <= 0 {
		return 0, fmt.Errorf("%q is not an object generation", s.Version)
	}
	return g, nil
}

func (b *backend) Touch(ctx context.Context, held lock.Snapshot, now time.Time) (lock.Snapshot, error) {
	if err := b.Replace(ctx, held, held.Raw, now); err != nil {
		return lock.Snapshot{}, err
	}
	return b.Read(ctx)
}

func (b *backend) Replace(ctx context.Context, old lock.Snapshot, raw []byte, now time.Time) error {
	g, err := generation(old)
	if err != nil {
		return err
	}
	err = b.write(ctx, storage.Conditions{GenerationMatch: g}, raw, now)
	if gcserr.IsPrecondition(err) || gcserr.IsNotExist(err) {
		return lock.ErrChanged
	}
	if err != nil {
		return b.classify(ctx, err, "writing")
	}
	return nil
}

func (b *backend) Remove(ctx context.Context, s lock.Snapshot) error {
	g, err := generation(s)
	if err != nil {
		return err
	}
	// Exactly that generation, and only while it is the live one.
	err = b.obj.Generation(g).If(storage.Conditions{GenerationMatch: g}).Delete(ctx)
	if gcserr.IsPrecondition(err) || gcserr.IsNotExist(err) {
		return lock.ErrChanged
	}
	if err != nil {
		return b.classify(ctx, err, "removing")
	}
	return nil
}
