// Package gcsstore is the Google Cloud Storage adapter of the artifact
// store. It reads and writes, object for object, the v1 Cloud Storage layout
// of the Erlang ADK adapter adk_artifact_gcs: hashed scope and name
// prefixes, an empty .reserve object per version number, the payload in
// .data and the record in .meta, which is the only publication point.
//
// Every object is created with the DoesNotExist precondition
// (ifGenerationMatch=0), so concurrent writers in any number of processes
// never overwrite each other; every delete is conditioned on the generation
// that was listed. Each object this package creates carries a random token
// in its custom metadata (TokenMetadataKey): when a create is retried after
// its first attempt committed but its response was lost, the 412 that the
// retry gets is told apart from a competitor's object by that token.
//
// Payloads stream: Put never holds more than one upload chunk
// (Options.ChunkSize) of a payload in memory, and Get streams through an
// artifacts.Reader that verifies size and SHA-256 before it reports io.EOF.
package gcsstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/agentstore/agentstore/internal/gcserr"
	"github.com/agentstore/agentstore/internal/stall"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// TokenMetadataKey is the custom metadata key (sent as the header
// x-goog-meta-agentstore-token) holding the random token of the call that
// created an object.
const TokenMetadataKey = "agentstore-token"

// MaxRecordBytes is the layout's limit on a record written to Cloud
// Storage, and the default of Options.MaxRecordBytes.
const MaxRecordBytes = 16384

// Defaults of Options.
const (
	DefaultMaxReserveAttempts = 100
	DefaultChunkSize          = 8 << 20
	DefaultMaxAttempts        = 5
	DefaultRetryInitial       = 50 * time.Millisecond
	DefaultRetryMax           = 2 * time.Second
	DefaultWorkers            = 16
	// minChunk is the smallest upload chunk Cloud Storage accepts; payloads
	// that fit in it are sent in one request with a known CRC32C.
	minChunk = 256 << 10
	// cleanupTimeout bounds the removal of a staged object after the call's
	// own deadline has passed.
	cleanupTimeout = 10 * time.Second
)

// Options configure a Store. The zero value gives the layout's defaults.
type Options struct {
	// MaxArtifactBytes is the largest payload Put accepts (default 64 MiB).
	MaxArtifactBytes int64
	// MaxScanEntries sets the lifetime ceilings (default 10,000, at least 3):
	// scopes in the prefix and names per scope at MaxScanEntries/2,
	// reservations per name at MaxScanEntries/3.
	MaxScanEntries int
	// MaxPageLimit is the largest page limit (default 1000).
	MaxPageLimit int
	// Now is the clock for created_at (default time.Now).
	Now func() time.Time
	// MaxReserveAttempts bounds how many version numbers one Put tries to
	// reserve when competitors keep taking them (HTTP 412) before it fails
	// with CodeConflict (default 100).
	MaxReserveAttempts int
	// ChunkSize is the upload chunk of payloads larger than 256 KiB: the
	// memory one Put holds, and the unit the client retries (default 8 MiB,
	// rounded up to a multiple of 256 KiB by the client).
	ChunkSize int
	// MaxAttempts bounds the attempts of every single request, retries on
	// 408, 429, 5xx and connection errors included (default 5). The call's
	// context bounds them too.
	MaxAttempts int
	// RetryInitial and RetryMax shape the exponential backoff between
	// attempts (defaults 50 ms and 2 s).
	RetryInitial, RetryMax time.Duration
	// Workers is the number of concurrent requests of a listing (default 16).
	Workers int
	// MaxRecordBytes is the largest record Put writes (default
	// MaxRecordBytes, 16,384, as the layout says; at most
	// artifacts.MaxRecordFileBytes, the reader's limit). At the default a
	// Put whose custom metadata is near its own 16,384-byte limit fails
	// with CodeInvalidMetadata before anything is written, since the
	// record's other fields do not fit beside it.
	MaxRecordBytes int
	// WalkIdle bounds a store-wide walk (Walk, ListScopes) whose context
	// has no deadline by its progress: the walk ends with CodeTimeout once
	// this long passes with no object listed and no record read, time
	// spent in the caller's callback not counted (default the layout's
	// longest deadline, artifacts.MaxDeadlineMillis: 5 minutes). A walk
	// has no bound on its total time, which grows with the bucket.
	WalkIdle time.Duration
}

