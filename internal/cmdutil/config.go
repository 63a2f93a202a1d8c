package cmdutil

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Output formats accepted by -o/--output.
const (
	OutputTable      = "table"
	OutputJSON       = "json"
	OutputPrometheus = "prometheus"
)

// Log formats accepted by --log-format.
const (
	LogText = "text"
	LogJSON = "json"
)

// EnvPrefix is the prefix of the environment variables that set the global
// flags: AGENTSTORE_STORE, AGENTSTORE_NO_COLOR, ...
const EnvPrefix = "AGENTSTORE"

// Keys of the global settings: flag names, config-file keys, and (upper
// case, '-' as '_', prefixed with AGENTSTORE_) environment variables.
const (
	KeyStore     = "store"
	KeyLayout    = "layout"
	KeyScratch   = "scratch"
	KeyConfig    = "config"
	KeyOutput    = "output"
	KeyNoColor   = "no-color"
	KeyTimeout   = "timeout"
	KeyVerbose   = "verbose"
	KeyLogFormat = "log-format"
)

// fileKeys are the keys a config file may hold.
var fileKeys = []string{KeyStore, KeyLayout, KeyScratch, KeyOutput, KeyNoColor, KeyTimeout, KeyVerbose, KeyLogFormat}

// Config is the resolved global settings of one invocation.
type Config struct {
	// Store is the --store URI as given; parse it with ParseStoreURI.
	Store string
	// Layout is the --layout name as given: the layout to open the store
	// as instead of detecting it, and to create a new store in; "" to
	// detect (and create erlang-fs).
	Layout string
	// Scratch is the absolute scratch root, or "" when not set.
	Scratch string
	// Output is OutputTable, OutputJSON or OutputPrometheus.
	Output string
	// NoColor is --no-color (NO_COLOR is handled by IOStreams).
	NoColor bool
	// Timeout is the deadline of the whole command; 0 means none.
	Timeout time.Duration
	// Verbose turns on debug diagnostics.
	Verbose bool
	// LogFormat is LogText or LogJSON.
	LogFormat string
	// ConfigFile is the config file that was read, or "" when none was.
	ConfigFile string
	// StoreDefault is true when no store was configured and Store is the
	// default, a local directory under DefaultDataDir. Only writing
	// commands create it; there is none when DefaultDataDir is "".
	StoreDefault bool
	// ScratchDefault is the same for Scratch.
	ScratchDefault bool
}

// DefaultDataDir returns the directory that holds the default store and
// scratch root: $XDG_DATA_HOME/agentstore, XDG_DATA_HOME defaulting to
// ~/.local/share. It returns "" when neither XDG_DATA_HOME (absolute) nor
// a home directory is set: there is no default then, never one under a
// shared temporary directory.
func DefaultDataDir() string {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil || !filepath.IsAbs(home) {
			return ""
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "agentstore")
}

// JSON reports whether the output format is JSON.
func (c *Config) JSON() bool { return c != nil && c.Output == OutputJSON }

// EnvVar returns the environment variable of a key: AGENTSTORE_NO_COLOR
// for "no-color".
func EnvVar(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// AddGlobalFlags registers the global flags of cli.md on fs (the root
// command's persistent flags).
func AddGlobalFlags(fs *pflag.FlagSet) {
	fs.String(KeyStore, "", "artifact store: a directory, file:///DIR or gs://BUCKET[/PREFIX] ($"+EnvVar(KeyStore)+"; default $XDG_DATA_HOME/agentstore/store, none without a home directory)")
	fs.String(KeyLayout, "", "open the store as this layout instead of detecting it, and create new stores in it (see 'agentstore layouts'; $"+EnvVar(KeyLayout)+"; default: detect, erlang-fs for new stores)")
	fs.String(KeyScratch, "", "root of the per-session scratch workspaces ($"+EnvVar(KeyScratch)+"; default $XDG_DATA_HOME/agentstore/scratch)")
	fs.String(KeyConfig, "", "YAML config file (default $XDG_CONFIG_HOME/agentstore/config.yaml, then /etc/agentstore/config.yaml)")
	fs.StringP(KeyOutput, "o", "", "output format: table or json (default table on a terminal, json otherwise)")
	fs.Bool(KeyNoColor, false, "disable colour (also when NO_COLOR is set or stdout is not a terminal)")
	fs.Duration(KeyTimeout, 0, "deadline for the whole command, e.g. 30s or 5m (0: none)")
	fs.BoolP(KeyVerbose, "v", false, "print debug diagnostics on stderr")
	fs.String(KeyLogFormat, LogText, "diagnostics format on stderr: text or json")
}

// RegisterGlobalCompletions adds shell completions for the values of the
// global flags to cmd (the root command).
func RegisterGlobalCompletions(cmd *cobra.Command) {
	fixed := func(vals ...string) cobra.CompletionFunc {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return vals, cobra.ShellCompDirectiveNoFileComp
		}
	}
	_ = cmd.RegisterFlagCompletionFunc(KeyOutput, fixed(OutputTable, OutputJSON, OutputPrometheus))
	_ = cmd.RegisterFlagCompletionFunc(KeyLogFormat, fixed(LogText, LogJSON))
	_ = cmd.RegisterFlagCompletionFunc(KeyLayout, fixed(NewStores().LayoutNames()...))
	_ = cmd.MarkPersistentFlagDirname(KeyScratch)
	_ = cmd.MarkPersistentFlagFilename(KeyConfig, "yaml", "yml")
}

// LoadOptions are the inputs of LoadConfig besides the environment.
type LoadOptions struct {
	// Flags is the parsed flag set holding the global flags.
	Flags *pflag.FlagSet
	// StdoutTTY decides the default output format.
	StdoutTTY bool
	// DefaultFiles overrides the default config file search list; nil
	// means DefaultConfigFiles().
	DefaultFiles []string
}

