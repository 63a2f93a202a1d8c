package repair

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/workspace/checkpoint"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// ErrNotWalker is returned by Verify for a store that cannot enumerate its
// scopes (it does not implement artifacts.Walker).
var ErrNotWalker error = artifacts.Errorf(artifacts.CodeUnsupported, "verify", nil, "the store cannot be walked (its driver does not implement artifacts.Walker)")

// VerifyOptions configure Verify. The zero value verifies every published
// version of every scope.
type VerifyOptions struct {
	// Scope, when not nil, limits the check to one scope.
	Scope *artifacts.Scope
	// Sample is the share of published versions whose payloads are read,
	// in percent: 0 (the default) or 100 reads all of them. Records are
	// always all read. Which versions are picked depends only on Seed and
	// the version's scope, name and number.
	Sample float64
	// Seed picks the sample; 0 picks a random seed, reported in
	// VerifyReport.Seed so that the same sample can be checked again.
	Seed uint64
	// Workers is the number of payloads read at once (default
	// 2*GOMAXPROCS, at least 2).
	Workers int
	// Progress, when set, is called now and then with the versions checked
	// and bytes read so far, from any goroutine.
	Progress func(versions, bytes int64)
	// StoreArg is the --store value put into the next commands.
	StoreArg string
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	// Scopes counts the scopes walked.
	Scopes int64 `json:"scopes"`
	// Versions counts the published versions found.
	Versions int64 `json:"versions"`
	// Checked counts the versions whose payloads were read and checked.
	Checked int64 `json:"checked"`
	// Bytes counts the payload bytes read.
	Bytes int64 `json:"bytes"`
	// SamplePercent is the share of versions picked for a payload check.
	SamplePercent float64 `json:"sample_percent"`
	// Seed picked the sample.
	Seed uint64 `json:"seed"`
	// Corrupt counts CorruptItems.
	Corrupt int64 `json:"corrupt"`
	// CorruptItems lists the broken versions, sorted by scope, name and
	// version: records or payloads read and found wrong (code
	// corrupt_artifact), and layout files that are symbolic links, named
	// pipes or other non-regular files, refused unread (code unsafe_store).
	CorruptItems []CorruptItem `json:"corrupt_items"`
	// Unreadable counts UnreadableItems.
	Unreadable int64 `json:"unreadable"`
	// UnreadableItems lists the versions that could not be checked because
	// a file could not be read (code permission_denied or io_error): not
	// known to be broken, never counted as corrupt.
	UnreadableItems []CorruptItem `json:"unreadable_items"`
	// Foreign counts ForeignItems.
	Foreign int64 `json:"foreign"`
	// ForeignItems lists the files or objects in the store's namespace
	// that are not part of its layout (code foreign), by Path: never read
	// as versions, never guessed at, never counted as corrupt.
	ForeignItems []CorruptItem `json:"foreign_items"`
	// Checkpoints counts the incremental snapshot manifests
	// (pkg/workspace/checkpoint) whose references were checked: in every
	// session scope that has them, whatever the sample.
	Checkpoints int64 `json:"checkpoints"`
	// BrokenCheckpoints counts CheckpointItems.
	BrokenCheckpoints int64 `json:"broken_checkpoints"`
	// CheckpointItems lists the broken checkpoints, by scope and manifest:
	// a manifest that does not decode, or a pack it names that is missing
	// or does not have the size and SHA-256 it recorded, with the
	// workspace paths that breaks (code corrupt_artifact). A manifest or
	// pack that could not be read is listed under UnreadableItems instead.
	CheckpointItems []CheckpointItem `json:"checkpoint_items"`
	// CheckpointNotes name the scopes whose checkpoints could not be
	// checked (their names do not list: the walk reports why).
	CheckpointNotes []string `json:"checkpoint_notes,omitempty"`
}

// CheckpointItem is a broken checkpoint of a session scope.
type CheckpointItem struct {
	Scope artifacts.Scope `json:"scope"`
	checkpoint.Finding
}

// verifyBatch is the most versions handed to a verify worker at once.
const verifyBatch = 32

type verifyJob struct {
	scope artifacts.Scope
	rec   artifacts.Record
}

