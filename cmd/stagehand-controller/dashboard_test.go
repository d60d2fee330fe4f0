package main

import (
	"os"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/internal/dashboard"
)

// dashboardSeries lists every series that the shipped dashboard's queries read.
func dashboardSeries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", dashboard.Path))
	require.NoError(t, err)
	series, err := dashboard.Series(raw)
	require.NoError(t, err)
	return series
}

// exported lists the series names the controller's registry gathers, with a histogram's
// _bucket, _sum and _count.
func exported(t *testing.T) []string {
	t.Helper()
	p := processMetrics()
	exercise(t, p.metrics, p.leader, 0, 10)
	families, err := p.reg.Gather()
	require.NoError(t, err)
	var out []string
	for _, f := range families {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			out = append(out, f.GetName()+"_bucket", f.GetName()+"_sum", f.GetName()+"_count")
		case dto.MetricType_SUMMARY:
			out = append(out, f.GetName()+"_sum", f.GetName()+"_count", f.GetName())
		default:
			out = append(out, f.GetName())
		}
	}
	return out
}

// Every series the Grafana dashboard queries is one the controller exports, so that no
// panel stays empty for a name that does not exist. The e2e suite checks the same
// against a live controller after a rollout (e2e/metrics_test.go).
func TestDashboardQueriesOnlyExportedSeries(t *testing.T) {
	queried := dashboardSeries(t)
	require.NotEmpty(t, queried)
	have := exported(t)
	for _, name := range queried {
		assert.Contains(t, have, name, "the dashboard queries %s, which the controller does not export", name)
	}
	for _, want := range []string{"stagehand_leader", "stagehand_rollouts", "stagehand_rollout_duration_seconds_bucket",
		"stagehand_hooks_total", "stagehand_executionhook_executions_total", "stagehand_defer_runs_total",
		"workqueue_depth", "workqueue_queue_duration_seconds_bucket", "rest_client_requests_total",
		"rest_client_rate_limiter_duration_seconds_bucket"} {
		assert.Contains(t, queried, want, "the dashboard shows %s", want)
	}
}
