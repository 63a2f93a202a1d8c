package checkpoint

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// The artifact names of the format, in the session scope. Generation 1
// of each is the bare name; generation g >= 2 is the name followed by "."
// and g ("workspace.manifest.2").
const (
	ManifestName = "workspace.manifest"
	PackName     = "workspace.pack"
)

// Metadata keys and values every manifest and pack version carries, as
// strings (every layout keeps strings).
const (
	// MetaKind is "manifest/1" or "pack/1": the version is part of the
	// format. Versions of the names without it are not read.
	MetaKind = "agentstore_checkpoint"
	// MetaParent is the parent manifest (NAME@VERSION) of a manifest, ""
	// for none.
	MetaParent = "parent"
	// MetaSeq is a manifest's seq, in decimal.
	MetaSeq = "seq"

	kindManifest = "manifest/1"
	kindPack     = "pack/1"
)

// MIME types of the format's artifacts.
const (
	ManifestMIMEType = "application/vnd.agentstore.manifest+json+zstd"
	PackMIMEType     = "application/vnd.agentstore.pack"
)

// GenName returns the name of generation gen of base (ManifestName or
// PackName).
func GenName(base string, gen int) string {
	if gen <= 1 {
		return base
	}
	return base + "." + strconv.Itoa(gen)
}

// ParseGen returns the generation of name, a name of base's generations,
// and whether it is one.
func ParseGen(name, base string) (int, bool) {
	if name == base {
		return 1, true
	}
	rest, ok := strings.CutPrefix(name, base+".")
	if !ok || rest == "" || rest[0] == '0' || len(rest) > 9 {
		return 0, false
	}
	g, err := strconv.Atoi(rest)
	if err != nil || g < 2 || strconv.Itoa(g) != rest {
		return 0, false
	}
	return g, true
}

func isName(name, base string) bool {
	_, ok := ParseGen(name, base)
	return ok
}

// IsFormatName reports whether name is one of the format's artifact
// names (a generation of ManifestName or PackName).
func IsFormatName(name string) bool { return isName(name, ManifestName) || isName(name, PackName) }

// listed is one published version of a generation of a name.
type listed struct {
	Ref
	gen    int
	rec    artifacts.Record
	parent string // MetaParent
}

// less orders versions of the generations of one name: by generation,
// then version.
func (a listed) cmp(b listed) int {
	if c := cmp.Compare(a.gen, b.gen); c != 0 {
		return c
	}
	return cmp.Compare(a.Version, b.Version)
}

// genNames returns the names of base's generations that have a
// published version in scope, by ascending generation.
func genNames(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, base string) ([]string, error) {
	var names []string
	// The cursor is exclusive: start just before base, which sorts right
	// after its own prefix.
	cursor := base[:len(base)-1]
	for {
		page, err := st.ListNames(ctx, scope, artifacts.ListOptions{Cursor: cursor, Limit: st.Capabilities().MaxPageLimit})
		if artifacts.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if isName(it.Name, base) {
				names = append(names, it.Name)
			} else if it.Name > base && !strings.HasPrefix(it.Name, base) {
				page.NextCursor = ""
				break
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	slices.SortFunc(names, func(a, b string) int {
		ga, _ := ParseGen(a, base)
		gb, _ := ParseGen(b, base)
		return cmp.Compare(ga, gb)
	})
	return names, nil
}

// listGens returns every published version of base's generations that
// carries the format's kind, in order (see listed.cmp).
func listGens(ctx context.Context, st *artifacts.Store, scope artifacts.Scope, base, kind string) ([]listed, error) {
	names, err := genNames(ctx, st, scope, base)
	if err != nil {
		return nil, err
	}
	var out []listed
	for _, name := range names {
		gen, _ := ParseGen(name, base)
		cursor := ""
		for {
			page, err := st.ListVersions(ctx, scope, name, artifacts.ListOptions{Cursor: cursor, Limit: st.Capabilities().MaxPageLimit})
			if artifacts.IsNotFound(err) {
				break
			}
			if err != nil {
				return nil, err
			}
			for _, rec := range page.Items {
				if metaString(rec.Metadata, MetaKind) != kind {
					continue
				}
				out = append(out, listed{Ref: Ref{rec.Name, rec.Version}, gen: gen, rec: rec, parent: metaString(rec.Metadata, MetaParent)})
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
	}
	slices.SortFunc(out, listed.cmp)
	return out, nil
}

func metaString(md artifacts.Metadata, key string) string {
	s, _ := md[key].(string)
	return s
}