// Store is a Cloud Storage artifact store: the objects below a prefix of one
// bucket. It implements artifacts.Store, artifacts.ScopeLister and
// artifacts.Walker. It is safe for concurrent use.
type Store struct {
	client *storage.Client
	owned  bool // Close closes client
	bucket string
	prefix string
	opts   Options

	mu    sync.Mutex
	names map[string]string // name prefix -> name (immutable)
	hints map[string]hint   // name prefix -> last reservation made here
}

var (
	_ artifacts.Driver      = (*Store)(nil)
	_ artifacts.ScopeLister = (*Store)(nil)
	_ artifacts.Walker      = (*Store)(nil)
)

// Open returns a Store for the objects below prefix (DefaultPrefix when
// empty; leading and trailing slashes are dropped) in bucket, using client.
// It lists at most one object to check that the bucket can be read, and
// does not close client.
func Open(ctx context.Context, client *storage.Client, bucket, prefix string, opts Options) (*Store, error) {
	const op = "open"
	if client == nil {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "no storage client")
	}
	if bucket == "" {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "no bucket")
	}
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if strings.Contains(prefix, "//") {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "prefix %q has an empty segment", prefix)
	}
	if opts.MaxArtifactBytes <= 0 {
		opts.MaxArtifactBytes = artifacts.DefaultMaxArtifact
	}
	if opts.MaxScanEntries == 0 {
		opts.MaxScanEntries = artifacts.DefaultMaxScanEntries
	}
	if opts.MaxScanEntries < artifacts.MinMaxScanEntries {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "max scan entries %d is below %d", opts.MaxScanEntries, artifacts.MinMaxScanEntries)
	}
	if opts.MaxPageLimit <= 0 {
		opts.MaxPageLimit = artifacts.DefaultMaxPageLimit
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxReserveAttempts <= 0 {
		opts.MaxReserveAttempts = DefaultMaxReserveAttempts
	}
	if opts.ChunkSize <= 0 {
		opts.ChunkSize = DefaultChunkSize
	}
	if opts.ChunkSize < minChunk {
		opts.ChunkSize = minChunk
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.RetryInitial <= 0 {
		opts.RetryInitial = DefaultRetryInitial
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = DefaultRetryMax
	}
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = MaxRecordBytes
	}
	if opts.MaxRecordBytes > artifacts.MaxRecordFileBytes {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "max record bytes %d is above %d", opts.MaxRecordBytes, artifacts.MaxRecordFileBytes)
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	s := &Store{client: client, bucket: bucket, prefix: prefix, opts: opts, names: map[string]string{}, hints: map[string]hint{}}
	cctx, cancel := s.callCtx(ctx)
	defer cancel()
	it := s.bkt().Objects(cctx, &storage.Query{Prefix: s.prefix + "/", Delimiter: "/"})
	it.PageInfo().MaxSize = 1
	if _, err := it.Next(); err != nil && err != iterator.Done {
		return nil, classify(cctx, op, err, "bucket %q is not readable", bucket)
	}
	return s, nil
}

// OpenURI is Open with a client of its own, made by storage.NewClient with
// Application Default Credentials. When STORAGE_EMULATOR_HOST is set the
// client talks to that emulator without authentication and reads through
// the JSON API (emulators do not serve the XML API at their own host). The
// Store's Close closes the client.
func OpenURI(ctx context.Context, bucket, prefix string, opts Options) (*Store, error) {
	client, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, client, bucket, prefix, opts)
	if err != nil {
		client.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// NewClient makes a storage client as OpenURI does: Application Default
// Credentials, or, when STORAGE_EMULATOR_HOST is set, that emulator without
// authentication through the JSON API. Other Cloud Storage layouts use it.
func NewClient(ctx context.Context) (*storage.Client, error) { return newClient(ctx) }

// RetryOptions returns the retry configuration of one request for o (its
// zero fields at their defaults): bounded exponential backoff, idempotent
// operations only, at most MaxAttempts attempts. Other Cloud Storage
// layouts use it to retry as this one does.
func RetryOptions(o Options) []storage.RetryOption {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.RetryInitial <= 0 {
		o.RetryInitial = DefaultRetryInitial
	}
	if o.RetryMax <= 0 {
		o.RetryMax = DefaultRetryMax
	}
	return retryOptions(o)
}

// newClient makes the storage client of OpenURI and the layout's opener.
func newClient(ctx context.Context) (*storage.Client, error) {
	var copts []option.ClientOption
	if os.Getenv("STORAGE_EMULATOR_HOST") != "" {
		copts = append(copts, option.WithoutAuthentication(), storage.WithJSONReads())
	}
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, classify(ctx, "open", err, "storage client")
	}
	return client, nil
}

