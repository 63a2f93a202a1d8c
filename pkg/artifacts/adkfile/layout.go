package adkfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstore/agentstore/pkg/artifacts"
)

// LayoutOptions configure the layout's opener.
type LayoutOptions struct {
	// Options are those of every store it opens, except App.
	Options Options
	// App, when set, returns the store app at the time a store is opened
	// (the command line's --store-app, read after its flags are parsed);
	// empty means DefaultApp.
	App func() string
}

// layout is the google-adk-file opener.
type layout struct{ opts LayoutOptions }

// NewLayout returns the google-adk-file layout's opener for an
// artifacts.URLMux: a directory holding apps/ (ADK Python) or users/ (ADK
// JS, older ADK Python).
func NewLayout(opts LayoutOptions) artifacts.Layout { return layout{opts: opts} }

// Info describes the layout.
func (layout) Info() artifacts.LayoutInfo {
	return artifacts.LayoutInfo{
		Name:    LayoutName,
		Scheme:  artifacts.SchemeFile,
		Writer:  "Google ADK FileArtifactService (ADK Python, ADK JS)",
		Marker:  "ROOT holds " + AppsDir + "/ or " + UsersDir + "/",
		Example: "./.adk/artifacts",
		Facts: []string{
			"ROOT/apps/{app}/users/{user}/sessions/{session}/artifacts/{name}/versions/{N}/{basename} + metadata.json (ADK Python); ROOT/users/{user}/… without the app (ADK JS, older ADK Python: the app is --store-app)",
			"user-scope names start with user: (the path drops it); no app scope",
			"versions start at 0; the next is the highest plus one, so deleting the highest hands its number out again",
			"no digest is stored: reads check the payload's size only",
			"ADK JS writes in place: a killed save leaves a version without metadata.json (fs verify reports it, fs repair removes it past the grace period)",
			"no lifetime ceilings",
		},
	}
}

// Detect reports whether root holds apps/ or users/ as real directories.
// ROOT/apps/{app} of an ADK Python store also holds users/, but is the
// inside of a store, not one without apps/: a directory whose parent is
// named apps/ is not detected by its users/ (Guess names the store).
func (layout) Detect(_ context.Context, loc artifacts.Location) (bool, error) {
	if artifacts.IsDir(filepath.Join(loc.Root, AppsDir)) {
		return true, nil
	}
	return artifacts.IsDir(filepath.Join(loc.Root, UsersDir)) && filepath.Base(filepath.Dir(loc.Root)) != AppsDir, nil
}

// Guess recognises the inside of a store: a directory below ROOT/apps or
// ROOT/users of a tree whose levels match the layout's.
func (layout) Guess(_ context.Context, loc artifacts.Location) string {
	parts := strings.Split(filepath.ToSlash(loc.Root), "/")
	for i := len(parts) - 1; i >= 1; i-- {
		if parts[i] != AppsDir && parts[i] != UsersDir {
			continue
		}
		root := filepath.FromSlash(strings.Join(parts[:i], "/"))
		if root == "" {
			root = string(filepath.Separator)
		}
		if i+1 < len(parts) && parts[i+1] == "" {
			continue
		}
		// ROOT/users/{user}/… or ROOT/apps/{app}/users/…: the inside of
		// a store when the level names fit.
		rest := parts[i+1:]
		if parts[i] == AppsDir && len(rest) >= 2 && rest[1] != UsersDir {
			continue
		}
		if parts[i] == UsersDir && len(rest) >= 2 && rest[1] != SessionsDir && rest[1] != ArtifactsDir {
			continue
		}
		if parts[i] == UsersDir && i >= 2 && parts[i-2] == AppsDir {
			root = filepath.FromSlash(strings.Join(parts[:i-2], "/"))
		}
		if root == "" {
			root = string(filepath.Separator)
		}
		return fmt.Sprintf("this looks like the inside of an ADK file store: use --store %s, the directory that holds %s/ or %s/", root, AppsDir, UsersDir)
	}
	return ""
}

// Open opens the store at loc.Root; with create a missing root is made
// (0755) and the tree follows with the first put.
func (l layout) Open(_ context.Context, loc artifacts.Location, create bool) (artifacts.Driver, error) {
	opts := l.opts.Options
	if l.opts.App != nil {
		opts.App = l.opts.App()
	}
	if create {
		if err := os.MkdirAll(loc.Root, dirMode); err != nil {
			code := artifacts.CodeIO
			if errors.Is(err, fs.ErrPermission) {
				code = artifacts.CodePermission
			}
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, artifacts.Errorf(code, "open", nil, "cannot create the store directory %s: %v", loc.Root, err)
		}
	}
	return Open(loc.Root, opts)
}
