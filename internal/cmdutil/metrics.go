package cmdutil

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstore/agentstore/internal/iostreams"
	"github.com/agentstore/agentstore/internal/promfile"
)

// RunMetrics is what a maintenance run (fs repair, fs verify, artifacts
// prune) reports in its --metrics-file: the common gauges (last success,
// last run, duration, exit code) and the run's own values, every series
// labelled with the store.
type RunMetrics struct {
	// Prefix begins every metric name ("agentstore_fs_repair").
	Prefix string
	// Store is the store's canonical URI, the "store" label.
	Store string
	// Start and End bound the run.
	Start, End time.Time
	// ExitCode is the run's exit status; FinishMetrics sets it.
	ExitCode int
	// Values are the run's own metrics, named without Prefix and without
	// the store label.
	Values []promfile.Metric
}

// Write replaces path with the run's metrics, atomically. A failed run
// keeps the previous file's last-success timestamp.
func (m RunMetrics) Write(path string) error {
	label := promfile.Label{Name: "store", Value: m.Store}
	lastSuccess := m.Prefix + "_last_success_timestamp_seconds"
	success := float64(0)
	if m.ExitCode == ExitOK || m.ExitCode == ExitProblems {
		success = float64(m.End.UnixMilli()) / 1000
	} else if v, ok := promfile.ReadValue(path, promfile.Series(lastSuccess, label)); ok {
		success = v
	}
	ms := []promfile.Metric{
		promfile.Gauge(lastSuccess, "Unix time of the end of the last run that completed (exit status 0 or 3).", success, label),
		promfile.Gauge(m.Prefix+"_last_run_timestamp_seconds", "Unix time of the end of the last run.", float64(m.End.UnixMilli())/1000, label),
		promfile.Gauge(m.Prefix+"_duration_seconds", "Duration of the last run.", m.End.Sub(m.Start).Seconds(), label),
		promfile.Gauge(m.Prefix+"_exit_code", "Exit status of the last run (0 ok, 3 problems found, 4 confirmation required, 5 locked, 1 failed).", float64(m.ExitCode), label),
	}
	for _, v := range m.Values {
		v.Name = m.Prefix + "_" + v.Name
		for i := range v.Samples {
			v.Samples[i].Labels = append(v.Samples[i].Labels, label)
		}
		ms = append(ms, v)
	}
	return promfile.WriteFile(path, ms)
}

// FinishMetrics writes the metrics file, when path is not empty, after a
// run that ended with err; a failure to write it is reported (on ios's
// stderr) unless the run already failed. It returns the run's error, or
// the write's.
func FinishMetrics(ios *iostreams.IOStreams, path string, m RunMetrics, err error) error {
	if path == "" {
		return err
	}
	m.ExitCode = ExitCode(err)
	if werr := m.Write(path); werr != nil {
		if err == nil {
			return fmt.Errorf("writing metrics: %w", werr)
		}
		fmt.Fprintf(ios.ErrOut, "agentstore: writing metrics: %v\n", werr)
	}
	return err
}

// CheckMetricsPath refuses a --metrics-file whose directory does not
// exist, before the run does any work (a usage error).
func CheckMetricsPath(path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return Usagef("--metrics-file %s: directory %s does not exist", path, filepath.Dir(path))
	}
	return nil
}
