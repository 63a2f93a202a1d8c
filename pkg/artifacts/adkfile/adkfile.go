// Package adkfile is the driver of the google-adk-file layout: the
// directory tree that Google ADK's FileArtifactService writes (ADK
// Python's `adk web`/`adk run` default under .adk/artifacts, and ADK JS).
// It has two variants:
//
//	ROOT/apps/{app}/users/{user}/sessions/{session}/artifacts/{name}/versions/{N}/{basename}
//	ROOT/apps/{app}/users/{user}/artifacts/{name without "user:"}/versions/{N}/{basename}
//
// (ADK Python, current), and the same without apps/{app} (ADK JS and ADK
// Python's older layout), where the app is stored nowhere and is a
// property of the store (Options.App). Beside every payload lies
// metadata.json (camelCase keys: fileName, mimeType, fileUri, version,
// canonicalUri, customMetadata, and createTime in ADK Python's). Versions
// are numbered from 0, the next one is the highest number found plus one,
// so a number freed by a delete of the highest version is handed out again.
// No digest is stored: reads check the payload's size only.
//
// Puts use the pending-directory protocol of newer ADK Python: reserve
// versions/.N.pending/ with an atomic mkdir, write the payload and
// metadata.json there and fsync them, then rename the directory to
// versions/N without replacing anything. A version whose directory lacks
// metadata.json (a save ADK JS wrote in place and was killed) is not
// published: ADK cannot load it, so neither is it listed here; Walk
// reports it as a problem, and Repair removes it past the grace period.
//
// Every file is reached through an os.Root on the store root, and every
// layout file is checked to be a regular file before it is opened, so that
// no name, symbolic link or named pipe found in the tree reads outside the
// root or blocks.
package adkfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// LayoutName is the name of the layout.
const LayoutName = "google-adk-file"

// DefaultApp is the app of a store without apps/ when none is given.
const DefaultApp = "default"

// Directory and file names of the layout.
const (
	AppsDir      = "apps"
	UsersDir     = "users"
	SessionsDir  = "sessions"
	ArtifactsDir = "artifacts"
	VersionsDir  = "versions"
	MetadataFile = "metadata.json"
	// UserPrefix marks a name of the user scope in ADK's API; the path
	// holds the name without it.
	UserPrefix = "user:"
)

// MaxMetadataFileBytes bounds the metadata.json the driver reads: a larger
// one is reported as corrupt, unread.
const MaxMetadataFileBytes = 1 << 20

// maxSegmentBytes is the longest path segment (a scope part, a part of a
// name) the file systems ADK writes to accept.
const maxSegmentBytes = 255

// maxPutAttempts bounds the version numbers a Put tries when other writers
// keep taking them.
const maxPutAttempts = 64

// Variant is which of the layout's two trees a store uses.
type Variant int

const (
	// VariantApps is ADK Python's current tree: ROOT/apps/{app}/users/….
	VariantApps Variant = iota
	// VariantUsers is ADK JS's and older ADK Python's tree: ROOT/users/…,
	// with no app stored.
	VariantUsers
)

// String names the variant by its top directory.
func (v Variant) String() string {
	if v == VariantUsers {
		return UsersDir + "/"
	}
	return AppsDir + "/"
}

