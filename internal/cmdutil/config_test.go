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
	for _, k := range []string{KeyStore, KeyScratch, KeyConfig, KeyOutput, KeyNoColor, KeyTimeout, KeyVerbose, KeyLogFormat} {
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
	want := Config{Output: OutputJSON, LogFormat: LogText,
		Store: "/data/agentstore/store", StoreDefault: true,
		Scratch: "/data/agentstore/scratch", ScratchDefault: true}
	if !reflect.DeepEqual(*cfg, want) {
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
	want := Config{Store: "/from/file", Scratch: "/scratch/file", Output: OutputTable, NoColor: true,
		Timeout: time.Minute, Verbose: true, LogFormat: LogJSON, ConfigFile: file}
	if !reflect.DeepEqual(*cfg, want) {
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
		{"unknown key", nil, nil, []string{"--config", unknown}, `unknown key "nested.key", "stroe"`, CodeConfigError},
		{"directory as config", nil, nil, []string{"--config", dir}, "config file", CodeConfigError},
		{"bad output flag", nil, []string{}, []string{"-o", "yaml"}, `invalid output format "yaml"`, CodeUsage},
		{"bad output env", map[string]string{"AGENTSTORE_OUTPUT": "xml"}, []string{}, nil, `invalid output format "xml"`, CodeUsage},
		{"bad timeout env", map[string]string{"AGENTSTORE_TIMEOUT": "soon"}, []string{}, nil, `"soon" is not a duration`, CodeUsage},
		{"timeout without unit", nil, nil, []string{"--config", badTimeout}, "a unit is required", CodeUsage},
		{"negative timeout", nil, []string{}, []string{"--timeout", "-1s"}, "negative", CodeUsage},
		{"bad bool env", map[string]string{"AGENTSTORE_VERBOSE": "loud"}, []string{}, nil, `invalid --verbose value "loud"`, CodeUsage},
		{"bad log format", nil, []string{}, []string{"--log-format", "xml"}, `invalid log format "xml"`, CodeUsage},
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
