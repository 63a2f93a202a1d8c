package cmdutil

import (
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
	"go.yaml.in/yaml/v3"

	"github.com/agentstore/agentstore/internal/duration"
	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/pkg/artifacts"
	"github.com/agentstore/agentstore/pkg/artifacts/adkfile"
)

// Output formats accepted by -o/--output.
const (
	OutputTable      = "table"
	OutputJSON       = "json"
	OutputPrometheus = "prometheus"
	// OutputWide is a table with every column; only commands whose tables
	// drop columns to fit 80 columns take it (quota report).
	OutputWide = "wide"
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
	// KeyStoreApp is the app of a google-adk-file store without apps/
	// (ADK JS, older ADK Python), which stores no app. The config file
	// also takes it as store_app.
	KeyStoreApp = "store-app"
	// KeySweepExclude lists the patterns of scratch-root entries "ws
	// sweep" leaves alone (its --exclude; a list in the config file,
	// space-separated in the environment).
	KeySweepExclude = "sweep-exclude"
)

// fileKeys are the keys a config file may hold.
// MaxConfigBytes is the largest config file read: a larger one is refused.
const MaxConfigBytes = 1 << 20

var fileKeys = []string{KeyStore, KeyLayout, KeyStoreApp, KeyScratch, KeyOutput, KeyNoColor, KeyTimeout, KeyVerbose, KeyLogFormat, KeySweepExclude}

// storeAppAlias is the config-file spelling of KeyStoreApp that ADK's
// documentation uses.
const storeAppAlias = "store_app"

// commandKeys are the keys commands registered with RegisterConfigKeys.
var commandKeys []string

// RegisterConfigKeys makes a command's flags config keys too: each key
// ("mcp.profile") may be set in the config file (under "mcp:" as
// "profile:") and by its environment variable (AGENTSTORE_MCP_PROFILE).
// LoadConfig puts the values set that way in Config.Values; the command
// applies them to the flags not given on the command line (see
// ApplyConfigKeys). Call it from an init function.
func RegisterConfigKeys(keys ...string) { commandKeys = append(commandKeys, keys...) }

// commandEnvVar is the environment variable of a command key.
func commandEnvVar(key string) string { return EnvVar(strings.ReplaceAll(key, ".", "_")) }

// Config is the resolved global settings of one invocation.
type Config struct {
	// Store is the --store URI as given; parse it with ParseStoreURI.
	Store string
	// Layout is the --layout name as given: the layout to open the store
	// as instead of detecting it, and to create a new store in; "" to
	// detect (and create erlang-fs).
	Layout string
	// StoreApp is the app of a google-adk-file store without apps/ (ADK
	// JS, older ADK Python): the store keeps no app, so every scope read
	// or written there has this one. Default adkfile.DefaultApp.
	StoreApp string
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
	// SweepExclude is the sweep-exclude setting: patterns of scratch-root
	// entry names "ws sweep" leaves alone, besides its --exclude flags.
	SweepExclude []string
	// Origins says, for each key of fileKeys, where its value came from.
	Origins map[string]Origin
	// FileError is why the config file was ignored, when a command that
	// must work regardless (help, version, completion, doctor) loaded
	// the settings without it; nil otherwise.
	FileError error
	// Values holds the command keys (RegisterConfigKeys) set in the
	// environment or the config file; nil when none is.
	Values *KeyValues
}

// Origin kinds: where a setting's value came from.
const (
	OriginFlag    = "flag"
	OriginEnv     = "env"
	OriginFile    = "file"
	OriginDefault = "default"
)

// Origin is where one setting's value came from.
type Origin struct {
	// Kind is OriginFlag, OriginEnv, OriginFile or OriginDefault.
	Kind string `json:"kind"`
	// Where names the flag (--store), the environment variable
	// (AGENTSTORE_STORE) or the config file; empty for a default.
	Where string `json:"where,omitempty"`
}

// String describes the origin: "flag --store", "environment
// AGENTSTORE_STORE", "config file /etc/agentstore/config.yaml", "default".
func (o Origin) String() string {
	switch o.Kind {
	case OriginFlag:
		return "flag " + o.Where
	case OriginEnv:
		return "environment " + o.Where
	case OriginFile:
		return "config file " + o.Where
	}
	return "default"
}

// Origin returns where the setting key came from (a default when unknown).
func (c *Config) Origin(key string) Origin {
	if o, ok := c.Origins[key]; ok {
		return o
	}
	return Origin{Kind: OriginDefault}
}