// DefaultConfigFiles returns the config files searched when neither
// --config nor AGENTSTORE_CONFIG is given, in order:
// $XDG_CONFIG_HOME/agentstore/config.yaml (XDG_CONFIG_HOME defaulting to
// ~/.config), then /etc/agentstore/config.yaml.
func DefaultConfigFiles() []string {
	var files []string
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".config")
		} else {
			dir = ""
		}
	}
	if dir != "" {
		files = append(files, filepath.Join(dir, "agentstore", "config.yaml"))
	}
	return append(files, filepath.Join(string(filepath.Separator), "etc", "agentstore", "config.yaml"))
}

func configErr(format string, args ...any) error {
	return &UsageError{Code: CodeConfigError, Err: fmt.Errorf(format, args...)}
}

// LoadConfig resolves the global settings with viper. Precedence: flag,
// then environment (AGENTSTORE_*), then config file, then default. The
// config file is --config (or AGENTSTORE_CONFIG), which must exist, else
// the first existing file of the default list. An unreadable or
// unparsable file, an unknown key, or a bad value is a *UsageError (exit
// status 2).
func LoadConfig(opts LoadOptions) (*Config, error) {
	v := viper.New()
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	for _, key := range append([]string{KeyConfig}, fileKeys...) {
		if err := v.BindEnv(key); err != nil {
			return nil, err
		}
		if fl := opts.Flags.Lookup(key); fl != nil {
			if err := v.BindPFlag(key, fl); err != nil {
				return nil, err
			}
		}
	}

	cfg := &Config{}
	path, explicit := v.GetString(KeyConfig), true
	if path == "" {
		explicit = false
		files := opts.DefaultFiles
		if files == nil {
			files = DefaultConfigFiles()
		}
		for _, f := range files {
			if _, err := os.Stat(f); err == nil {
				path = f
				break
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, configErr("config file %s: %v", f, err)
			}
		}
	}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && explicit {
				return nil, configErr("config file %s does not exist", path)
			}
			return nil, configErr("config file: %v", err)
		}
		if err := readConfigFile(v, path, data); err != nil {
			return nil, err
		}
		cfg.ConfigFile = path
	}

	var err error
	data := DefaultDataDir()
	if cfg.Store = v.GetString(KeyStore); cfg.Store == "" && data != "" {
		cfg.Store, cfg.StoreDefault = filepath.Join(data, "store"), true
	}
	cfg.Layout = strings.TrimSpace(v.GetString(KeyLayout))
	if cfg.Scratch = v.GetString(KeyScratch); cfg.Scratch == "" {
		if data != "" {
			cfg.Scratch, cfg.ScratchDefault = filepath.Join(data, "scratch"), true
		}
	} else {
		if cfg.Scratch, err = filepath.Abs(cfg.Scratch); err != nil {
			return nil, Usagef("--scratch: %v", err)
		}
	}
	cfg.Output = v.GetString(KeyOutput)
	switch cfg.Output {
	case "":
		cfg.Output = OutputJSON
		if opts.StdoutTTY {
			cfg.Output = OutputTable
		}
	case OutputTable, OutputJSON, OutputPrometheus:
	default:
		return nil, Usagef("invalid output format %q (want table or json)", cfg.Output)
	}
	if cfg.NoColor, err = cast.ToBoolE(v.Get(KeyNoColor)); err != nil {
		return nil, Usagef("invalid --%s value %q (want true or false)", KeyNoColor, v.Get(KeyNoColor))
	}
	if cfg.Verbose, err = cast.ToBoolE(v.Get(KeyVerbose)); err != nil {
		return nil, Usagef("invalid --%s value %q (want true or false)", KeyVerbose, v.Get(KeyVerbose))
	}
	if cfg.Timeout, err = toDuration(v.Get(KeyTimeout)); err != nil {
		return nil, Usagef("invalid --%s value: %v", KeyTimeout, err)
	}
	cfg.LogFormat = v.GetString(KeyLogFormat)
	switch cfg.LogFormat {
	case "":
		cfg.LogFormat = LogText
	case LogText, LogJSON:
	default:
		return nil, Usagef("invalid log format %q (want text or json)", cfg.LogFormat)
	}
	return cfg, nil
}

// readConfigFile parses a YAML config file into v, refusing keys it does
// not know.
func readConfigFile(v *viper.Viper, path string, data []byte) error {
	fv := viper.New()
	fv.SetConfigType("yaml")
	if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
		return configErr("config file %s: %v", path, err)
	}
	var unknown []string
	for _, k := range fv.AllKeys() {
		if !slices.Contains(fileKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return configErr("config file %s: unknown key %s (known: %s)",
			path, strings.Join(quoteAll(unknown), ", "), strings.Join(fileKeys, ", "))
	}
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return configErr("config file %s: %v", path, err)
	}
	return nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// toDuration converts a timeout setting: a time.Duration (from the flag)
// or a Go duration string ("30s", "5m"); numbers without a unit are
// refused, and so are negative durations.
func toDuration(x any) (time.Duration, error) {
	var d time.Duration
	switch t := x.(type) {
	case nil:
		return 0, nil
	case time.Duration:
		d = t
	case string:
		if t == "" {
			return 0, nil
		}
		var err error
		if d, err = time.ParseDuration(strings.TrimSpace(t)); err != nil {
			return 0, fmt.Errorf("%q is not a duration like 30s or 5m", t)
		}
	default:
		return 0, fmt.Errorf("%v is not a duration like 30s or 5m (a unit is required)", x)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s is negative", d)
	}
	return d, nil
}
