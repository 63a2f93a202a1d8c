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
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// OpenFS opens a filesystem store rooted at root (the directory holding
// v1/). It is set by package cmd (cmd/stores.go) so that this package does
// not import the adapter; while nil, file stores are unsupported.
var OpenFS func(root string) (artifacts.Driver, error)

// OpenGCS opens a Google Cloud Storage store in bucket under prefix. It is
// set by package cmd (cmd/stores.go) from the GCS adapter; while nil, gs://
// stores are unsupported.
var OpenGCS func(ctx context.Context, bucket, prefix string) (artifacts.Driver, error)

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
	// OpenStore opens the store named by --store.
	OpenStore func(ctx context.Context) (*artifacts.Store, error)

	mu      sync.Mutex
	cfg     *Config
	logger  *slog.Logger
	closers []io.Closer
	cancel  context.CancelFunc
}

// NewFactory returns a Factory over ios with the real clock, a Config that
// fails until SetConfig is called, a Logger built from the Config, and an
// OpenStore that parses Config.Store and calls OpenFS or OpenGCS.
func NewFactory(ios *iostreams.IOStreams) *Factory {
	f := &Factory{IO: ios, Now: time.Now}
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
	f.OpenStore = f.openStore
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

func (f *Factory) openStore(ctx context.Context) (*artifacts.Store, error) {
	u, err := f.StoreURI()
	if err != nil {
		return nil, err
	}
	f.Logger().Debug("open store", "uri", u.String())
	var drv artifacts.Driver
	switch u.Scheme {
	case SchemeFile:
		if OpenFS == nil {
			return nil, CodedError(CodeUnsupportedStore, fmt.Errorf("file stores are not supported by this build"))
		}
		if cfg, cerr := f.Config(); cerr == nil && cfg.StoreDefault {
			// The embedded default store is made on first use.
			if err := os.MkdirAll(u.Root, 0o700); err != nil {
				return nil, fmt.Errorf("creating the default store %s: %w", u.Root, err)
			}
		}
		drv, err = OpenFS(u.Root)
	case SchemeGCS:
		if OpenGCS == nil {
			return nil, CodedError(CodeUnsupportedStore, fmt.Errorf("gs:// stores are not supported by this build"))
		}
		drv, err = OpenGCS(ctx, u.Bucket, u.Prefix)
	default:
		return nil, CodedError(CodeUnsupportedStore, fmt.Errorf("unsupported store %q", u.String()))
	}
	if err != nil {
		return nil, err
	}
	if c, ok := drv.(io.Closer); ok {
		f.mu.Lock()
		f.closers = append(f.closers, c)
		f.mu.Unlock()
	}
	return artifacts.NewStore(drv), nil
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
