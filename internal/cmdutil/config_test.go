package cmdutil

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// clearEnv empties every AGENTSTORE_* variable for the test.
func clearEnv(t *testing.T) {
	for _, k := range []string{KeyStore, KeyStoreApp, KeyScratch, KeyConfig, KeyOutput, KeyNoColor, KeyTimeout, KeyVerbose, KeyLogFormat} {
		t.Setenv(EnvVar(k), "")
	}
}

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// plain returns cfg without its Origins, for comparisons.
func plain(cfg *Config) Config {
	c := *cfg
	c.Origins = nil
	return c
}

func load(t *testing.T, tty bool, files []string, args ...string) (*Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddGlobalFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return LoadConfig(LoadOptions{Flags: fs, StdoutTTY: tty, DefaultFiles: files})
}

func TestEnvVar(t *testing.T) {
	if got := EnvVar(KeyNoColor); got != "AGENTSTORE_NO_COLOR" {
		t.Errorf("EnvVar = %q", got)
	}
	if got := EnvVar(KeyLogFormat); got != "AGENTSTORE_LOG_FORMAT" {
		t.Errorf("EnvVar = %q", got)
	}
}

func TestConfigDefaults(t *testing.T) {
	clearEnv(t)
	t.Setenv("XDG_DATA_HOME", "/data")
	cfg, err := load(t, false, []string{})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Output: OutputJSON, LogFormat: LogText, StoreApp: "default",
		Store: "/data/agentstore/store", StoreDefault: true,
		Scratch: "/data/agentstore/scratch", ScratchDefault: true}
	if got := plain(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("defaults off a terminal = %+v, want %+v", *cfg, want)
	}
	cfg, err = load(t, true, []string{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Output != OutputTable || cfg.JSON() {
		t.Errorf("default output on a terminal = %q", cfg.Output)
	}
}

func TestConfigPrecedence(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "config.yaml"), `
store: /from/file
scratch: /scratch/file
output: table
no-color: true
timeout: 1m
verbose: true
log-format: json
`)
	files := []string{file}

	// file > default
	cfg, err := load(t, false, files)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Store: "/from/file", StoreApp: "default", Scratch: "/scratch/file", Output: OutputTable, NoColor: true,
		Timeout: time.Minute, Verbose: true, LogFormat: LogJSON, ConfigFile: file}
	if got := plain(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("from file = %+v, want %+v", *cfg, want)
	}

	// env > file
	t.Setenv("AGENTSTORE_STORE", "gs://env-bucket")
	t.Setenv("AGENTSTORE_OUTPUT", "json")
	t.Setenv("AGENTSTORE_NO_COLOR", "false")
	t.Setenv("AGENTSTORE_TIMEOUT", "2m")
	t.Setenv("AGENTSTORE_LOG_FORMAT", "text")
	cfg, err = load(t, false, files)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store != "gs://env-bucket" || cfg.Output != OutputJSON || cfg.NoColor || cfg.Timeout != 2*time.Minute || cfg.LogFormat != LogText {
		t.Errorf("env over file = %+v", *cfg)
	}
	if cfg.Scratch != "/scratch/file" || !cfg.Verbose {
		t.Errorf("file values not overridden by env were lost: %+v", *cfg)
	}

	// flag > env
	cfg, err = load(t, false, files, "--store", "/from/flag", "-o", "table", "--no-color", "--timeout", "3s", "--log-format", "json", "--scratch", "rel")
	if err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Getwd()
	if cfg.Store != "/from/flag" || cfg.Output != OutputTable || !cfg.NoColor || cfg.Timeout != 3*time.Second ||
		cfg.LogFormat != LogJSON || cfg.Scratch != filepath.Join(cwd, "rel") {
		t.Errorf("flag over env = %+v", *cfg)
	}
	// Days, in a flag and in the environment, through the one parser.
	if cfg, err = load(t, false, files, "--timeout", "1d12h"); err != nil || cfg.Timeout != 36*time.Hour {
		t.Errorf("--timeout 1d12h: %v, timeout %v", err, cfg.Timeout)
	}
	t.Setenv("AGENTSTORE_TIMEOUT", "2d")
	if cfg, err = load(t, false, files); err != nil || cfg.Timeout != 48*time.Hour {
		t.Errorf("AGENTSTORE_TIMEOUT=2d: %v, timeout %v", err, cfg.Timeout)
	}
	// An explicit flag set to its default value still wins.
	t.Setenv("AGENTSTORE_NO_COLOR", "true")
	cfg, err = load(t, false, files, "--no-color=false")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NoColor {
		t.Error("--no-color=false must beat AGENTSTORE_NO_COLOR=true")
	}
}