// KeyValues maps command keys to their values.
type KeyValues map[string]string

// ApplyConfigKeys sets each flag of cmd named in keys (key prefix + "." +
// flag name) that was not given on the command line to its value from the
// environment or the config file. A bad value is a usage error naming its
// source.
func ApplyConfigKeys(cmd *cobra.Command, cfg *Config, prefix string) error {
	if cfg.Values == nil {
		return nil
	}
	for key, val := range *cfg.Values {
		name, ok := strings.CutPrefix(key, prefix+".")
		if !ok {
			continue
		}
		fl := cmd.Flags().Lookup(name)
		if fl == nil || fl.Changed {
			continue
		}
		if err := cmd.Flags().Set(name, val); err != nil {
			return Usagef("config key %s (or $%s): %q is not a valid --%s value (%s)", key, commandEnvVar(key), val, name, fl.Value.Type())
		}
	}
	return nil
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

// Wide reports whether -o wide asked for every column of a table.
func (c *Config) Wide() bool { return c != nil && c.Output == OutputWide }

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
	fs.String(KeyStoreApp, adkfile.DefaultApp, "the app of an ADK file store without apps/ (ADK JS, older ADK Python), which keeps no app ($"+EnvVar(KeyStoreApp)+"; config key store_app)")
	fs.String(KeyScratch, "", "root of the per-session scratch workspaces ($"+EnvVar(KeyScratch)+"; default $XDG_DATA_HOME/agentstore/scratch)")
	fs.String(KeyConfig, "", "YAML config file (default $XDG_CONFIG_HOME/agentstore/config.yaml, then /etc/agentstore/config.yaml)")
	fs.StringP(KeyOutput, "o", "", "output format: table or json (default table on a terminal, json otherwise; quota report also takes wide and prometheus)")
	fs.Bool(KeyNoColor, false, "disable colour (also when NO_COLOR is set or stdout is not a terminal)")
	fs.Var(duration.NewValue(new(time.Duration), 0), KeyTimeout, "deadline for the whole command, e.g. 30s, 5m or 1d (0: none)")
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
	_ = cmd.RegisterFlagCompletionFunc(KeyOutput, func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return OutputFormats(c), cobra.ShellCompDirectiveNoFileComp
	})
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
	// SkipFile resolves the settings without reading any config file
	// (flags, environment and defaults only). Commands that must work
	// even with a broken config file (help, version, completion) fall
	// back to it.
	SkipFile bool
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
// status 2); a bad value names where it came from (the flag, the
// environment variable, or the config file and key).
//
// In a config file, "~" and "~/..." in store and scratch mean the home
// directory, and relative paths are relative to the file's directory.
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

	for _, key := range commandKeys {
		if err := v.BindEnv(key, commandEnvVar(key)); err != nil {
			return nil, err
		}
	}
	cfg := &Config{Origins: map[string]Origin{}}
	var file map[string]any
	if !opts.SkipFile {
		path, err := findConfigFile(v, opts)
		if err != nil {
			return nil, err
		}
		if path != "" {
			if file, err = readConfigFile(path); err != nil {
				return nil, err
			}
			if err := v.MergeConfigMap(file); err != nil {
				return nil, configErr("config file %s: %v", path, err)
			}
			cfg.ConfigFile = path
		}
	}
	for _, key := range fileKeys {
		cfg.Origins[key] = origin(opts, key, file, cfg.ConfigFile)
	}
	// bad reports an invalid value of key, naming where it came from.
	bad := func(key, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		switch o := cfg.Origins[key]; o.Kind {
		case OriginFile:
			return configErr("config file %s: key %s: %s; fix the file or override it with --%s", o.Where, key, msg, key)
		case OriginEnv:
			return Usagef("invalid %s value: %s", o.Where, msg)
		}
		return Usagef("invalid --%s value: %s", key, msg)
	}

	var err error
	data := DefaultDataDir()
	if cfg.Store = v.GetString(KeyStore); cfg.Store == "" {
		if data != "" {
			cfg.Store, cfg.StoreDefault = filepath.Join(data, "store"), true
		}
	} else if cfg.Origins[KeyStore].Kind == OriginFile && !hasScheme(cfg.Store) {
		if cfg.Store, err = filePath(cfg.Store, cfg.ConfigFile); err != nil {
			return nil, bad(KeyStore, "%v", err)
		}
	}
	cfg.Layout = strings.TrimSpace(v.GetString(KeyLayout))
	if cfg.StoreApp = v.GetString(KeyStoreApp); cfg.StoreApp == "" {
		cfg.StoreApp = adkfile.DefaultApp
	}
	if err := adkfile.CheckApp(cfg.StoreApp); err != nil {
		return nil, bad(KeyStoreApp, "%v", err)
	}
	if cfg.Scratch = v.GetString(KeyScratch); cfg.Scratch == "" {
		if data != "" {
			cfg.Scratch, cfg.ScratchDefault = filepath.Join(data, "scratch"), true
		}
	} else if cfg.Origins[KeyScratch].Kind == OriginFile {
		if cfg.Scratch, err = filePath(cfg.Scratch, cfg.ConfigFile); err != nil {
			return nil, bad(KeyScratch, "%v", err)
		}
	} else if cfg.Scratch, err = filepath.Abs(cfg.Scratch); err != nil {
		return nil, bad(KeyScratch, "%v", err)
	}
	cfg.Output = v.GetString(KeyOutput)
	switch cfg.Output {
	case "":
		cfg.Output = OutputJSON
		if opts.StdoutTTY {
			cfg.Output = OutputTable
		}
	case OutputTable, OutputJSON, OutputPrometheus, OutputWide:
	default:
		return nil, bad(KeyOutput, "%q is not an output format (want table or json)", cfg.Output)
	}
	if cfg.NoColor, err = cast.ToBoolE(v.Get(KeyNoColor)); err != nil {
		return nil, bad(KeyNoColor, "%q is not true or false", v.Get(KeyNoColor))
	}
	if cfg.Verbose, err = cast.ToBoolE(v.Get(KeyVerbose)); err != nil {
		return nil, bad(KeyVerbose, "%q is not true or false", v.Get(KeyVerbose))
	}
	if cfg.Timeout, err = toDuration(v.Get(KeyTimeout)); err != nil {
		return nil, bad(KeyTimeout, "%v", err)
	}
	if x := v.Get(KeySweepExclude); x == nil {
		cfg.SweepExclude = nil
	} else if cfg.SweepExclude, err = cast.ToStringSliceE(x); err != nil {
		return nil, bad(KeySweepExclude, "%v is not a list of patterns", v.Get(KeySweepExclude))
	}
	if len(cfg.SweepExclude) == 0 {
		cfg.SweepExclude = nil
	}
	for _, p := range cfg.SweepExclude {
		if _, err := filepath.Match(p, ""); err != nil {
			return nil, bad(KeySweepExclude, "%q is not a valid pattern: %v", p, err)
		}
	}
	cfg.LogFormat = v.GetString(KeyLogFormat)
	switch cfg.LogFormat {
	case "":
		cfg.LogFormat = LogText
	case LogText, LogJSON:
	default:
		return nil, bad(KeyLogFormat, "%q is not a log format (want text or json)", cfg.LogFormat)
	}
	for _, key := range commandKeys {
		if v.IsSet(key) {
			if cfg.Values == nil {
				cfg.Values = &KeyValues{}
			}
			val := cast.ToString(v.Get(key))
			if sl, ok := v.Get(key).([]any); ok {
				val = strings.Join(cast.ToStringSlice(sl), ",")
			}
			(*cfg.Values)[key] = val
		}
	}
	for _, key := range commandKeys {
		if v.IsSet(key) {
			if cfg.Values == nil {
				cfg.Values = &KeyValues{}
			}
			val := cast.ToString(v.Get(key))
			if sl, ok := v.Get(key).([]any); ok {
				val = strings.Join(cast.ToStringSlice(sl), ",")
			}
			(*cfg.Values)[key] = val
		}
	}
	return cfg, nil
}