// Verify reads published versions through st (which must implement
// artifacts.Walker) and checks each record and the size and SHA-256 of
// each payload, streaming. Corrupt versions are reported in the report,
// not as an error; the error is for failures that stopped the check.
func Verify(ctx context.Context, st *artifacts.Store, opts VerifyOptions) (VerifyReport, error) {
	rep := VerifyReport{CorruptItems: []CorruptItem{}, UnreadableItems: []CorruptItem{}, ForeignItems: []CorruptItem{}, CheckpointItems: []CheckpointItem{}}
	if !st.CanWalk() {
		return rep, ErrNotWalker
	}
	if opts.Sample < 0 || opts.Sample > 100 {
		return rep, artifacts.Errorf(artifacts.CodeInvalidArgument, "verify", nil, "sample %v%% is not between 0 and 100", opts.Sample)
	}
	if opts.Sample == 0 {
		opts.Sample = 100
	}
	if opts.Seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		opts.Seed = binary.LittleEndian.Uint64(b[:]) | 1
	}
	if opts.Workers <= 0 {
		opts.Workers = max(2, 2*runtime.GOMAXPROCS(0))
	}
	rep.SamplePercent, rep.Seed = opts.Sample, opts.Seed
	var wantHash string
	if opts.Scope != nil {
		wantHash = opts.Scope.Hash()
	}

	canBroken, firstVersion := st.CanListBroken(), st.Capabilities().FirstVersion
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		corrupt  []CorruptItem
		unread   []CorruptItem
		foreign  []CorruptItem
		firstErr error
		checked  atomic.Int64
		bytes    atomic.Int64
		ckScopes []artifacts.Scope // session scopes holding checkpoints
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	// add files a problem under corrupt or unreadable by its code; a
	// corrupt version gets the command that deletes it (unless the layout
	// gave one, next) when its record decodes (artifacts delete plans from
	// the record) or when the store can plan a broken version bound to its
	// files (BrokenLister).
	add := func(scope *artifacts.Scope, name string, version int64, path, reason string, code artifacts.Code, decodes bool, next string) {
		it := CorruptItem{Scope: scope, Name: name, Version: version, Path: path, Reason: reason, Code: code, NextCommand: next}
		mu.Lock()
		defer mu.Unlock()
		if code == artifacts.CodePermission || code == artifacts.CodeIO {
			unread = append(unread, it)
			return
		}
		if code == artifacts.CodeForeign {
			foreign = append(foreign, it)
			return
		}
		if code == artifacts.CodeCorrupt && (decodes || canBroken && version >= firstVersion) && scope != nil && name != "" && version >= 0 && next == "" {
			it.NextCommand = DeleteCommand(opts.StoreArg, *scope, name, version)
		}
		corrupt = append(corrupt, it)
	}
	check := func(j verifyJob) {
		n, err := readVerified(ctx, st, j)
		bytes.Add(n)
		c := checked.Add(1)
		if opts.Progress != nil {
			opts.Progress(c, bytes.Load())
		}
		switch code := artifacts.CodeOf(err); {
		case err == nil:
		case code == artifacts.CodeCorrupt, code == artifacts.CodeUnsafeStore,
			code == artifacts.CodePermission, code == artifacts.CodeIO:
			scope := j.scope
			add(&scope, j.rec.Name, j.rec.Version, "", reasonOf(err), code, true, "")
		case code == artifacts.CodeNotFound:
			checked.Add(-1) // deleted since the walk
		default:
			fail(err)
		}
	}
	// Versions go to the workers in batches (at most verifyBatch): a
	// hand-off per version costs the scheduler more than opening and
	// hashing a small payload. At most 4*Workers batches wait.
	jobs := make(chan []verifyJob, 4*opts.Workers)
	var wg sync.WaitGroup
	for range opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range jobs {
				for _, j := range batch {
					if ctx.Err() != nil {
						break
					}
					check(j)
				}
			}
		}()
	}
	batch := make([]verifyJob, 0, verifyBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		select {
		case jobs <- batch:
			batch = make([]verifyJob, 0, verifyBatch)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	walkErr := st.Walk(ctx, func(u artifacts.ScopeUsage) error {
		if wantHash != "" && u.Hash != wantHash {
			return nil
		}
		// A scope emptied by deletes (only reservations left) is not
		// counted, as in listings and quota reports.
		// Objects that are not part of the layout belong to no scope.
		if slices.ContainsFunc(u.Names, func(n artifacts.NameUsage) bool {
			return len(n.Records) > 0 || slices.ContainsFunc(n.Problems, func(p artifacts.Problem) bool { return p.Code != artifacts.CodeForeign })
		}) {
			rep.Scopes++
		}
		var scope *artifacts.Scope
		if u.Known {
			s := u.Scope
			scope = &s
			if checkpoint.HasCheckpoints(u) {
				mu.Lock()
				ckScopes = append(ckScopes, s)
				mu.Unlock()
			}
		}
		for _, n := range u.Names {
			broken := map[int64]bool{}
			decodes := make(map[int64]bool, len(n.Records))
			for _, rec := range n.Records {
				decodes[rec.Version] = true
			}
			for _, p := range n.Problems {
				broken[p.Version] = true
				code := p.Code
				if code == "" {
					code = artifacts.CodeCorrupt
				}
				add(scope, n.Name, p.Version, p.Path, p.Reason, code, decodes[p.Version], p.NextCommand)
			}
			rep.Versions += int64(len(n.Records))
			for _, rec := range n.Records {
				if broken[rec.Version] {
					continue
				}
				if !picked(opts.Seed, opts.Sample, u.Hash, n.Hash, rec.Version) {
					continue
				}
				batch = append(batch, verifyJob{scope: rec.Scope, rec: rec})
				if len(batch) == verifyBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		return flush()
	})
	if walkErr == nil {
		walkErr = flush()
	}
	close(jobs)
	wg.Wait()
	rep.Checked, rep.Bytes = checked.Load(), bytes.Load()
	if firstErr == nil && walkErr == nil {
		var err error
		if corrupt, unread, err = verifyCheckpoints(ctx, st, ckScopes, &rep, corrupt, unread); err != nil {
			return rep, err
		}
	}
	slices.SortFunc(corrupt, compareItems)
	rep.CorruptItems = append(rep.CorruptItems, corrupt...)
	rep.Corrupt = int64(len(corrupt))
	slices.SortFunc(unread, compareItems)
	rep.UnreadableItems = append(rep.UnreadableItems, unread...)
	rep.Unreadable = int64(len(unread))
	slices.SortFunc(foreign, compareItems)
	rep.ForeignItems = append(rep.ForeignItems, foreign...)
	rep.Foreign = int64(len(foreign))
	if firstErr != nil {
		return rep, firstErr
	}
	if walkErr != nil {
		return rep, walkErr
	}
	return rep, nil
}

// verifyCheckpoints checks the references of every manifest of scopes
// (see checkpoint.ScopeRefs.Verify) into rep. A manifest already listed
// as corrupt (its payload failed its record) is not listed again; what
// could not be read goes with the unreadable versions.
func verifyCheckpoints(ctx context.Context, st *artifacts.Store, scopes []artifacts.Scope, rep *VerifyReport, corrupt, unread []CorruptItem) ([]CorruptItem, []CorruptItem, error) {
	slices.SortFunc(scopes, func(a, b artifacts.Scope) int { return strings.Compare(a.String(), b.String()) })
	for _, scope := range scopes {
		refs, err := checkpoint.ReadRefs(ctx, st, scope, zipsafe.Limits{})
		if err != nil {
			if ctx.Err() != nil {
				return corrupt, unread, err
			}
			rep.CheckpointNotes = append(rep.CheckpointNotes, fmt.Sprintf("%s: checkpoints not checked: %s", scope, artifacts.ReasonOf(err)))
			continue
		}
		rep.Checkpoints += int64(len(refs.Manifests))
		findings, err := refs.Verify(ctx, st)
		if err != nil {
			return corrupt, unread, err
		}
		for _, f := range findings {
			known := func(it CorruptItem) bool {
				return it.Scope != nil && *it.Scope == scope && it.Name == f.Manifest.Name && it.Version == f.Manifest.Version
			}
			switch {
			case f.Pack == nil && (slices.ContainsFunc(corrupt, known) || slices.ContainsFunc(unread, known)):
			case f.Code == artifacts.CodePermission || f.Code == artifacts.CodeIO:
				s := scope
				unread = append(unread, CorruptItem{Scope: &s, Name: f.Manifest.Name, Version: f.Manifest.Version, Reason: f.Reason, Code: f.Code})
			default:
				rep.CheckpointItems = append(rep.CheckpointItems, CheckpointItem{Scope: scope, Finding: f})
			}
		}
	}
	rep.BrokenCheckpoints = int64(len(rep.CheckpointItems))
	return corrupt, unread, nil
}

// readVerified reads one version to the end through the store's verified
// reader and returns the bytes read.
func readVerified(ctx context.Context, st *artifacts.Store, j verifyJob) (int64, error) {
	var r *artifacts.Reader
	var err error
	r, err = st.OpenPayload(ctx, j.rec) // the walk read the record
	if err != nil {
		return 0, err
	}
	defer r.Close()
	if r.Record().Digest != j.rec.Digest || r.Record().Size != j.rec.Size {
		// Replaced between the walk and the read: versions are immutable.
		return 0, artifacts.Errorf(artifacts.CodeCorrupt, "verify", nil, "record changed while it was being verified")
	}
	bufp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufp)
	return io.CopyBuffer(io.Discard, onlyReader{r}, *bufp)
}

// onlyReader hides a Reader's other methods so io.CopyBuffer uses the
// buffer it is given.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// reasonOf shortens an artifacts error to what went wrong.
func reasonOf(err error) string { return artifacts.ReasonOf(err) }

// picked decides whether a version is in the sample: a hash of the seed
// and the version's place, so the choice does not depend on walk order.
func picked(seed uint64, percent float64, scopeHash, nameHash string, version int64) bool {
	if percent >= 100 {
		return true
	}
	h := sha256.New()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(version))
	h.Write(b[:])
	h.Write([]byte(scopeHash))
	h.Write([]byte(nameHash))
	sum := h.Sum(nil)
	x := binary.LittleEndian.Uint64(sum[:8])
	return float64(x>>11)/float64(1<<53)*100 < percent
}

func compareItems(a, b CorruptItem) int {
	ka, kb := "", ""
	if a.Scope != nil {
		ka = a.Scope.String()
	}
	if b.Scope != nil {
		kb = b.Scope.String()
	}
	if c := strings.Compare(ka, kb); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	if a.Version != b.Version {
		return int(min(max(a.Version-b.Version, -1), 1))
	}
	return strings.Compare(a.Path, b.Path)
}