func TestConfigFileSearch(t *testing.T) {
	clearEnv(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	xdg := filepath.Join(home, "xdg")
	t.Setenv("XDG_CONFIG_HOME", xdg)
	files := DefaultConfigFiles()
	if files[0] != filepath.Join(xdg, "agentstore", "config.yaml") || files[1] != "/etc/agentstore/config.yaml" {
		t.Errorf("DefaultConfigFiles = %v", files)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	if got := DefaultConfigFiles()[0]; got != filepath.Join(home, ".config", "agentstore", "config.yaml") {
		t.Errorf("without XDG_CONFIG_HOME: %q", got)
	}
	t.Setenv("XDG_CONFIG_HOME", xdg)

	// A missing default file is fine; the first existing one wins.
	second := writeFile(t, filepath.Join(home, "etc.yaml"), "store: /etc-store\n")
	cfg, err := load(t, false, []string{filepath.Join(xdg, "agentstore", "config.yaml"), second})
	if err != nil || cfg.Store != "/etc-store" || cfg.ConfigFile != second {
		t.Fatalf("fallback: %+v, %v", cfg, err)
	}
	writeFile(t, filepath.Join(xdg, "agentstore", "config.yaml"), "store: /xdg-store\n")
	cfg, err = load(t, false, nil) // the real default list, under our XDG_CONFIG_HOME
	if err != nil || cfg.Store != "/xdg-store" {
		t.Fatalf("XDG file: %+v, %v", cfg, err)
	}

	// --config beats the default file, and AGENTSTORE_CONFIG works too.
	explicit := writeFile(t, filepath.Join(home, "explicit.yaml"), "store: /explicit\n")
	cfg, err = load(t, false, nil, "--config", explicit)
	if err != nil || cfg.Store != "/explicit" {
		t.Fatalf("--config: %+v, %v", cfg, err)
	}
	t.Setenv("AGENTSTORE_CONFIG", explicit)
	cfg, err = load(t, false, nil)
	if err != nil || cfg.Store != "/explicit" {
		t.Fatalf("AGENTSTORE_CONFIG: %+v, %v", cfg, err)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, filepath.Join(dir, "bad.yaml"), "store: [unclosed\n")
	unknown := writeFile(t, filepath.Join(dir, "unknown.yaml"), "store: /x\nstroe: /y\nnested:\n  key: 1\n")
	badTimeout := writeFile(t, filepath.Join(dir, "timeout.yaml"), "timeout: 30\n")
	tests := []struct {
		name    string
		env     map[string]string
		files   []string
		args    []string
		wantErr string
		code    string
	}{
		{"missing --config", nil, nil, []string{"--config", filepath.Join(dir, "nope.yaml")}, "does not exist", CodeConfigError},
		{"missing AGENTSTORE_CONFIG", map[string]string{"AGENTSTORE_CONFIG": filepath.Join(dir, "nope.yaml")}, nil, nil, "does not exist", CodeConfigError},
		{"unparsable", nil, nil, []string{"--config", bad}, "bad.yaml", CodeConfigError},
		{"unparsable default", nil, []string{bad}, nil, "bad.yaml", CodeConfigError},
		{"unknown key", nil, nil, []string{"--config", unknown}, `unknown key "nested", "stroe"`, CodeConfigError},
		{"directory as config", nil, nil, []string{"--config", dir}, "config file", CodeConfigError},
		{"bad output flag", nil, []string{}, []string{"-o", "yaml"}, `invalid --output value: "yaml" is not an output format`, CodeUsage},
		{"bad output env", map[string]string{"AGENTSTORE_OUTPUT": "xml"}, []string{}, nil, `invalid AGENTSTORE_OUTPUT value: "xml" is not an output format`, CodeUsage},
		{"bad timeout env", map[string]string{"AGENTSTORE_TIMEOUT": "soon"}, []string{}, nil, `"soon" is not a duration`, CodeUsage},
		{"timeout without unit", nil, nil, []string{"--config", badTimeout}, "timeout.yaml: key timeout: 30 is not a duration like 30s, 5m or 1d (a unit is required); fix the file or override it with --timeout", CodeConfigError},
		{"negative timeout", map[string]string{"AGENTSTORE_TIMEOUT": "-1s"}, []string{}, nil, "(negative)", CodeUsage},
		{"unitless timeout env", map[string]string{"AGENTSTORE_TIMEOUT": "1"}, []string{}, nil, `"1" is not a duration (a unit is required)`, CodeUsage},
		{"bad bool env", map[string]string{"AGENTSTORE_VERBOSE": "loud"}, []string{}, nil, `invalid AGENTSTORE_VERBOSE value: "loud" is not true or false`, CodeUsage},
		{"bad log format", nil, []string{}, []string{"--log-format", "xml"}, `invalid --log-format value: "xml" is not a log format`, CodeUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, err := load(t, false, tt.files, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if ExitCode(err) != ExitUsage || ErrorCode(err) != tt.code {
				t.Errorf("exit %d code %q, want 2 %q", ExitCode(err), ErrorCode(err), tt.code)
			}
		})
	}
}

func TestConfigFilePathsAndOrigins(t *testing.T) {
	clearEnv(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := filepath.Join(t.TempDir(), "etc")
	tests := []struct {
		name                   string
		yaml                   string
		wantStore, wantScratch string
	}{
		{"relative to the file", "store: data/store\nscratch: ../scratch\n", filepath.Join(dir, "data/store"), filepath.Join(filepath.Dir(dir), "scratch")},
		{"tilde", "store: ~/s\nscratch: \"~\"\n", filepath.Join(home, "s"), home},
		{"absolute", "store: /abs/s\nscratch: /abs/x/../w\n", "/abs/s", "/abs/w"},
		{"uri untouched", "store: gs://bucket/p\n", "gs://bucket/p", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, filepath.Join(dir, "config.yaml"), tt.yaml)
			cfg, err := load(t, false, []string{file})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Store != tt.wantStore || tt.wantScratch != "" && cfg.Scratch != tt.wantScratch {
				t.Errorf("store %q scratch %q, want %q %q", cfg.Store, cfg.Scratch, tt.wantStore, tt.wantScratch)
			}
			if o := cfg.Origin(KeyStore); o.Kind != OriginFile || o.Where != file || o.String() != "config file "+file {
				t.Errorf("store origin %+v", o)
			}
			if o := cfg.Origin(KeyTimeout); o.Kind != OriginDefault || o.String() != "default" {
				t.Errorf("timeout origin %+v", o)
			}
		})
	}
	// Flags and the environment stay relative to the working directory.
	file := writeFile(t, filepath.Join(dir, "config.yaml"), "scratch: data\n")
	t.Setenv("AGENTSTORE_OUTPUT", "table")
	cfg, err := load(t, false, []string{file}, "--scratch", "rel")
	if err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Getwd()
	if cfg.Scratch != filepath.Join(cwd, "rel") {
		t.Errorf("--scratch rel = %q", cfg.Scratch)
	}
	if o := cfg.Origin(KeyScratch); o.String() != "flag --scratch" {
		t.Errorf("scratch origin %v", o)
	}
	if o := cfg.Origin(KeyOutput); o.String() != "environment AGENTSTORE_OUTPUT" {
		t.Errorf("output origin %v", o)
	}
	// ~user is refused, naming the file and key.
	writeFile(t, file, "store: ~bob/s\n")
	if _, err := load(t, false, []string{file}); err == nil || !strings.Contains(err.Error(), "key store: \"~bob/s\": only ~ and ~/") || ErrorCode(err) != CodeConfigError {
		t.Errorf("~bob: %v", err)
	}
}

func TestConfigFileMessages(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	tests := []struct{ yaml, want string }{
		{"timeout: [\n", "is not valid YAML (line 1: did not find expected node content); fix it"},
		{"just text\n", "is not valid YAML (want lines of key: value)"},
		{"store:\n  nested: 1\n", "key store: want a single value, not a mapping"},
		{"no-color: maybe\n", `key no-color: "maybe" is not true or false; fix the file or override it with --no-color`},
		{"output: xml\n", `key output: "xml" is not an output format`},
		{"scratch: ~\n", `key scratch has no value (a lone ~ is YAML's null`},
	}
	for _, tt := range tests {
		file := writeFile(t, filepath.Join(dir, "c.yaml"), tt.yaml)
		_, err := load(t, false, []string{file})
		if err == nil || !strings.Contains(err.Error(), "config file "+file) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.yaml, err, tt.want)
		}
		if err != nil && (strings.Contains(err.Error(), "While parsing") || strings.Contains(err.Error(), ": yaml:")) {
			t.Errorf("%q: internal prefix in %v", tt.yaml, err)
		}
	}
}

