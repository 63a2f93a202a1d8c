// Package cmdutil is the skeleton every agentstore command plugs into: the
// Factory of lazy dependencies, the global flags and their resolution
// (flag > environment > config file > default), scope flags, store URIs,
// error types with their exit statuses, error printing, and help.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
	"github.com/agentstore/agentstore/pkg/artifacts/adkgcs"
	"github.com/agentstore/agentstore/pkg/artifacts/fsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/gcsstore"
	"github.com/agentstore/agentstore/pkg/artifacts/shardedfs"
)

// Factory holds the dependencies of commands as lazy functions, so that a
// command only pays for (and can only fail on) what it uses, and tests can
// replace each one.
type Factory struct {
	// IO is the standard streams and their terminal and colour decisions.
	IO *iostreams.IOStreams
	// Config returns the resolved global settings. The root command
	// resolves them before any RunE runs.
	Config func() (*Config, error)
	// Now is the clock.
	Now func() time.Time
	// Logger returns the diagnostics logger (stderr; info level by
	// default, debug with -v, JSON lines with --log-format json; on a
	// terminal, sentences).
	Logger func() *slog.Logger
	// Stores opens store locations, detecting their layout (NewStores).
	Stores *artifacts.URLMux
	// OpenStore opens the store named by --store for reading: its layout
	// is detected (or forced by --layout), and nothing is created.
	OpenStore func(ctx context.Context) (*artifacts.Store, error)
	// CreateStore opens the store named by --store for a writing command:
	// as OpenStore, but a location that does not exist or is an empty
	// directory becomes a new store of --layout (default erlang-fs).
	CreateStore func(ctx context.Context) (*artifacts.Store, error)

	mu      sync.Mutex
	cfg     *Config
	logger  *slog.Logger
	closers []io.Closer
	cancel  context.CancelFunc
}

// NewStores returns the registry of store layouts of the command line:
// erlang-fs (the default for new stores), erlang-fs-sharded, erlang-gcs
// google-adk-gcs and google-adk-file (its store app DefaultApp). Adding a
// layout is one RegisterLayout line here.
func NewStores() *artifacts.URLMux {
	m, _ := newStores(nil)
	return m
}

// newStores is NewStores, also returning the storage client of the GCS
// layouts (one, shared by the gs:// Inspector and both layouts' detection,
// and taken over by the store opened), which Cleanup closes when no store
// took it. storeApp, when not nil, gives the store app of google-adk-file
// stores as they are opened (--store-app).
func newStores(storeApp func() string) (*artifacts.URLMux, io.Closer) {
	m := &artifacts.URLMux{}
	client := &gcsstore.LazyClient{}
	gcs := gcsstore.NewLayoutClient(gcsstore.Options{}, client)
	m.RegisterScheme(artifacts.SchemeFile, artifacts.InspectDir)
	m.RegisterScheme(artifacts.SchemeGCS, gcs.Inspect)
	m.RegisterLayout(fsstore.NewLayout(fsstore.Options{}))
	m.RegisterLayout(shardedfs.NewLayout(shardedfs.Options{}))
	m.RegisterLayout(gcs)
	m.RegisterLayout(adkgcs.NewLayoutClient(adkgcs.Options{}, client))
	m.RegisterLayout(adkfile.NewLayout(adkfile.LayoutOptions{App: storeApp}))
	return m, client
}

// NewFactory returns a Factory over ios with the real clock, a Config that
// fails until SetConfig is called, a Logger built from the Config, the
// layouts of NewStores, and OpenStore and CreateStore over them.
func NewFactory(ios *iostreams.IOStreams) *Factory {
	f := &Factory{IO: ios, Now: time.Now}
	stores, gcs := newStores(func() string {
		if cfg, err := f.Config(); err == nil {
			return cfg.StoreApp
		}
		return ""
	})
	f.Stores, f.closers = stores, []io.Closer{gcs}
	f.Config = func() (*Config, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.cfg == nil {
			return nil, CodedError(CodeConfigError, errors.New("configuration not loaded"))
		}
		return f.cfg, nil
	}
	// On a terminal, diagnostics are sentences (see NewTerminalHandler).
	f.Logger = func() *slog.Logger {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.logger == nil {
			f.logger = NewLogger(ios.ErrOut, f.cfg)
			if ios.IsStderrTTY() && (f.cfg == nil || f.cfg.LogFormat != LogJSON) {
				f.logger = slog.New(NewTerminalHandler(ios.ErrOut, f.cfg != nil && f.cfg.Verbose))
			}
		}
		return f.logger
	}
	f.OpenStore = func(ctx context.Context) (*artifacts.Store, error) { return f.openStore(ctx, false) }
	f.CreateStore = func(ctx context.Context) (*artifacts.Store, error) { return f.openStore(ctx, true) }
	return f
}

