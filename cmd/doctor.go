package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	fscmd "github.com/agentstore/agentstore/cmd/fs"
	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/lock"
	"github.com/agentstore/agentstore/internal/output"
	"github.com/agentstore/agentstore/pkg/sweep"
)

// DoctorSetting is one resolved setting and where its value came from.
type DoctorSetting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Origin string `json:"origin"`
	Where  string `json:"where,omitempty"`
}

// DoctorConfigFile is one config file of the search list.
type DoctorConfigFile struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	Read   bool   `json:"read"`
	Error  string `json:"error,omitempty"`
}

// DoctorPlace is the store or the scratch root as found on disk.
type DoctorPlace struct {
	Location string `json:"location"`
	Default  bool   `json:"default"`
	// State is "ok", "missing", "not_a_directory", "unreadable" or
	// "not_checked" (a gs:// store: doctor does not contact the bucket).
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
	// Layout is what the store's directory holds ("erlang-fs" when it has
	// v1/); empty for the scratch root.
	Layout string `json:"layout,omitempty"`
	// Lock is the maintenance lock found there, if any.
	Lock *lock.State `json:"lock,omitempty"`
}

// DoctorResult is the JSON output of "agentstore doctor".
type DoctorResult struct {
	Version     string             `json:"version"`
	ConfigFiles []DoctorConfigFile `json:"config_files"`
	Settings    []DoctorSetting    `json:"settings"`
	Store       DoctorPlace        `json:"store"`
	Scratch     DoctorPlace        `json:"scratch"`
}