// TestConfigStoreApp: --store-app, AGENTSTORE_STORE_APP and the config
// keys store-app and store_app, in that precedence; a value that cannot be
// a directory name is refused, naming where it came from.
func TestConfigStoreApp(t *testing.T) {
	tests := []struct {
		name    string
		file    string // config file body, "" for none
		env     string
		args    []string
		want    string
		wantErr string // substring of the error, "" for none
	}{
		{name: "default", want: "default"},
		{name: "file store_app", file: "store_app: web\n", want: "web"},
		{name: "file store-app", file: "store-app: web\n", want: "web"},
		{name: "env over file", file: "store_app: web\n", env: "cli", want: "cli"},
		{name: "flag over env", env: "cli", args: []string{"--store-app", "flag"}, want: "flag"},
		{name: "both spellings", file: "store_app: a\nstore-app: b\n", wantErr: "sets both store_app and store-app"},
		{name: "slash in flag", args: []string{"--store-app", "a/b"}, wantErr: "invalid --store-app value"},
		{name: "dot-dot in file", file: "store_app: ..\n", wantErr: "key store-app"},
		{name: "slash in env", env: "x/y", wantErr: "invalid AGENTSTORE_STORE_APP value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			var files []string
			if tt.file != "" {
				files = []string{writeFile(t, filepath.Join(t.TempDir(), "config.yaml"), tt.file)}
			}
			if tt.env != "" {
				t.Setenv(EnvVar(KeyStoreApp), tt.env)
			}
			cfg, err := load(t, false, files, tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.StoreApp != tt.want {
				t.Errorf("StoreApp %q, want %q", cfg.StoreApp, tt.want)
			}
		})
	}
}