// findConfigFile returns the config file to read: --config or
// AGENTSTORE_CONFIG (which must exist), else the first existing file of
// the default list, else "".
func findConfigFile(v *viper.Viper, opts LoadOptions) (string, error) {
	if path := v.GetString(KeyConfig); path != "" {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return "", configErr("config file %s does not exist; create it or point --config (or %s) at another file", path, EnvVar(KeyConfig))
		}
		return path, nil
	}
	files := opts.DefaultFiles
	if files == nil {
		files = DefaultConfigFiles()
	}
	for _, f := range files {
		_, err := os.Stat(f)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", configErr("config file %s cannot be read (%s); fix its permissions or use --config", f, osReason(err))
		}
	}
	return "", nil
}

// origin says where key's value comes from: a flag given on the command
// line, a non-empty environment variable, the config file, or the default.
func origin(opts LoadOptions, key string, file map[string]any, path string) Origin {
	if fl := opts.Flags.Lookup(key); fl != nil && fl.Changed {
		return Origin{Kind: OriginFlag, Where: "--" + key}
	}
	if os.Getenv(EnvVar(key)) != "" {
		return Origin{Kind: OriginEnv, Where: EnvVar(key)}
	}
	if _, ok := file[key]; ok {
		return Origin{Kind: OriginFile, Where: path}
	}
	return Origin{Kind: OriginDefault}
}

