package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/zipsafe"
)

// MaxFindingPaths is the most workspace paths a Finding lists; PathCount
// counts them all.
const MaxFindingPaths = 100

// ScopeRefs is what the checkpoints of one session scope are made of, as
// read from the store by ReadRefs: every manifest and pack version and
// which manifests name each pack. It is what the maintenance commands
// (verify, repair, prune, quota) need to know of the format.
type ScopeRefs struct {
	// Scope is the session scope.
	Scope artifacts.Scope
	// Manifests are the records of every manifest version read, oldest
	// first.
	Manifests []artifacts.Record
	// Packs are the records of every pack version, by generation and
	// version.
	Packs []artifacts.Record
	// Loaded holds the manifests read and checked (see Decode), by
	// reference.
	Loaded map[Ref]*Manifest
	// Unread maps a manifest that could not be read or does not decode to
	// the error. While it is not empty, which packs are referenced is not
	// known: nothing may be removed as unreferenced.
	Unread map[Ref]error
	// users maps each pack a loaded manifest names to those manifests.
	users map[Ref][]Ref
}

// ReadRefs lists the checkpoints of scope in st and reads every manifest
// as hostile input (Decode, with lim; zero fields: zipsafe's defaults).
// A manifest deleted while it is read (retention) is left out; one that
// does not read or decode goes into Unread. Listing errors are returned.
func ReadRefs(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, lim zipsafe.Limits) (*ScopeRefs, error) {
	c, err := New(Options{Store: st, Scope: scope, Limits: lim})
	if err != nil {
		return nil, err
	}
	ms, err := listGens(ctx, st, scope, ManifestName, kindManifest)
	if err != nil {
		return nil, err
	}
	// Packs are listed after manifests: a manifest is published only
	// after its packs, so every pack a listed manifest names was
	// published before this listing began.
	ps, err := listGens(ctx, st, scope, PackName, kindPack)
	if err != nil {
		return nil, err
	}
	r := &ScopeRefs{Scope: scope, Loaded: map[Ref]*Manifest{}, Unread: map[Ref]error{}, users: map[Ref][]Ref{}}
	for _, l := range ms {
		m, err := c.Load(ctx, l.Ref)
		switch {
		case artifacts.IsNotFound(err):
			continue // deleted meanwhile
		case err != nil && ctx.Err() != nil:
			return nil, err
		case err != nil:
			r.Unread[l.Ref] = err
		default:
			r.Loaded[l.Ref] = m
			for _, p := range m.Packs {
				r.users[p.Ref] = append(r.users[p.Ref], l.Ref)
			}
		}
		r.Manifests = append(r.Manifests, l.rec)
	}
	for _, l := range ps {
		r.Packs = append(r.Packs, l.rec)
	}
	return r, nil
}

// Users returns the manifests that name pack, oldest first.
func (r *ScopeRefs) Users(pack Ref) []Ref { return r.users[pack] }

// Unreferenced returns the records of the packs no manifest names, or
// nil when a manifest could not be read (then which packs are used is not
// known).
func (r *ScopeRefs) Unreferenced() []artifacts.Record {
	if len(r.Unread) > 0 {
		return nil
	}
	var out []artifacts.Record
	for _, p := range r.Packs {
		if len(r.users[Ref{p.Name, p.Version}]) == 0 {
			out = append(out, p)
		}
	}
	return out
}

// Finding is a broken checkpoint found by Verify: a manifest that does
// not read or decode, or a pack it names that is missing or is not the
// pack it recorded.
type Finding struct {
	// Manifest is the manifest whose checkpoint is broken.
	Manifest Ref `json:"manifest"`
	// Pack is the pack in question; nil when the manifest itself does not
	// read or decode.
	Pack *Ref `json:"pack,omitempty"`
	// Code is corrupt_artifact, or permission_denied or io_error when
	// something could not be read (then it is not known to be broken).
	Code artifacts.Code `json:"code"`
	// Reason says what is wrong.
	Reason string `json:"reason"`
	// Paths are the files of the checkpoint the problem breaks (every file
	// with a blob in the pack), sorted, at most MaxFindingPaths of them;
	// PathCount counts them all. Empty when the manifest does not decode.
	Paths     []string `json:"paths"`
	PathCount int      `json:"path_count"`
}

