package dashboard_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagehand-dev/stagehand/internal/dashboard"
)

func TestSeriesReadsPanelsAndVariables(t *testing.T) {
	raw := []byte(`{"panels":[
	  {"targets":[{"expr":"sum(rate(stagehand_hooks_total{result=\"failed\"}[5m])) / sum(rate(stagehand_hooks_total[5m]))"}]},
	  {"targets":[{"expr":"histogram_quantile(0.9, sum by (le) (rate(workqueue_queue_duration_seconds_bucket[5m])))"},
	              {"expr":"up{job=\"stagehand\"}"}]}],
	  "templating":{"list":[{"query":"label_values(stagehand_leader, pod)"},{"query":{"refId":"x"}}]}}`)
	series, err := dashboard.Series(raw)
	require.NoError(t, err)
	assert.Equal(t, []string{"stagehand_hooks_total", "stagehand_leader", "workqueue_queue_duration_seconds_bucket"}, series,
		"each controller series once, sorted; other series (up) and label names left out")

	_, err = dashboard.Series([]byte(`{"panels": [`))
	assert.ErrorContains(t, err, "reading the dashboard")
}
