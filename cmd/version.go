package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/agentstore/agentstore/internal/cmdutil"
	"github.com/agentstore/agentstore/internal/output"
)

// version is the release version, set at link time with
// -ldflags '-X github.com/agentstore/agentstore/cmd.version=v1.2.3'. When
// empty, the module version from the build information is used.
var version = ""

// VersionInfo describes the running binary; its JSON form is the output of
// "agentstore version -o json".
type VersionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision"`
	Time     string `json:"time"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
}

// BuildVersion returns the version of the running binary: the link-time
// version (or the module version, or "devel"), and the VCS revision, commit
// time and modified flag recorded by the Go toolchain.
func BuildVersion() VersionInfo {
	v := VersionInfo{Version: version, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			v.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	return v
}

func newVersionCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of agentstore",
		Long: `Print the version of agentstore with the VCS revision and commit time it was
built from. With -o json: {"version","revision","time","modified","go"}.`,
		Example: `  agentstore version
  agentstore version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.Config()
			if err != nil {
				return err
			}
			v := BuildVersion()
			if cfg.JSON() {
				return output.JSON(f.IO.Out, v)
			}
			w := f.IO.Out
			fmt.Fprintf(w, "agentstore %s\n", v.Version)
			if v.Revision != "" {
				mod := ""
				if v.Modified {
					mod = " (modified)"
				}
				fmt.Fprintf(w, "revision: %s%s\n", v.Revision, mod)
			}
			if v.Time != "" {
				fmt.Fprintf(w, "time:     %s\n", v.Time)
			}
			fmt.Fprintf(w, "go:       %s\n", v.Go)
			return nil
		},
	}
}