// Close closes the storage client when the Store made it (OpenURI).
func (s *Store) Close() error {
	if s.owned {
		return s.client.Close()
	}
	return nil
}

// Bucket returns the bucket's name.
func (s *Store) Bucket() string { return s.bucket }

// Prefix returns the object name prefix, without a trailing slash.
func (s *Store) Prefix() string { return s.prefix }

// Client returns the storage client.
func (s *Store) Client() *storage.Client { return s.client }

// ObjectName returns the full object name of version n's object with
// suffix, for scope and name.
func (s *Store) ObjectName(scope artifacts.Scope, name string, n int64, suffix Suffix) string {
	return s.namePrefix(scope.Hash(), artifacts.NameHash(name)) + VersionObject(n, suffix)
}

// Capabilities describes the adapter. Ranges are checked against the
// record's size only: a GetRange reads just the range.
func (s *Store) Capabilities() artifacts.Capabilities {
	return artifacts.Capabilities{
		Name:             "gcs",
		Layout:           LayoutName,
		MaxArtifactBytes: s.opts.MaxArtifactBytes,
		MaxPageLimit:     s.opts.MaxPageLimit,
		MaxScanEntries:   s.opts.MaxScanEntries,
		VerifiedRanges:   false,
		Durable:          true,
		FirstVersion:     1,
		StoresDigest:     true,
		HeaderMIMETypes:  true,
		MaxRecordBytes:   s.opts.MaxRecordBytes,
		MaxNameBytes:     artifacts.MaxNameBytes,
	}
}

// walkCtx bounds a store-wide walk of s (see WalkContext).
func (s *Store) walkCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return WalkContext(ctx, s.opts)
}

// WalkContext bounds a store-wide walk of a Cloud Storage layout when ctx
// has no deadline: not by its total time, which grows with the bucket
// (and, in fs verify, with the reading done as the walk goes), but by its
// progress. The walk is cancelled, as a timeout, once opts.WalkIdle
// (default the layout's longest deadline) passes with no stall.Touch while
// it is not paused in its caller's callback (internal/stall). A deadline
// of the caller's own is kept as it is.
func WalkContext(ctx context.Context, opts Options) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	idle := opts.WalkIdle
	if idle <= 0 {
		idle = artifacts.MaxDeadlineMillis * time.Millisecond
	}
	return stall.WithIdle(ctx, idle)
}

// callCtx bounds a call by the layout's longest deadline when ctx has none.
func (s *Store) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, artifacts.MaxDeadlineMillis*time.Millisecond)
}

// retryOptions returns the retry configuration of one request: bounded
// exponential backoff, idempotent operations only (every create here has a
// precondition, every delete a generation), and at most MaxAttempts
// attempts, counted by a fresh counter.
func (s *Store) retryOptions() []storage.RetryOption { return retryOptions(s.opts) }

// retryOptions is Store.retryOptions for options o (defaults applied).
func retryOptions(o Options) []storage.RetryOption {
	var attempts atomic.Int32
	limit := int32(o.MaxAttempts)
	return []storage.RetryOption{
		storage.WithBackoff(gax.Backoff{Initial: o.RetryInitial, Max: o.RetryMax, Multiplier: 2}),
		storage.WithPolicy(storage.RetryIdempotent),
		storage.WithMaxAttempts(o.MaxAttempts),
		storage.WithErrorFunc(func(err error) bool {
			return attempts.Add(1) < limit && shouldRetry(err)
		}),
	}
}

// bkt returns the bucket handle with a fresh retry budget.
func (s *Store) bkt() *storage.BucketHandle {
	return s.client.Bucket(s.bucket).Retryer(s.retryOptions()...)
}

// obj returns an object handle with a fresh retry budget.
func (s *Store) obj(name string) *storage.ObjectHandle {
	return s.client.Bucket(s.bucket).Object(name).Retryer(s.retryOptions()...)
}

// shouldRetry is storage.ShouldRetry, which also retries a connection that
// closed before the response (io.EOF inside a *url.Error).
func shouldRetry(err error) bool {
	return storage.ShouldRetry(err)
}

// newToken returns 32 random hex characters.
func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// The storage client's errors, classified once for both GCS drivers (see
// package internal/gcserr).
var (
	classify       = gcserr.Classify
	httpCode       = gcserr.HTTPCode
	isNotExist     = gcserr.IsNotExist
	isPrecondition = gcserr.IsPrecondition
)
