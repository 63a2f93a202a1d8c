package quota

import (
	"io"

	"github.com/agentstore/agentstore/internal/promfile"
)

// DefaultPrometheusTop is the number of scope and workspace rows that get
// their own series when PromOptions.Top is zero: the fullest ones. It
// bounds the label cardinality of a store with many scopes.
const DefaultPrometheusTop = 20

// MetricPrefix starts the name of every metric a report writes.
const MetricPrefix = "agentstore_quota_"

// PromOptions shape the Prometheus form of a report.
type PromOptions struct {
	// Store labels every store series (store="..."): the store URI.
	Store string
	// Top is the number of fullest scopes and workspaces that get series
	// of their own (0: DefaultPrometheusTop; negative: all of them).
	Top int
}

// metrics returns the report as metric families for the textfile
// collector: store totals and headroom, then per-scope series for the Top
// fullest scopes (labels store, scope_hash, kind, app, user, session), and
// with a scratch root the workspace limits, totals and per-workspace
// series for the Top fullest workspaces (labels scratch, dir, app, user,
// session). Ratios are 0..1, as Prometheus conventions want.
func (r *Report) metrics(opts PromOptions) []promfile.Metric {
	top := opts.Top
	if top == 0 {
		top = DefaultPrometheusTop
	}
	rr := r.Top(top)
	st := promfile.Label{Name: "store", Value: opts.Store}
	g := func(name, help string, v float64, labels ...promfile.Label) promfile.Metric {
		return promfile.Gauge(MetricPrefix+name, help, v, labels...)
	}
	ms := []promfile.Metric{
		g("store_scopes", "Scope capacity used: the larger of the scope slots and scope directories ever taken.", float64(r.Store.Scopes), st),
		g("store_scope_capacity", "Scopes the store can ever hold (max_scan_entries/2).", float64(r.Store.ScopeCapacity), st),
		g("store_scope_usage_ratio", "Store scope capacity used, 0 to 1.", r.Store.UsagePercent/100, st),
		g("store_name_capacity", "Names a scope can ever hold (max_scan_entries/2).", float64(r.Store.NameCapacity), st),
		g("store_reservation_capacity", "Versions a name can ever reserve (max_scan_entries/3).", float64(r.Store.ReservationCapacity), st),
		g("store_names", "Names with at least one published version, in all scopes.", float64(r.Store.Names), st),
		g("store_versions", "Published versions in the store.", float64(r.Store.Versions), st),
		g("store_bytes", "Payload bytes of the published versions in the store.", float64(r.Store.Bytes), st),
		g("store_problems", "Records the walk found broken.", float64(r.Store.Problems), st),
		g("store_unreadable", "Versions the walk could not read (permission or I/O errors).", float64(r.Store.Unreadable), st),
		g("warnings", "Rows (store, scopes, workspaces) at or above the warn threshold.", float64(r.Warnings), st),
		g("over_fail_threshold", "Rows (store, scopes, workspaces) above the --fail-over threshold.", float64(r.Over), st),
		g("report_timestamp_seconds", "Unix time the report was made.", float64(r.GeneratedAt.UnixMilli())/1000, st),
	}
	if len(rr.Scopes) > 0 {
		fam := func(name, help string, val func(ScopeUsage) float64, extra func(ScopeUsage) []promfile.Label) promfile.Metric {
			m := promfile.Metric{Name: MetricPrefix + name, Help: help, Type: promfile.TypeGauge}
			for _, s := range rr.Scopes {
				labels := scopeLabels(st, s)
				if extra != nil {
					labels = append(labels, extra(s)...)
				}
				m.Samples = append(m.Samples, promfile.Sample{Labels: labels, Value: val(s)})
			}
			return m
		}
		ms = append(ms,
			fam("scope_names", "Names with at least one published version (the fullest scopes only).", func(s ScopeUsage) float64 { return float64(s.Names) }, nil),
			fam("scope_versions", "Published versions of the scope.", func(s ScopeUsage) float64 { return float64(s.Versions) }, nil),
			fam("scope_bytes", "Payload bytes of the scope's published versions.", func(s ScopeUsage) float64 { return float64(s.Bytes) }, nil),
			fam("scope_largest_bytes", "Size of the scope's largest published version.", func(s ScopeUsage) float64 {
				if s.Largest == nil {
					return 0
				}
				return float64(s.Largest.Size)
			}, nil),
			fam("scope_name_slots", "Name capacity used: every name the scope ever held.", func(s ScopeUsage) float64 { return float64(s.NameSlots) }, nil),
			fam("scope_fullest_name_reservations", "Reservations of the scope's fullest name.", func(s ScopeUsage) float64 {
				if s.FullestName == nil {
					return 0
				}
				return float64(s.FullestName.Reservations)
			}, nil),
			fam("scope_usage_ratio", "Usage of the scope's binding limit (name slots or its fullest name's reservations), 0 to 1.",
				func(s ScopeUsage) float64 { return s.pct / 100 },
				func(s ScopeUsage) []promfile.Label { return []promfile.Label{{Name: "limit", Value: s.BindingLimit}} }),
		)
	}
	if r.Scratch != "" && r.WorkspaceLimits != nil {
		sc := promfile.Label{Name: "scratch", Value: r.Scratch}
		var bytes, files float64
		for _, w := range r.Workspaces {
			bytes += float64(w.Bytes)
			files += float64(w.Files)
		}
		ms = append(ms,
			g("workspaces", "Session workspaces under the scratch root.", float64(r.WorkspacesTotal), sc),
			g("workspaces_bytes", "Bytes held by all the session workspaces.", bytes, sc),
			g("workspaces_files", "Files held by all the session workspaces.", files, sc),
			g("workspace_max_bytes", "Bytes a workspace may hold.", float64(r.WorkspaceLimits.MaxBytes), sc),
			g("workspace_max_files", "Files a workspace may hold.", float64(r.WorkspaceLimits.MaxFiles), sc),
		)
		if len(rr.Workspaces) > 0 {
			fam := func(name, help string, val func(WorkspaceUsage) float64, withLimit bool) promfile.Metric {
				m := promfile.Metric{Name: MetricPrefix + name, Help: help, Type: promfile.TypeGauge}
				for _, w := range rr.Workspaces {
					labels := workspaceLabels(sc, w)
					if withLimit {
						labels = append(labels, promfile.Label{Name: "limit", Value: w.BindingLimit})
					}
					m.Samples = append(m.Samples, promfile.Sample{Labels: labels, Value: val(w)})
				}
				return m
			}
			ms = append(ms,
				fam("workspace_bytes", "Bytes the workspace holds (the fullest workspaces only).", func(w WorkspaceUsage) float64 { return float64(w.Bytes) }, false),
				fam("workspace_files", "Files the workspace holds.", func(w WorkspaceUsage) float64 { return float64(w.Files) }, false),
				fam("workspace_idle_seconds", "Time since the session last used the workspace.", func(w WorkspaceUsage) float64 { return w.Idle.Seconds() }, false),
				fam("workspace_usage_ratio", "Usage of the workspace's binding limit (bytes or files), 0 to 1.", func(w WorkspaceUsage) float64 { return w.pct / 100 }, true),
			)
		}
	}
	return ms
}