// Options configure a Store.
type Options struct {
	// App is the app of a store without apps/ (ADK JS, older ADK Python):
	// every scope of such a store has this app. Default DefaultApp.
	App string
	// MaxArtifactBytes is the largest payload Put accepts (default
	// artifacts.DefaultMaxArtifact).
	MaxArtifactBytes int64
	// NewVariant is the tree a store with neither apps/ nor users/ gets on
	// its first Put (default VariantApps, ADK Python's current one).
	NewVariant Variant
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Store is a google-adk-file store. It implements artifacts.Driver,
// artifacts.Walker, artifacts.ScopeLister and artifacts.PayloadOpener. It
// is safe for concurrent use by many goroutines and processes (ADK's own
// writers included; see the package documentation for what they race on).
type Store struct {
	rootPath string
	root     *os.Root
	variant  Variant
	legacy   bool // an apps/ store that also holds an old-layout users/ tree
	app      string
	opts     Options
}

var (
	_ artifacts.Driver        = (*Store)(nil)
	_ artifacts.Walker        = (*Store)(nil)
	_ artifacts.ScopeLister   = (*Store)(nil)
	_ artifacts.PayloadOpener = (*Store)(nil)
	_ artifacts.ExactDeleter  = (*Store)(nil)
	_ artifacts.Repairer      = (*Store)(nil)
)

// Open returns the store at root, which must be an existing real
// directory. Its variant is apps/ when ROOT/apps exists, else users/ when
// ROOT/users exists, else opts.NewVariant. Open creates nothing.
func Open(root string, opts Options) (*Store, error) {
	const op = "open"
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, err, "store root %q", root)
	}
	if opts.App == "" {
		opts.App = DefaultApp
	}
	if err := checkSegment(opts.App); err != nil {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "store app %q %s", opts.App, err)
	}
	if opts.MaxArtifactBytes <= 0 {
		opts.MaxArtifactBytes = artifacts.DefaultMaxArtifact
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	fi, err := os.Lstat(abs)
	switch {
	case err != nil:
		return nil, fsErr(op, abs, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is a symbolic link, not a directory", abs)
	case !fi.IsDir():
		return nil, artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is not a directory", abs)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fsErr(op, abs, err)
	}
	s := &Store{rootPath: abs, root: r, app: opts.App, opts: opts, variant: opts.NewVariant}
	apps, err := s.dirExists(op, AppsDir)
	if err != nil {
		r.Close()
		return nil, err
	}
	users, err := s.dirExists(op, UsersDir)
	if err != nil {
		r.Close()
		return nil, err
	}
	switch {
	case apps:
		s.variant, s.legacy = VariantApps, users
	case users:
		s.variant = VariantUsers
	}
	return s, nil
}

// Close releases the store's root directory.
func (s *Store) Close() error { return s.root.Close() }

// Root returns the store's root directory.
func (s *Store) Root() string { return s.rootPath }

// Variant returns the tree the store uses.
func (s *Store) Variant() Variant { return s.variant }

// App returns the app of a store without apps/ (Options.App).
func (s *Store) App() string { return s.app }

// HasLegacyTree reports whether an apps/ store also holds an old-layout
// ROOT/users/ tree, which ADK Python no longer reads (see Repair).
func (s *Store) HasLegacyTree() bool { return s.legacy }

// Capabilities declares the layout's facts.
func (s *Store) Capabilities() artifacts.Capabilities {
	return artifacts.Capabilities{
		Name:             "adk-file",
		Layout:           LayoutName,
		MaxArtifactBytes: s.opts.MaxArtifactBytes,
		Durable:          true,
		ScopeKinds:       []artifacts.Kind{artifacts.KindUser, artifacts.KindSession},
		FirstVersion:     firstVersion,
		ReusesVersions:   true,
		NoCeilings:       true,
		StoresDigest:     false,
		MaxRecordBytes:   MaxMetadataFileBytes,
		MaxNameBytes:     artifacts.MaxNameBytes,
		// Ids and names are directory names, unescaped.
		UserNamePrefix:     UserPrefix,
		MaxSegmentBytes:    maxSegmentBytes,
		ScopePartForbidden: "/\\",
		NameForbidden:      "\\",
		ReservedSegments:   []string{VersionsDir, MetadataFile},
		PlainNames:         true,
		OnlyApp:            s.onlyApp(),
		// metadata.json keeps no size or digest: a payload's size is
		// the file's own.
		UncheckedPayloads: true,
	}
}

// onlyApp is the app of a users/ store (the store app): the only one it
// holds; "" for an apps/ store.
func (s *Store) onlyApp() string {
	if s.variant == VariantUsers {
		return s.app
	}
	return ""
}

// dirExists reports whether rel is a real directory; a symbolic link or
// another file there is CodeUnsafeStore.
func (s *Store) dirExists(op, rel string) (bool, error) {
	fi, err := s.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, readErr(op, s.abs(rel), err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return false, artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is a symbolic link, not a directory", s.abs(rel))
	case !fi.IsDir():
		return false, artifacts.Errorf(artifacts.CodeUnsafeStore, op, nil, "%s is not a directory", s.abs(rel))
	}
	return true, nil
}

// abs returns the absolute path of rel, for messages.
func (s *Store) abs(rel string) string { return filepath.Join(s.rootPath, filepath.FromSlash(rel)) }

// checkSegment checks that p can be one directory name of the tree.
func checkSegment(p string) error {
	switch {
	case p == "" || p == "." || p == "..":
		return fmt.Errorf("cannot be a directory name")
	case strings.ContainsAny(p, "/\\\x00"):
		return fmt.Errorf("contains a slash, backslash or NUL, which ADK's file layout would turn into more directories")
	case len(p) > maxSegmentBytes:
		return fmt.Errorf("is %d bytes, more than the %d a directory name can hold", len(p), maxSegmentBytes)
	case !utf8.ValidString(p):
		return fmt.Errorf("is not valid UTF-8")
	}
	return nil
}

// scopeDir returns the directory of scope's artifacts, relative to the
// root: .../artifacts. A scope the store cannot hold is CodeInvalidScope
// (its parts are no directory names) or, for an app other than the store's
// in a users/ store, CodeNotFound with found false.
func (s *Store) scopeDir(op string, scope artifacts.Scope) (string, error) {
	parts := []string{scope.App, scope.User}
	labels := []string{"app", "user"}
	if scope.Kind == artifacts.KindSession {
		parts = append(parts, scope.Session)
		labels = append(labels, "session")
	}
	for i, p := range parts {
		if err := checkSegment(p); err != nil {
			return "", artifacts.Errorf(artifacts.CodeInvalidScope, op, nil, "%s id %q %s", labels[i], p, err).With(scope, "", artifacts.NoVersion)
		}
	}
	var dir string
	switch s.variant {
	case VariantUsers:
		if scope.App != s.app {
			return "", &appError{scope: scope, app: s.app, op: op}
		}
		dir = path.Join(UsersDir, scope.User)
	default:
		dir = path.Join(AppsDir, scope.App, UsersDir, scope.User)
	}
	if scope.Kind == artifacts.KindSession {
		dir = path.Join(dir, SessionsDir, scope.Session)
	}
	return path.Join(dir, ArtifactsDir), nil
}

// appError is the error of a scope whose app is not the one a users/
// store holds.
type appError struct {
	scope artifacts.Scope
	app   string
	op    string
}

func (e *appError) Error() string { return e.err().Error() }

func (e *appError) err() *artifacts.Error {
	return artifacts.Errorf(artifacts.CodeNotFound, e.op, nil,
		"this store is ADK's file layout without apps/, which keeps no app: it holds the scopes of app %q only (the store app; set it with --store-app or store_app), not of app %q", e.app, e.scope.App).With(e.scope, "", artifacts.NoVersion)
}

func (e *appError) Unwrap() error { return e.err() }

// nameDir returns the directory of name in scope, relative to the root
// (…/artifacts/{name}), and the payload's file name. Names ADK would store
// elsewhere or could not tell apart are CodeInvalidName: in the user scope
// a name must start with "user:", in a session scope it must not; no
// segment may be "versions" or longer than a directory name, and the last
// may not be "metadata.json".
func (s *Store) nameDir(op string, scope artifacts.Scope, name string) (dir, base string, err error) {
	sd, err := s.scopeDir(op, scope)
	if err != nil {
		return "", "", err
	}
	rel, err := pathName(scope, name)
	if err != nil {
		return "", "", artifacts.Errorf(artifacts.CodeInvalidName, op, nil, "%s", err).With(scope, name, artifacts.NoVersion)
	}
	return path.Join(sd, rel), path.Base(rel), nil
}

// pathName returns the part of the path that name takes below artifacts/.
func pathName(scope artifacts.Scope, name string) (string, error) {
	rel := name
	hasPrefix := strings.HasPrefix(name, UserPrefix)
	switch {
	case scope.Kind == artifacts.KindUser && !hasPrefix:
		return "", fmt.Errorf("name %q of a user scope must start with %q, as ADK names user artifacts", name, UserPrefix)
	case scope.Kind == artifacts.KindUser:
		rel = strings.TrimPrefix(name, UserPrefix)
	case hasPrefix:
		return "", fmt.Errorf("name %q starts with %q, which ADK keeps for the user scope: give the user scope (no --session)", name, UserPrefix)
	}
	if rel == "" {
		return "", fmt.Errorf("name %q is empty after %q", name, UserPrefix)
	}
	segs := strings.Split(rel, "/")
	for _, seg := range segs {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return "", fmt.Errorf("name %q has an empty, %q or %q segment", name, ".", "..")
		case seg == VersionsDir:
			return "", fmt.Errorf("name %q has a %q segment, which ADK's file layout cannot tell apart from its version directories", name, VersionsDir)
		case len(seg) > maxSegmentBytes:
			return "", fmt.Errorf("name %q has a segment of %d bytes, more than the %d a directory name can hold", name, len(seg), maxSegmentBytes)
		case strings.ContainsAny(seg, "\\\x00"):
			return "", fmt.Errorf("name %q contains a backslash or NUL", name)
		}
	}
	if segs[len(segs)-1] == MetadataFile {
		return "", fmt.Errorf("name %q ends in %q, the file ADK keeps beside every payload", name, MetadataFile)
	}
	return rel, nil
}

// apiName returns the name ADK's API gives the artifact at rel (the path
// below artifacts/) in a scope of kind.
func apiName(kind artifacts.Kind, rel string) string {
	if kind == artifacts.KindUser {
		return UserPrefix + rel
	}
	return rel
}

// fsErr classifies an operating-system error about path.
func fsErr(op, p string, err error) *artifacts.Error {
	code := artifacts.CodeIO
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = artifacts.CodeNotFound
	case errors.Is(err, fs.ErrPermission):
		code = artifacts.CodePermission
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return artifacts.Errorf(code, op, err, "%s", p)
}

// readErr is fsErr for a file or directory that could not be read: its
// message says so ("could not read PATH: permission denied").
func readErr(op, p string, err error) *artifacts.Error {
	e := fsErr(op, p, err)
	if e.Code != artifacts.CodeNotFound {
		e.Msg = "could not read " + p
	}
	return e
}

// CheckApp checks that app can be the store app of a store without
// apps/: one directory name's worth of valid UTF-8.
func CheckApp(app string) error {
	if err := checkSegment(app); err != nil {
		return fmt.Errorf("app %q %v", app, err)
	}
	return nil
}