func newDoctorCmd(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show the effective settings, where each came from, and what they point at",
		Long: `Show what agentstore would use, and why: the config files searched and the
one read, every global setting with its origin (flag, environment
variable, config file or default), the store and the scratch root with
whether they exist and what they hold, and any maintenance lock found in
them. It only reads: it creates nothing, not even the default store, and
does not contact a gs:// bucket.

A config file that cannot be used is reported (exit status 3) instead of
stopping doctor, which then shows the settings without it.

JSON: {"version", "config_files": [{"path", "exists", "read", "error"}],
"settings": [{"key", "value", "origin", "where"}], "store": {"location",
"default", "state", "detail", "layout", "lock"}, "scratch": {...}}`,
		Example: `  agentstore doctor
  AGENTSTORE_STORE=/var/lib/agentstore agentstore doctor -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDoctor(f, cmd)
		},
	}
	cmdutil.SetExitStatusNote(cmd, `3  the config file could not be used (it is named with the reason)`)
	return cmd
}

func runDoctor(f *cmdutil.Factory, cmd *cobra.Command) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	res := DoctorResult{Version: BuildVersion().Version}
	files := cmdutil.DefaultConfigFiles()
	if fl := cmd.Flags().Lookup(cmdutil.KeyConfig); fl != nil && fl.Changed {
		files = []string{fl.Value.String()}
	} else if v := os.Getenv(cmdutil.EnvVar(cmdutil.KeyConfig)); v != "" {
		files = []string{v}
	}
	for _, p := range files {
		cf := DoctorConfigFile{Path: p, Read: p == cfg.ConfigFile}
		if _, err := os.Stat(p); err == nil {
			cf.Exists = true
		}
		if cfg.FileError != nil && !cf.Read && (cf.Exists || len(files) == 1) && !earlierFound(res.ConfigFiles) {
			cf.Error = cfg.FileError.Error()
		}
		res.ConfigFiles = append(res.ConfigFiles, cf)
	}
	values := map[string]string{
		cmdutil.KeyStore: cfg.Store, cmdutil.KeyScratch: cfg.Scratch, cmdutil.KeyOutput: cfg.Output,
		cmdutil.KeyNoColor: strconv.FormatBool(cfg.NoColor), cmdutil.KeyTimeout: cfg.Timeout.String(),
		cmdutil.KeyVerbose: strconv.FormatBool(cfg.Verbose), cmdutil.KeyLogFormat: cfg.LogFormat,
	}
	for _, k := range []string{cmdutil.KeyStore, cmdutil.KeyScratch, cmdutil.KeyOutput, cmdutil.KeyNoColor, cmdutil.KeyTimeout, cmdutil.KeyVerbose, cmdutil.KeyLogFormat} {
		o := cfg.Origin(k)
		res.Settings = append(res.Settings, DoctorSetting{Key: k, Value: values[k], Origin: o.Kind, Where: o.Where})
	}
	res.Store = DoctorPlace{Location: cfg.Store, Default: cfg.StoreDefault}
	if u, err := cmdutil.ParseStoreURI(cfg.Store); err != nil {
		res.Store.State, res.Store.Detail = "invalid", err.Error()
	} else if u.Scheme == cmdutil.SchemeFile {
		res.Store.Location = u.String()
		res.Store = inspectDir(res.Store, u.Root, fscmd.LockFile)
		if res.Store.State == "ok" {
			if fi, err := os.Stat(filepath.Join(u.Root, "v1")); err == nil && fi.IsDir() {
				res.Store.Layout = "erlang-fs"
			} else {
				res.Store.Detail = "no v1/ directory yet: an empty store"
			}
		}
	} else {
		res.Store.Location, res.Store.State, res.Store.Detail = u.String(), "not_checked", "doctor does not contact the bucket"
	}
	res.Scratch = inspectDir(DoctorPlace{Location: cfg.Scratch, Default: cfg.ScratchDefault}, cfg.Scratch, sweep.LockFile)

	if cfg.JSON() {
		if err := output.JSON(f.IO.Out, res); err != nil {
			return err
		}
	} else {
		printDoctor(f, res)
	}
	if cfg.FileError != nil {
		return &cmdutil.ProblemsFound{Msg: "the config file could not be used: " + cfg.FileError.Error()}
	}
	return nil
}

// earlierFound reports whether a config file before this one exists
// (and so was the one read, or the one that failed).
func earlierFound(files []DoctorConfigFile) bool {
	for _, f := range files {
		if f.Read || f.Exists {
			return true
		}
	}
	return false
}

// inspectDir fills in what a directory setting points at, reading only.
func inspectDir(p DoctorPlace, dir, lockName string) DoctorPlace {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.State, p.Detail = "missing", "does not exist"
		if p.Default {
			p.Detail += " (commands that write create it on first use)"
		}
		return p
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		p.State, p.Detail = "unreadable", err.Error()
		return p
	case !fi.IsDir():
		p.State, p.Detail = "not_a_directory", "is not a directory"
		return p
	}
	p.State = "ok"
	if st, err := lock.Inspect(filepath.Join(dir, lockName), lock.Options{}); err == nil && st.Exists {
		p.Lock = &st
	}
	return p
}

func printDoctor(f *cmdutil.Factory, res DoctorResult) {
	w := f.IO.Out
	st := output.NewStyles(f.IO)
	fmt.Fprintf(w, "%s %s\n\n", st.Bold("agentstore"), res.Version)
	fmt.Fprintln(w, st.Bold("Config files"))
	for _, c := range res.ConfigFiles {
		state := "not found"
		switch {
		case c.Error != "":
			state = st.Bad("ignored: " + c.Error)
		case c.Read:
			state = "read"
		case c.Exists:
			state = "not read (an earlier file was)"
		}
		fmt.Fprintf(w, "  %s: %s\n", c.Path, state)
	}
	fmt.Fprintln(w)
	t := output.NewTable(f.IO, "SETTING", "VALUE", "FROM")
	t.NoTruncate(0, 2)
	for _, s := range res.Settings {
		from := s.Origin
		switch s.Origin {
		case cmdutil.OriginFlag:
			from = "flag " + s.Where
		case cmdutil.OriginEnv:
			from = "environment " + s.Where
		case cmdutil.OriginFile:
			from = "config file " + s.Where
		}
		t.Row(s.Key, s.Value, from)
	}
	_ = t.Render()
	fmt.Fprintln(w)
	place := func(title string, p DoctorPlace) {
		fmt.Fprintf(w, "%s %s\n", st.Bold(title), p.Location)
		state := p.State
		if p.Detail != "" {
			state += ": " + p.Detail
		}
		if p.Layout != "" {
			state += ", layout " + p.Layout
		}
		fmt.Fprintf(w, "  %s\n", state)
		if l := p.Lock; l != nil {
			stale := "held"
			if l.Stale {
				stale = "stale"
			}
			fmt.Fprintf(w, "  lock %s (%s: %s); see agentstore unlock\n", l.Path, stale, l.Why)
		}
	}
	place("Store", res.Store)
	place("Scratch", res.Scratch)
}