func scopeLabels(store promfile.Label, s ScopeUsage) []promfile.Label {
	labels := []promfile.Label{store, {Name: "scope_hash", Value: s.Hash}}
	if s.Scope != nil {
		labels = append(labels,
			promfile.Label{Name: "kind", Value: string(s.Scope.Kind)},
			promfile.Label{Name: "app", Value: s.Scope.App},
			promfile.Label{Name: "user", Value: s.Scope.User},
			promfile.Label{Name: "session", Value: s.Scope.Session})
	}
	return labels
}

func workspaceLabels(scratch promfile.Label, w WorkspaceUsage) []promfile.Label {
	labels := []promfile.Label{scratch, {Name: "dir", Value: w.Dir}}
	if w.Scope != nil {
		labels = append(labels,
			promfile.Label{Name: "app", Value: w.Scope.App},
			promfile.Label{Name: "user", Value: w.Scope.User},
			promfile.Label{Name: "session", Value: w.Scope.Session})
	}
	return labels
}

// WritePrometheus writes the report in the Prometheus text format to w.
func (r *Report) WritePrometheus(w io.Writer, opts PromOptions) error {
	b, err := promfile.Format(r.metrics(opts))
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// WritePrometheusFile replaces path with the report in the Prometheus text
// format, atomically (a temporary file in the same directory, fsync,
// rename, fsync of the directory), for the node exporter's textfile
// collector. It returns the number of series written.
func (r *Report) WritePrometheusFile(path string, opts PromOptions) (int, error) {
	ms := r.metrics(opts)
	n := 0
	for _, m := range ms {
		n += len(m.Samples)
	}
	return n, promfile.WriteFile(path, ms)
}