// Verify checks the references of every manifest read: each pack it
// names exists with the size and SHA-256 it recorded (the layout's
// record; the payload's bytes are the record's business, checked by
// whoever reads them), so that each blob lies inside its pack. A pack
// missing from the listing is looked up again, and reported only when the
// manifest naming it still exists (retention deletes a manifest before
// the packs only it used). Findings are sorted by manifest, then pack;
// the error is for what stopped the check (a cancelled context).
func (r *ScopeRefs) Verify(ctx context.Context, st *artifacts.Store) ([]Finding, error) {
	recs := make(map[Ref]artifacts.Record, len(r.Packs))
	for _, p := range r.Packs {
		recs[Ref{p.Name, p.Version}] = p
	}
	var out []Finding
	for ref, err := range r.Unread {
		code := artifacts.CodeOf(err)
		if code != artifacts.CodePermission && code != artifacts.CodeIO {
			code = artifacts.CodeCorrupt
		}
		out = append(out, Finding{Manifest: ref, Code: code, Reason: "the manifest does not read: " + artifacts.ReasonOf(err), Paths: []string{}})
	}
	for ref, m := range r.Loaded {
		for i, p := range m.Packs {
			rec, ok := recs[p.Ref]
			if !ok {
				var err error
				rec, err = st.Stat(ctx, r.Scope, p.Name, p.Version)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if err != nil {
					if artifacts.IsNotFound(err) {
						if _, merr := st.Stat(ctx, r.Scope, ref.Name, ref.Version); artifacts.IsNotFound(merr) {
							continue // retention deleted both meanwhile
						}
					}
					f := packFinding(m, ref, i, artifacts.CodeCorrupt, fmt.Sprintf("pack %s is missing", p.Ref))
					if !artifacts.IsNotFound(err) {
						f.Code = artifacts.CodeOf(err)
						if f.Code != artifacts.CodePermission && f.Code != artifacts.CodeIO {
							f.Code = artifacts.CodeCorrupt
						}
						f.Reason = fmt.Sprintf("pack %s does not read: %s", p.Ref, artifacts.ReasonOf(err))
					}
					out = append(out, f)
					continue
				}
			}
			switch {
			case rec.Size != p.Size:
				past := 0
				for _, b := range m.Blobs {
					if b.Pack == i && b.Offset+b.Length > rec.Size {
						past++
					}
				}
				out = append(out, packFinding(m, ref, i, artifacts.CodeCorrupt, fmt.Sprintf(
					"pack %s holds %d bytes, the manifest recorded %d (%d of its blobs lie past the end)", p.Ref, rec.Size, p.Size, past)))
			case rec.Digest != "" && !strings.EqualFold(rec.Digest, p.SHA256):
				out = append(out, packFinding(m, ref, i, artifacts.CodeCorrupt, fmt.Sprintf(
					"pack %s has SHA-256 %s, the manifest recorded %s", p.Ref, rec.Digest, p.SHA256)))
			}
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		if c := strings.Compare(a.Manifest.String(), b.Manifest.String()); c != 0 {
			return c
		}
		var pa, pb string
		if a.Pack != nil {
			pa = a.Pack.String()
		}
		if b.Pack != nil {
			pb = b.Pack.String()
		}
		return strings.Compare(pa, pb)
	})
	return out, nil
}

// packFinding is a finding about pack index i of m, with the files that
// have a blob in it.
func packFinding(m *Manifest, ref Ref, i int, code artifacts.Code, reason string) Finding {
	p := m.Packs[i].Ref
	f := Finding{Manifest: ref, Pack: &p, Code: code, Reason: reason, Paths: []string{}}
	for _, e := range m.Entries {
		if slices.ContainsFunc(e.Blobs, func(bi int) bool { return m.Blobs[bi].Pack == i }) {
			f.PathCount++
			if len(f.Paths) < MaxFindingPaths {
				f.Paths = append(f.Paths, e.Path)
			}
		}
	}
	slices.Sort(f.Paths)
	return f
}

// IsManifest reports whether rec is a manifest version of the format: a
// generation of ManifestName carrying the format's kind.
func IsManifest(rec artifacts.Record) bool {
	return isName(rec.Name, ManifestName) && metaString(rec.Metadata, MetaKind) == kindManifest
}

// IsPack reports whether rec is a pack version of the format: a
// generation of PackName carrying the format's kind.
func IsPack(rec artifacts.Record) bool {
	return isName(rec.Name, PackName) && metaString(rec.Metadata, MetaKind) == kindPack
}

// HasCheckpoints reports whether a walked scope (artifacts.Store.Walk)
// is a session scope holding a manifest or pack version of the format.
func HasCheckpoints(u artifacts.ScopeUsage) bool {
	return u.Known && u.Scope.Kind == artifacts.KindSession && slices.ContainsFunc(u.Names, func(n artifacts.NameUsage) bool {
		return slices.ContainsFunc(n.Records, func(r artifacts.Record) bool { return IsManifest(r) || IsPack(r) })
	})
}