// hasScheme reports whether a store value is a URI (gs://, file://)
// rather than a path.
func hasScheme(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && scheme != "" && !strings.ContainsAny(scheme, `/\`)
}

// filePath resolves a path given in the config file at configFile: "~"
// and "~/..." are below the home directory, relative paths are relative
// to the config file's directory.
func filePath(p, configFile string) (string, error) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%q starts with ~ but the home directory is unknown (HOME is not set)", p)
		}
		return filepath.Join(home, p[1:]), nil
	case strings.HasPrefix(p, "~"):
		return "", fmt.Errorf("%q: only ~ and ~/ are understood, not ~user", p)
	case filepath.IsAbs(p):
		return filepath.Clean(p), nil
	}
	dir, err := filepath.Abs(filepath.Dir(configFile))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, p), nil
}

// osReason is the reason of an operating-system error without the
// operation and path Go puts around it ("permission denied", "is a
// directory").
func osReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// readConfigFile reads and parses a YAML config file, refusing keys it
// does not know.
func readConfigFile(path string) (map[string]any, error) {
	data, err := osutil.ReadSettingsFile(path, MaxConfigBytes)
	if err != nil {
		var nr *osutil.NotRegularError
		switch {
		case errors.As(err, &nr):
			return nil, configErr("config file %s; it was not read: point --config at a regular file", nr.Error())
		case errors.Is(err, osutil.ErrTooLarge):
			return nil, configErr("config file %s is larger than %d bytes; it was not read", path, MaxConfigBytes)
		}
		return nil, configErr("config file %s cannot be read (%s); fix it or point --config elsewhere", path, osReason(err))
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msg = "want lines of key: value"
		}
		return nil, configErr("config file %s is not valid YAML (%s); fix it or point --config elsewhere", path, msg)
	}
	if val, ok := m[storeAppAlias]; ok {
		if _, both := m[KeyStoreApp]; both {
			return nil, configErr("config file %s sets both %s and %s; keep one", path, storeAppAlias, KeyStoreApp)
		}
		m[KeyStoreApp] = val
		delete(m, storeAppAlias)
	}
	var unknown []string
	for k, val := range m {
		if sub, ok := val.(map[string]any); ok && hasCommandKeys(k) {
			for sk := range sub {
				if !slices.Contains(commandKeys, k+"."+sk) {
					unknown = append(unknown, k+"."+sk)
				}
			}
			continue
		}
		if !slices.Contains(fileKeys, k) {
			unknown = append(unknown, k)
			continue
		}
		if val == nil {
			return nil, configErr("config file %s: key %s has no value (a lone ~ is YAML's null; write \"~\" for the home directory)", path, k)
		}
		if _, nested := val.(map[string]any); nested {
			return nil, configErr("config file %s: key %s: want a single value, not a mapping", path, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, configErr("config file %s: unknown key %s (known: %s)",
			path, strings.Join(quoteAll(unknown), ", "), strings.Join(append(slices.Clone(fileKeys), commandKeys...), ", "))
	}
	return m, nil
}

// hasCommandKeys reports whether a command registered keys under the
// config file section name (see RegisterConfigKeys).
func hasCommandKeys(name string) bool {
	for _, k := range commandKeys {
		if strings.HasPrefix(k, name+".") {
			return true
		}
	}
	return false
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// toDuration converts a timeout setting: a time.Duration (from the flag)
// or a string duration.Parse reads ("30s", "5m", "1d"); numbers without a
// unit are refused, and so are negative durations.
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
		if d, err = duration.Parse(t); err != nil {
			return 0, errors.New(artifacts.ReasonOf(err))
		}
	default:
		return 0, fmt.Errorf("%v is not a duration like 30s, 5m or 1d (a unit is required)", x)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s is negative", d)
	}
	return d, nil
}
