package gcsstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path"
	"time"

	"cloud.google.com/go/storage"

	"github.com/agentstore/agentstore/internal/lock"
)

// RepairLockObject is the object, below a store's prefix, that a repair of a
// gs:// store holds while it runs. It lies beside PREFIX/s/, where the
// layout keeps artifacts, so no reader of the store ever sees it.
const RepairLockObject = ".agentstore-repair.lock"

// DefaultRepairLockStale is the age past which a lock object is taken to be
// left by a repair that died: a bucket can say when an object was made
// but not whether its maker still runs.
const DefaultRepairLockStale = 6 * time.Hour

// LockRepair takes the repair lock of the store: it creates RepairLockObject
// only if it does not exist (the DoesNotExist precondition decides between
// racing repairs) and writes who holds it. A lock object older than stale
// is removed, on the condition that it is still the one looked at, and
// taken. A lock held by another repair is a *lock.HeldError (exit status
// 5). release removes the lock object if it is still the one created.
func (st *Store) LockRepair(ctx context.Context, purpose string, stale time.Duration) (release func() error, err error) {
	if stale <= 0 {
		stale = DefaultRepairLockStale
	}
	obj := st.Client().Bucket(st.Bucket()).Object(path.Join(st.Prefix(), RepairLockObject))
	where := "gs://" + path.Join(st.Bucket(), st.Prefix(), RepairLockObject)
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
				if err != nil && !isNotExist(err) {
					return classify(ctx, "lock", err, "releasing %s", where)
				}
				return nil
			}, nil
		}
		if httpCode(err) != 412 {
			return nil, classify(ctx, "lock", err, "taking the lock %s", where)
		}
		attrs, err := obj.Attrs(ctx)
		if isNotExist(err) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, classify(ctx, "lock", err, "reading the lock %s", where)
		}
		if time.Since(attrs.Created) > stale {
			err := obj.If(storage.Conditions{GenerationMatch: attrs.Generation}).Delete(ctx)
			if err != nil && !isNotExist(err) && httpCode(err) != 412 {
				return nil, classify(ctx, "lock", err, "removing the stale lock %s", where)
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