// SetConfig installs the resolved settings: it applies --no-color to IO and
// rebuilds the logger on next use.
func (f *Factory) SetConfig(cfg *Config) {
	f.mu.Lock()
	f.cfg, f.logger = cfg, nil
	f.mu.Unlock()
	f.IO.SetColorDisabled(cfg.NoColor)
}

// Setup resolves the global settings from cmd's flags, the environment and
// the config file, installs them with SetConfig, and gives cmd a context
// with the --timeout deadline. The root command's PersistentPreRunE calls
// it; Cleanup releases what it set up.
//
// When tolerant is true (help, version, completion: commands that must
// work even with a broken config file) a config file that cannot be used
// is ignored with a warning on stderr, and the settings come from flags,
// the environment and defaults.
func (f *Factory) Setup(cmd *cobra.Command, tolerant bool) error {
	opts := LoadOptions{Flags: cmd.Flags(), StdoutTTY: f.IO.IsStdoutTTY()}
	cfg, err := LoadConfig(opts)
	if fileErr := err; err != nil && tolerant && ErrorCode(err) == CodeConfigError {
		opts.SkipFile = true
		if cfg, err = LoadConfig(opts); err == nil {
			cfg.FileError = fileErr
			fmt.Fprintf(f.IO.ErrOut, "agentstore: warning: %v\nagentstore: warning: the config file is ignored for %q\n", fileErr, cmd.CommandPath())
		}
	}
	if err != nil {
		return err
	}
	f.SetConfig(cfg)
	log := f.Logger()
	if cfg.ConfigFile != "" {
		log.Debug("read config file", "path", cfg.ConfigFile)
	}
	if cfg.Timeout > 0 {
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		f.mu.Lock()
		f.cancel = cancel
		f.mu.Unlock()
		cmd.SetContext(ctx)
	}
	return nil
}

// Cleanup cancels the --timeout context and closes the stores OpenStore
// opened that implement io.Closer. Main calls it after the command ran.
func (f *Factory) Cleanup() {
	f.mu.Lock()
	cancel, closers := f.cancel, f.closers
	f.cancel, f.closers = nil, nil
	f.mu.Unlock()
	for _, c := range closers {
		_ = c.Close()
	}
	if cancel != nil {
		cancel()
	}
}

// StoreURI returns the parsed --store value; no store configured is a
// usage error.
func (f *Factory) StoreURI() (StoreURI, error) {
	cfg, err := f.Config()
	if err != nil {
		return StoreURI{}, err
	}
	if cfg.Store == "" {
		return StoreURI{}, Usagef("no store given: use --store URI or set %s", EnvVar(KeyStore))
	}
	return ParseStoreURI(cfg.Store)
}

func (f *Factory) openStore(ctx context.Context, create bool) (*artifacts.Store, error) {
	u, err := f.StoreURI()
	if err != nil {
		return nil, err
	}
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	f.Logger().Debug("open store", "uri", u.String(), "layout", cfg.Layout, "create", create)
	o, err := f.Stores.OpenLocation(ctx, u, artifacts.OpenOptions{Layout: cfg.Layout, Create: create})
	if err != nil {
		return nil, openError(err, cfg)
	}
	f.Logger().Debug("opened store", "uri", u.String(), "layout", o.Layout)
	if c, ok := o.Driver.(io.Closer); ok {
		f.mu.Lock()
		f.closers = append(f.closers, c)
		f.mu.Unlock()
	}
	return o.Store, nil
}

// openError words an error of opening a store for the operator: the
// message without the package's prefix, a bad --layout as a usage error,
// and for the default store a hint to name one.
func openError(err error, cfg *Config) error {
	var e *artifacts.Error
	if !errors.As(err, &e) || e.Op != "open" {
		return err
	}
	msg := e.Msg
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if cfg.StoreDefault && (e.Code == artifacts.CodeNotFound || e.Code == artifacts.CodeUnknownLayout) {
		msg += fmt.Sprintf(" (this is the default store: give --store or set %s)", EnvVar(KeyStore))
	}
	if e.Code == artifacts.CodeInvalidArgument {
		return &UsageError{Err: errors.New(msg)}
	}
	return CodedError(string(e.Code), errors.New(msg))
}

// NewLogger returns the diagnostics logger for cfg writing to w: level
// info (warnings, and events an operator must be able to trace, such as
// a stale lock taken over), or debug with Verbose; text, or JSON lines with LogFormat "json".
// A nil cfg gives the warn-level text logger.
func NewLogger(w io.Writer, cfg *Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if cfg != nil && cfg.Verbose {
		opts.Level = slog.LevelDebug
	}
	if cfg != nil && cfg.LogFormat == LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
